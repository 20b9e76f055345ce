package wasm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

func TestLifecyclePluginMetadataAndPolicy(t *testing.T) {
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "lifecyclemock"), o)
	m := p.Metadata()
	assert.True(t, m.Lifecycle)
	assert.True(t, m.HasDelete)
	assert.Equal(t, plugin.CleanupFinalizedPrune, p.CleanupPolicy(true), "a delete step holds the finalizer like a prune")
	assert.Equal(t, plugin.CleanupNone, p.CleanupPolicy(false))
}

func TestLifecycleResultsCrossTheABI(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "lifecyclemock"), o)
	s := &fakeSession{}
	for _, tc := range []struct {
		name   string
		spec   map[string]any
		status map[string]any
		want   *plugin.Lifecycle
		err    string
	}{
		{name: "success with the observed resource",
			spec: map[string]any{"lifecycle": map[string]any{"id": "r1", "available": "True", "reason": "Success", "resource": map[string]any{"a": "b"}}},
			want: &plugin.Lifecycle{ID: "r1", Available: "True", Reason: "Success", Resource: map[string]any{"a": "b"}}},
		{name: "progressing with a delay; the status reaches the guest",
			spec:   map[string]any{"lifecycle": map[string]any{"id": "r1", "available": "False", "reason": "Progressing", "message": "building", "requeue_seconds": 5}},
			status: map[string]any{"id": "r1"},
			want: &plugin.Lifecycle{ID: "r1", Available: "False", Reason: "Progressing", Message: "building", RequeueSeconds: 5,
				Resource: map[string]any{"seen_status_id": "r1"}}},
		{name: "a plain result has no lifecycle", spec: map[string]any{"plain": true}},
		{name: "an unknown reason is a protocol error",
			spec: map[string]any{"lifecycle": map[string]any{"available": "True", "reason": "Fine"}}, err: `lifecycle.reason "Fine"`},
		{name: "an unknown availability is a protocol error",
			spec: map[string]any{"lifecycle": map[string]any{"available": "Yes", "reason": "Success"}}, err: `lifecycle.available "Yes"`},
		{name: "a resource that is not an object is a protocol error",
			spec: map[string]any{"lifecycle": map[string]any{"available": "True", "reason": "Success", "resource": []any{1}}}, err: "must be a JSON object"},
		{name: "an id with a line break is a protocol error",
			spec: map[string]any{"lifecycle": map[string]any{"id": "a\nb", "available": "True", "reason": "Success"}}, err: "lifecycle.id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := crRequest("a", tc.spec)
			req.Status = tc.status
			res, err := p.Reconcile(ctx, s, nil, req)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Contains(t, err.Error(), "protocol")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Lifecycle)
		})
	}
}

func TestDeleteEntryPoint(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "lifecyclemock"), o)
	req := crRequest("a", map[string]any{"lifecycle": map[string]any{"available": "False", "reason": "Success"}})
	req.Status = map[string]any{"id": "r9"}
	res, err := p.Delete(ctx, &fakeSession{}, nil, req)
	require.NoError(t, err)
	assert.Equal(t, &plugin.Lifecycle{Available: "False", Reason: "Success", Resource: map[string]any{"seen_status_id": "r9"}}, res.Lifecycle)

	_, err = p.Delete(ctx, &fakeSession{}, nil, crRequest("a", map[string]any{"plain": true}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a delete must report its outcome in the lifecycle status",
		"a delete without an outcome never releases the finalizer")

	mock := loadTest(t, guest(t, "pdkmock"), o)
	_, err = mock.Delete(ctx, &fakeSession{}, nil, req)
	assert.ErrorContains(t, err, "the plugin has no delete step")
}
