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
