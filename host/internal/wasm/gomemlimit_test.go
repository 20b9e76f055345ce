package wasm

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Go guest's runtime is told the sandbox's size (GOMEMLIMIT, the sandbox less a reserve) and the
// host's GC percent, so it collects before its heap goal would need more memory than the sandbox
// gives. The guest reports what its runtime holds, so this fails without either variable; an
// earlier version churned 96 MiB through a 32 MiB sandbox instead, which GOGC=25 alone made pass
// and which the runtime's time-based GC CPU limiter made flaky on a loaded machine.
func TestGoGuestRuntimeKnowsItsSandbox(t *testing.T) {
	for _, tc := range []struct {
		pages uint32
		limit string
	}{
		{512, "29360128"}, // 32 MiB, the default, less 4 MiB
		{1024, "58720256"},
		{64, strconv.FormatInt(math.MaxInt64, 10)}, // "off": too small to leave room in
	} {
		p := loadTest(t, guest(t, "pdkmock"), func() Options {
			o, _ := testOptions(t)
			o.MemoryLimitPages = tc.pages
			return o
		}())
		ctx := context.Background()
		cache, err := p.NewCache(ctx)
		require.NoError(t, err)
		res, err := p.Reconcile(ctx, &fakeSession{}, cache, crRequest("gc", map[string]any{"action": "gc-settings"}))
		require.NoError(t, err, "%d pages", tc.pages)
		assert.Equal(t, []string{tc.limit, GuestGCPercent}, res.Notes, "%d pages: the guest runtime's memory limit and GC percent", tc.pages)
		require.NoError(t, cache.Close(ctx))
	}
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
