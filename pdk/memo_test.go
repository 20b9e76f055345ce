package pdk

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// The plain result encoder writes what encoding/json would decode to the same message, and
// hands everything it does not write itself to encoding/json.
func TestEncodeResultMatchesEncodingJSON(t *testing.T) {
	for _, res := range []*Result{
		{},
		{Notes: []string{}},
		{Notes: []string{"traits CUSTOM_A are not applied: Ironic offers API 1.96"}},
		{Notes: []string{"a", "b c", ""}},
		{Notes: []string{`quote " and backslash \`, "<html> & tags", "tab\there", "ünïcode", "\x00"}},
		{Notes: []string{"x"}, ExtraStatus: map[string]any{"id": "abc", "n": 3.0}},
		{Lifecycle: &LifecycleStatus{ID: "id", Available: "True", Reason: "Success"}},
	} {
		got, werr := encodeResult(res)
		require.Nil(t, werr)
		want, err := json.Marshal(res)
		require.NoError(t, err)
		var g, w map[string]any
		require.NoError(t, json.Unmarshal(got, &g), "%s", got)
		require.NoError(t, json.Unmarshal(want, &w))
		if len(res.Notes) == 0 && w["notes"] == nil {
			delete(g, "notes")
		}
		assert.Equal(t, w, g, "%+v: %s", res, got)
	}
	got, werr := encodeResult(recorded())
	require.Nil(t, werr)
	assert.JSONEq(t, `{"unchanged":true}`, string(got), "Recorded asks for the host's record")
	r := recorded()
	r.Notes = []string{"ignored"}
	got, _ = encodeResult(r)
	assert.JSONEq(t, `{"unchanged":true}`, string(got), "Recorded stays what it is")
}

type memoRecordingHost struct {
	recordingHost
	answer   bool
	evidence [][][]byte
}

func (h *memoRecordingHost) Unchanged(evidence [][]byte) bool {
	h.evidence = append(h.evidence, evidence)
	return h.answer
}

// Context.unchanged (experimental.Unchanged) passes the evidence to a host with a memo and its answer back; a host
// without one never reports a CR unchanged.
func TestContextUnchanged(t *testing.T) {
	h := &memoRecordingHost{answer: true}
	ctx := newContext(h, nil)
	assert.True(t, ctx.unchanged([][]byte{[]byte("a"), nil, []byte("bc")}))
	require.Len(t, h.evidence, 1)
	assert.Equal(t, [][]byte{[]byte("a"), nil, []byte("bc")}, h.evidence[0])
	h.answer = false
	assert.False(t, ctx.unchanged([][]byte{[]byte("a")}))

	plain := newContext(&recordingHost{}, nil)
	assert.False(t, plain.unchanged([][]byte{[]byte("a")}), "no memo, no hit")
}

// A Recorded result leaves the dispatcher as the host's unchanged message.
func TestDispatchRecorded(t *testing.T) {
	withPlugin(t, Plugin{
		Metadata:   Metadata{Name: "x", EnvPrefix: "X"},
		WaitForAPI: func(*Context) error { return nil },
		Reconcile: func(ctx *Context, req *ReconcileRequest) (*Result, error) {
			if ctx.unchanged([][]byte{req.Spec}) {
				return recorded(), nil
			}
			return &Result{Notes: []string{"full"}}, nil
		},
	})
	h := &memoRecordingHost{answer: true}
	var in instance
	input := []byte(`{"abi_version":1,"object":{"kind":"X","name":"a"},"spec":{"name":"a"}}`)
	out, werr := in.dispatch(abi.EntryReconcile, input, h)
	require.Nil(t, werr)
	assert.JSONEq(t, `{"unchanged":true}`, string(out))
	assert.Equal(t, `{"name":"a"}`, string(h.evidence[0][0]), "the evidence is what the plugin gave")
	h.answer = false
	out, werr = in.dispatch(abi.EntryReconcile, input, h)
	require.Nil(t, werr)
	assert.JSONEq(t, `{"notes":["full"]}`, string(out))
}
