package fakekube

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeepCopyIsAJSONRoundTrip holds the store's copy to what a round trip through JSON (as a
// request's body is decoded) makes of a value, and to a copy that shares nothing.
func TestDeepCopyIsAJSONRoundTrip(t *testing.T) {
	for name, v := range map[string]any{
		"decoded JSON": map[string]any{"a": []any{"x", json.Number("1.50"), true, nil, map[string]any{"b": json.Number("-3")}}},
		"Go values a caller stored": map[string]any{"int": 7, "float": 2.5, "strings": []string{"a", "b"},
			"nested": map[string]any{"labels": map[string]string{"k": "v"}, "n": int64(1) << 40}},
		"a string alone": "s",
		"null":           nil,
	} {
		t.Run(name, func(t *testing.T) {
			got := deepCopyValue(v)
			assert.Equal(t, jsonCopy(v), got)
			if m, ok := got.(map[string]any); ok {
				m["added"] = "x"
				_, leaked := v.(map[string]any)["added"]
				assert.False(t, leaked, "the copy shares its map with the original")
			}
		})
	}
	orig := map[string]any{"list": []any{map[string]any{"k": "v"}}}
	cp := deepCopy(orig)
	cp["list"].([]any)[0].(map[string]any)["k"] = "changed"
	assert.Equal(t, "v", orig["list"].([]any)[0].(map[string]any)["k"], "the copy shares a nested map")
}

func TestDiscardEventsKeepsNone(t *testing.T) {
	r := Resource{Group: "test.openstack-sync.io", Version: "v1alpha1", Plural: "widgets", Kind: "Widget", StatusSubresource: true}
	srv, err := Start(r)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	_, err = srv.Create(r, "ns", Object{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"n": 1}})
	require.NoError(t, err)
	_, end := srv.Events(0)
	require.Equal(t, 1, end)
	srv.DiscardEvents()
	_, err = srv.Create(r, "ns", Object{"metadata": map[string]any{"name": "b"}})
	require.NoError(t, err)
	_, err = srv.Patch(r, "ns", "a", "", MergePatchType, []byte(`{"spec": {"n": 2}}`))
	require.NoError(t, err)
	events, end := srv.Events(0)
	assert.Empty(t, events)
	assert.Zero(t, end)
	got, err := srv.Get(r, "ns", "a")
	require.NoError(t, err)
	assert.Equal(t, json.Number("2"), got["spec"].(map[string]any)["n"], "the objects are stored as before")
}
