package wasm

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// In the order the runner calls a plugin (every group's readiness, cache and reconciles, then the
// prunes), no instance that served one credential group is ever idle for the next: the pool stays
// empty after every group call. Without the "spent" mark the readiness instance of group 1 goes
// back to the pool and serves group 2 (issue 11, point 8).
func TestInstancesAreRetiredInTheRunnersOrder(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	s := &fakeSession{}
	noIdle := func(after string) {
		t.Helper()
		assert.Zero(t, len(p.pool.idle), "after %s, an instance that served a group is idle for the next", after)
	}
	var caches []uint64
	for _, group := range []string{"group 1", "group 2", "group 3"} {
		require.NoError(t, p.WaitForAPI(ctx, s))
		noIdle(group + " readiness")
		cache, err := p.NewCache(ctx)
		require.NoError(t, err)
		caches = append(caches, cache.(*groupCache).inst.id)
		for range 2 {
			_, err := p.Reconcile(ctx, s, cache, crRequest("a", map[string]any{"name": "a"}))
			require.NoError(t, err)
		}
		require.NoError(t, cache.Close(ctx))
		noIdle(group + " reconciles")
	}
	for range 3 {
		require.NoError(t, p.Prune(ctx, s, plugin.PruneRequest{DesiredSpecs: []map[string]any{{"name": "a"}}}))
		noIdle("a prune")
	}
	assert.Len(t, map[uint64]bool{caches[0]: true, caches[1]: true, caches[2]: true}, 3, "each group has its own instance")
}

// A permanent session error (credentials refused, configuration) fails the call permanently
// whatever the guest made of it: ignored, or turned into a retryable error of its own. Without
// the rule the run would retry for READY_RETRIES or report the CR Synced (issue 11, point 8).
func TestPermanentSessionErrorOverridesTheGuestsAnswer(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	refused := errors.New(`Keystone refused the password for cloud "prod"`)
	s := &fakeSession{fail: plugin.Permanent(refused)}
	for _, action := range []string{"swallow", "downgrade"} {
		_, err := p.Reconcile(ctx, s, nil, crRequest("a", map[string]any{"action": action}))
		require.Error(t, err, "%s: a guest that ignores the refusal still fails", action)
		assert.True(t, plugin.IsPermanent(err), "%s: %v", action, err)
		assert.Contains(t, err.Error(), refused.Error(), action)
	}
	s.fail = errors.New("connection refused")
	_, err := p.Reconcile(ctx, s, nil, crRequest("a", map[string]any{"action": "swallow"}))
	assert.NoError(t, err, "a transient error is the guest's to handle")
}
