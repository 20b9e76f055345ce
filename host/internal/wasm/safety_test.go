package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// In the order the runner calls a plugin (every group's readiness, cache and reconciles, then the
// prunes; one session per group), no instance that served one credential group ever serves
// another: none is idle in the pool after a group's call, each group's cache has an instance of
// its own, and an instance is kept (parked) only for the same group's next call. Without the
// "spent" mark the readiness instance of group 1 went back to the pool and served group 2 (issue
// 11, point 8).
func TestInstancesAreRetiredInTheRunnersOrder(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	noIdle := func(after string) {
		t.Helper()
		assert.Zero(t, len(p.pool.idle), "after %s, an instance that served a group is idle for the next", after)
	}
	sessions := []*fakeSession{{}, {}, {}}
	var readiness, caches []uint64
	for i, s := range sessions {
		require.NoError(t, p.WaitForAPI(ctx, s))
		noIdle(fmt.Sprintf("group %d readiness", i+1))
		readiness = append(readiness, p.pool.parked.id)
		cache, err := p.NewCache(ctx)
		require.NoError(t, err)
		caches = append(caches, cache.(*groupCache).inst.id)
		for range 2 {
			_, err := p.Reconcile(ctx, s, cache, crRequest("a", map[string]any{"name": "a"}))
			require.NoError(t, err)
		}
		require.NoError(t, cache.Close(ctx))
		noIdle(fmt.Sprintf("group %d reconciles", i+1))
	}
	assert.Equal(t, readiness, caches, "a group's cache runs on its readiness probe's instance")
	assert.Len(t, map[uint64]bool{caches[0]: true, caches[1]: true, caches[2]: true}, 3, "each group has its own instance")
	var prunes []uint64
	for i, s := range sessions {
		require.NoError(t, p.Prune(ctx, s, plugin.PruneRequest{DesiredSpecs: []json.RawMessage{json.RawMessage(`{"name":"a"}`)}}))
		noIdle(fmt.Sprintf("group %d prune", i+1))
		prunes = append(prunes, p.nextID.Load())
	}
	// Group 3's instance was parked last: group 1's prune retires it and runs on a fresh one, as
	// does group 2's; none of them runs on another group's instance.
	assert.Equal(t, []uint64{caches[2] + 1, caches[2] + 2, caches[2] + 3}, prunes, "every prune on a fresh instance")
	assert.Nil(t, p.pool.parked, "a prune's instance is retired")
}

// One credential group: readiness, the group's reconciles and its prune run on one instance.
func TestOneGroupRunsOnOneInstance(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	before := p.nextID.Load()
	s := &fakeSession{}
	require.NoError(t, p.WaitForAPI(ctx, s))
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	_, err = p.Reconcile(ctx, s, cache, crRequest("a", map[string]any{"name": "a"}))
	require.NoError(t, err)
	require.NoError(t, cache.Close(ctx))
	// The runner wraps a prune's session to count deletions; unwrapped, it is the group's.
	require.NoError(t, p.Prune(ctx, unwrapping{s}, plugin.PruneRequest{DesiredSpecs: []json.RawMessage{json.RawMessage(`{"name":"a"}`)}}))
	assert.LessOrEqual(t, p.nextID.Load()-before, uint64(1), "one instance started for the group")
	assert.Nil(t, p.pool.parked)
}

// An instance kept for a group never runs another group's call: a cache opened after group A's
// readiness whose first call is group B's is refused (nothing of B reaches A's instance), and
// the group goes on on a fresh instance; a prune of B never takes A's instance.
func TestAKeptInstanceNeverServesAnotherGroup(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	a, b := &fakeSession{}, &fakeSession{}
	require.NoError(t, p.WaitForAPI(ctx, a))
	kept := p.pool.parked.id
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	require.Equal(t, kept, cache.(*groupCache).inst.id)
	_, err = p.Reconcile(ctx, b, cache, crRequest("x", map[string]any{"name": "x"}))
	require.ErrorContains(t, err, "the instance served another credential group")
	assert.Empty(t, b.Requests(), "no call of group B ran on group A's instance")
	_, err = p.Reconcile(ctx, b, cache, crRequest("x", map[string]any{"name": "x"}))
	require.NoError(t, err, "the group goes on on a fresh instance")
	assert.NotEqual(t, kept, cache.(*groupCache).inst.id)
	require.NoError(t, cache.Close(ctx))

	require.NoError(t, p.WaitForAPI(ctx, a))
	kept = p.pool.parked.id
	require.NoError(t, p.Prune(ctx, b, plugin.PruneRequest{DesiredSpecs: []json.RawMessage{json.RawMessage(`{"name":"x"}`)}}))
	assert.Greater(t, p.nextID.Load(), kept, "B's prune started an instance of its own")
	assert.Nil(t, p.pool.parked, "A's instance was retired, not kept for B")
}

// unwrapping wraps a session as the runner's deletion counter does.
type unwrapping struct{ plugin.Session }

func (u unwrapping) Unwrap() plugin.Session { return u.Session }

// A permanent session error (credentials refused, configuration) fails the call permanently
// whatever the guest made of it: ignored, or turned into a retryable error of its own. Without
// the rule the run would retry for READY_RETRIES or report the CR Synced (issue 11, point 8).
func TestPermanentSessionErrorOverridesTheGuestsAnswer(t *testing.T) {
	ctx := context.Background()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "pdkmock"), o)
	refused := errors.New(`Keystone refused the password for cloud "prod"`)
	s := &fakeSession{Fail: plugin.Permanent(refused)}
	for _, action := range []string{"swallow", "downgrade"} {
		_, err := p.Reconcile(ctx, s, nil, crRequest("a", map[string]any{"action": action}))
		require.Error(t, err, "%s: a guest that ignores the refusal still fails", action)
		assert.True(t, plugin.IsPermanent(err), "%s: %v", action, err)
		assert.Contains(t, err.Error(), refused.Error(), action)
	}
	s.Fail = errors.New("connection refused")
	_, err := p.Reconcile(ctx, s, nil, crRequest("a", map[string]any{"action": "swallow"}))
	assert.NoError(t, err, "a transient error is the guest's to handle")
}
