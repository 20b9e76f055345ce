package resource

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	require.NoError(t, d.Decode(&v))
	return v
}

func TestParse(t *testing.T) {
	obj := decode(t, `{"apiVersion":"g/v1","kind":"Widget","metadata":{"name":"a","namespace":"ns","uid":"u1",
		"resourceVersion":"7","generation":3,"finalizers":["x/y","openstack-sync.io/finalizer"],
		"deletionTimestamp":"2026-01-01T00:00:00Z"},
		"spec":{"name":"alpha","size":2,"cloudCredentialsRef":{"secretName":"s","cloudName":"c"}},
		"status":{"syncStatus":"Synced"}}`)
	r, err := Parse(obj, "pods")
	require.NoError(t, err)
	gen := int64(3)
	assert.Equal(t, &Resource{APIVersion: "g/v1", Kind: "Widget", Namespace: "ns", Name: "a", UID: "u1",
		ResourceVersion: "7", Generation: &gen, Spec: json.RawMessage(`{"name":"alpha","size":2}`), specName: "alpha",
		status:     json.RawMessage(`{"syncStatus":"Synced"}`),
		Finalizers: []string{"x/y", Finalizer}, Deleting: true,
		Credentials: plugin.Credentials{Namespace: "ns", SecretName: "s", CloudName: "c"}}, r)
	assert.Equal(t, map[string]any{"syncStatus": "Synced"}, r.Status())
	r.Status()["syncStatus"] = "changed by a caller"
	assert.Equal(t, map[string]any{"syncStatus": "Synced"}, r.Status(), "each call decodes anew")
	assert.Equal(t, map[string]any{"x": json.Number("1")}, r.WithStatus(map[string]any{"x": json.Number("1")}).Status())
	assert.Equal(t, map[string]any{"syncStatus": "Synced"}, r.Status(), "WithStatus copies")
	assert.Equal(t, 1, r.FinalizerIndex(Finalizer))
	assert.True(t, r.HasFinalizer(Finalizer))
	assert.Equal(t, "u1", r.Identity())
	assert.Equal(t, "alpha", r.Display())
	assert.Equal(t, "ns/a", r.Ref())
}

func TestIdentityAndDisplayFallbacks(t *testing.T) {
	r, err := Parse(decode(t, `{"metadata":{"name":"a","namespace":"ns","deletionTimestamp":null},
		"spec":{"cloudCredentialsRef":{"secretName":"s","cloudName":"c"}},"status":null}`), "")
	require.NoError(t, err)
	assert.Equal(t, "ns/a", r.Identity())
	assert.Equal(t, "a", r.Display())
	assert.False(t, r.Deleting, "a null deletionTimestamp is not a deletion")
	assert.Nil(t, r.Status())
	assert.Nil(t, r.Generation)
	assert.Equal(t, -1, r.FinalizerIndex(Finalizer))
}

func TestUnreadableRef(t *testing.T) {
	for obj, want := range map[string]string{
		`{"metadata":{"name":"a","namespace":"ns"}}`: "ns/a",
		`{"metadata":{"name":"a"}}`:                  "a",
		`{"metadata":{"namespace":"ns"}}`:            "ns/<unnamed>",
		`{"metadata":null}`:                          "<unnamed>",
		`[]`:                                         "<unnamed>",
	} {
		_, err := Parse(decode(t, obj), "")
		var re *Error
		require.ErrorAs(t, err, &re, obj)
		assert.Equal(t, want, re.Ref, obj)
	}
}
