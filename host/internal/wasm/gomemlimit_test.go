package wasm

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Go guest holding more than half its sandbox live must still be able to allocate garbage: its
// runtime is told the sandbox's size (GOMEMLIMIT), so it collects before its heap goal (twice the
// live heap) would need more memory than the sandbox gives.
func TestGoGuestCollectsBeforeItsSandboxIsFull(t *testing.T) {
	p := loadTest(t, guest(t, "pdkmock"), func() Options {
		o, _ := testOptions(t)
		o.MemoryLimitPages = 512 // 32 MiB, the default
		return o
	}())
	ctx := context.Background()
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	_, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("churn",
		map[string]any{"action": "churn", "count": 18, "size": 96}))
	assert.NoError(t, err, "18 MiB live and 96 MiB of garbage fit a 32 MiB sandbox when the guest collects in time")
}

// A Go guest's other goroutines run between its calls and its requests: the PDK yields at each. The
// runtime's sweeper and collector workers are such goroutines; a sandboxed guest has one thread
// and a call never blocks, so without the yield they never ran, every collection was left to the
// allocating call, and 20,000 router flavors created in one pass ran out of 32 MiB after about
// 12,000 with 9 MiB live (docs/scaling.md).
func TestGoGuestRunsItsOtherGoroutinesBetweenCalls(t *testing.T) {
	p := loadTest(t, guest(t, "pdkmock"), func() Options { o, _ := testOptions(t); return o }())
	ctx := context.Background()
	cache, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer cache.Close(ctx)
	_, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("spawn", map[string]any{"action": "spawn"}))
	require.NoError(t, err)
	res, err := p.Reconcile(ctx, &fakeSession{}, cache, crRequest("spawned", map[string]any{"action": "spawned"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"true"}, res.Notes, "the goroutine the first call started has run by the second call")
	// A call that reads hundreds of pages yields before each request as well.
	res, err = p.Reconcile(ctx, &fakeSession{}, cache, crRequest("spawn-then-request", map[string]any{"action": "spawn-then-request"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"true"}, res.Notes, "the goroutine started before a request has run after it")
}

func TestGuestMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		pages uint32
		want  string
	}{
		{512, "29360128"},  // 32 MiB less 4 MiB
		{1024, "58720256"}, // 64 MiB less 8 MiB
		{64, "off"},        // 4 MiB: nothing left to leave room in
		{160, "6291456"},   // 10 MiB less 4 MiB
	} {
		assert.Equal(t, tc.want, guestMemoryLimit(tc.pages), "%d pages", tc.pages)
	}
}
