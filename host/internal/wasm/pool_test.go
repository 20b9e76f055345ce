package wasm

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pool must never hand one instance to two goroutines, and never let more than its size live.
func TestPoolCheckoutIsExclusive(t *testing.T) {
	const size, workers, rounds = 3, 12, 200
	var created, alive, maxAlive atomic.Int64
	p := newPool(size, time.Minute, func(context.Context) (*instance, error) {
		created.Add(1)
		return &instance{id: uint64(created.Load())}, nil
	})
	holders := map[*instance]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var violations atomic.Int64
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				inst, err := p.get(context.Background())
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				holders[inst]++
				if holders[inst] > 1 {
					violations.Add(1)
				}
				n := alive.Add(1)
				if n > maxAlive.Load() {
					maxAlive.Store(n)
				}
				mu.Unlock()
				time.Sleep(time.Duration((w+i)%3) * 10 * time.Microsecond)
				mu.Lock()
				holders[inst]--
				alive.Add(-1)
				mu.Unlock()
				inst.broken = i%17 == 0 // some calls fail and their instance is replaced
				p.putNoClose(inst)
			}
		})
	}
	wg.Wait()
	assert.Zero(t, violations.Load(), "an instance was held by two goroutines at once")
	assert.LessOrEqual(t, maxAlive.Load(), int64(size))
	assert.Greater(t, created.Load(), int64(size), "broken instances were replaced")
}

func TestPoolWaitIsBounded(t *testing.T) {
	p := newPool(1, 20*time.Millisecond, func(context.Context) (*instance, error) { return &instance{}, nil })
	inst, err := p.get(context.Background())
	require.NoError(t, err)
	_, err = p.get(context.Background())
	assert.ErrorContains(t, err, "no instance became free within 20ms (all 1 in use; is a group cache left open?)")
	p.putNoClose(inst)
	_, err = p.get(context.Background())
	assert.NoError(t, err)
}

// Concurrent calls through the adapter: the busy guard in invoke turns any sharing into an error,
// so this fails if the pool ever hands out a checked-out instance.
func TestConcurrentCallsNeverShareAnInstance(t *testing.T) {
	o, _ := testOptions(t)
	o.PoolSize = 2
	p := loadTest(t, guest(t, "pdkmock"), o)
	var wg sync.WaitGroup
	const groups = 6
	for g := range groups {
		wg.Go(func() {
			ctx := context.Background()
			cache, err := p.NewCache(ctx) // waits for one of the 2 slots
			if !assert.NoError(t, err, "goroutine %d", g) {
				return
			}
			defer cache.Close(ctx)
			for i := range 20 {
				res, err := p.Reconcile(ctx, &fakeSession{}, cache,
					crRequest("c", map[string]any{"action": "echo", "name": "x"}))
				if !assert.NoError(t, err, "goroutine %d call %d", g, i) {
					return
				}
				assert.Equal(t, []string{"x"}, res.Notes)
			}
		})
	}
	wg.Wait()
	// The metadata call at load made instance 1, which the first group reused (it had served no
	// session); every group then had exactly one instance of its own.
	assert.LessOrEqual(t, p.nextID.Load(), uint64(groups), "one instance per credential group")
}

// putNoClose is put for instances without a module.
func (p *pool) putNoClose(inst *instance) {
	if !inst.broken {
		p.idle <- inst
	}
	<-p.slots
}
