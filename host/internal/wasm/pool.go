package wasm

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/kernel"
)

// instance is one instantiated guest. It is never used by two goroutines at once: wazero
// instances are not goroutine-safe, and sharing one crashes the host process.
type instance struct {
	id     uint64
	mod    api.Module
	fns    map[string]api.Function
	state  *kernel.State
	output *boundedBuffer
	// busy guards the exclusive-use rule at run time, so a pool bug is an error, not a SIGSEGV.
	busy atomic.Bool
	// broken is set after any failed call: the guest's state can no longer be trusted.
	broken bool
	// spent is set once the instance has served a credential group's session: whatever the
	// guest kept in memory belongs to that group, so the instance never serves another.
	spent bool
	// proc is set instead of mod for a native build of a plugin (native.go, benchmarks only).
	proc *nativeProc
}

func (i *instance) close(ctx context.Context) {
	if i.proc != nil {
		i.proc.close()
		return
	}
	i.mod.Close(ctx)
}

// pool hands out instances exclusively: a slot is taken before an instance is, so at most size
// instances exist, and an instance is only ever in one goroutine's hands.
type pool struct {
	slots  chan struct{}
	idle   chan *instance
	create func(ctx context.Context) (*instance, error)
	// wait bounds how long get waits for a free slot.
	wait time.Duration

	mu     sync.Mutex
	closed bool
}

func newPool(size int, wait time.Duration, create func(ctx context.Context) (*instance, error)) *pool {
	return &pool{slots: make(chan struct{}, size), idle: make(chan *instance, size), create: create, wait: wait}
}

// get checks out an idle instance or creates one.
func (p *pool) get(ctx context.Context) (*instance, error) {
	timer := time.NewTimer(p.wait)
	defer timer.Stop()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, fmt.Errorf("no instance became free within %s (all %d in use; is a group cache left open?)",
			p.wait, cap(p.slots))
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		<-p.slots
		return nil, errClosed
	}
	select {
	case inst := <-p.idle:
		return inst, nil
	default:
	}
	inst, err := p.create(ctx)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return inst, nil
}

// put returns a checked-out instance; a broken or spent one is closed, and the next get creates a
// fresh one in its place.
func (p *pool) put(ctx context.Context, inst *instance) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if inst.broken || inst.spent || closed {
		inst.close(ctx)
	} else {
		p.idle <- inst
	}
	<-p.slots
}

// close closes every idle instance; checked-out ones are closed when they come back.
func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for {
		select {
		case inst := <-p.idle:
			inst.close(ctx)
		default:
			return
		}
	}
}

// boundedBuffer keeps the first max bytes a guest writes to stdout and stderr during a call.
type boundedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - b.buf.Len()
	if room < len(p) {
		b.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	b.buf.Write(p)
	return n, nil
}

// take returns and clears what was captured.
func (b *boundedBuffer) take() (string, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, d := b.buf.String(), b.dropped
	b.buf.Reset()
	b.dropped = 0
	return s, d
}
