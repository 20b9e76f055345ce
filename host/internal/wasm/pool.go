package wasm

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
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
	// spent is set once the instance is done with its credential group: it is closed when it
	// comes back to the pool.
	spent bool
	// group is the credential group (groupKey) of the last call with a session, nil for none or
	// for a session the host cannot tell apart; expect, when set, is the group the next call
	// with a session must be of (admits).
	group, expect any
	// ext is set instead of mod for an External (external.go, benchmarks only).
	ext ExternalInstance
}

func (i *instance) close(ctx context.Context) {
	if i.ext != nil {
		i.ext.Close()
		return
	}
	i.mod.Close(ctx)
}

// pool hands out instances exclusively: a slot is taken before an instance is, so at most size
// instances exist, and an instance is only ever in one goroutine's hands.
type pool struct {
	slots chan struct{}
	idle  chan *instance
	// parked is the instance kept for its group's next call (park), outside the slots.
	parked            *instance
	parkedByReadiness bool
	create            func(ctx context.Context) (*instance, error)
	// wait bounds how long get waits for a free slot.
	wait time.Duration

	mu     sync.Mutex
	closed bool
}

func newPool(size int, wait time.Duration, create func(ctx context.Context) (*instance, error)) *pool {
	return &pool{slots: make(chan struct{}, size), idle: make(chan *instance, size), create: create, wait: wait}
}

// get checks out an idle instance or creates one (a parked instance is retired).
func (p *pool) get(ctx context.Context) (*instance, error) {
	return p.getFor(ctx, nil, freshInstance)
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

// close closes every idle instance and the parked one; checked-out ones are closed when they
// come back.
func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	parked := p.parked
	p.parked = nil
	p.mu.Unlock()
	if parked != nil {
		parked.close(ctx)
	}
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

// admits reports whether a call with session s may run on the instance, and records s's group
// for parking. Whatever the guest keeps in memory (globals, vars, its cache) belongs to the
// credential group it served, so an instance kept for another call (parking) serves that group
// only: once takes a parked instance only for the same group, and the first instance of a cache,
// which is the readiness probe's (ensure), must see its first call with a session be that
// group's, else the call is refused and the instance discarded. A call without a session
// (metadata, group_begin, group_end) reaches no group's data and is always admitted.
func (i *instance) admits(s plugin.Session) bool {
	if s == nil {
		return true
	}
	k := groupKey(s)
	if i.expect != nil {
		if k != i.expect {
			return false
		}
		i.expect = nil
	}
	i.group = k
	return true
}

// groupKey identifies the credential group of a session: the session itself, once unwrapped
// (the runner wraps a prune's session to count deletions). A connector opens one session per
// group and run (docs/contract.md §4.1), so the same session is the same group. Only a pointer
// is an identity; for anything else (a value two groups could share) groupKey is nil.
func groupKey(s plugin.Session) any {
	for {
		w, ok := s.(interface{ Unwrap() plugin.Session })
		if !ok {
			break
		}
		s = w.Unwrap()
	}
	if s == nil || reflect.TypeOf(s).Kind() != reflect.Pointer {
		return nil
	}
	return s
}

// Parking keeps the instance a credential group's call left for that group's next call, so a
// single-group run starts one instance for readiness, the group's reconciles and its prune
// instead of three (docs/abi.md section 2): each start is a Go runtime's _initialize and the
// module's data copied into fresh memory (~6 ms and ~800 page faults). At most one instance is
// parked, outside the slots, and only while no other instance is checked out: every get retires
// it unless it is the one asked for, so the pool's size still bounds the instances alive.
type reuse int

const (
	// freshInstance: an instance that served no group (or none: the parked one is retired).
	freshInstance reuse = iota
	// sameGroup: the parked instance when it served this group (getFor's key).
	sameGroup
	// afterReadiness: the instance the readiness probe left, for the cache opened right after
	// it; its next call with a session must be of that group (instance.admits).
	afterReadiness
)

// getFor is get, taking the parked instance where want allows.
func (p *pool) getFor(ctx context.Context, key any, want reuse) (*instance, error) {
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
	closed, parked, byReadiness := p.closed, p.parked, p.parkedByReadiness
	p.parked = nil
	p.mu.Unlock()
	if closed {
		<-p.slots
		if parked != nil {
			parked.close(ctx)
		}
		return nil, errClosed
	}
	if parked != nil {
		switch {
		case want == sameGroup && key != nil && parked.group == key:
			return parked, nil
		case want == afterReadiness && byReadiness:
			parked.expect = parked.group
			return parked, nil
		}
		parked.close(ctx)
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

// park keeps a checked-out instance for its group's next call (byReadiness: it served the
// group's readiness probe), when it can serve one: not broken, bound to a group the host can
// tell apart, and no other instance checked out. Otherwise it is retired.
func (p *pool) park(ctx context.Context, inst *instance, byReadiness bool) {
	p.mu.Lock()
	if p.closed || inst.broken || inst.group == nil || len(p.slots) > 1 {
		p.mu.Unlock()
		inst.spent = true
		p.put(ctx, inst)
		return
	}
	old := p.parked
	p.parked, p.parkedByReadiness = inst, byReadiness
	<-p.slots
	p.mu.Unlock()
	if old != nil {
		old.close(ctx)
	}
}

// retire closes a checked-out instance and frees its slot.
func (p *pool) retire(ctx context.Context, inst *instance) {
	inst.spent = true
	p.put(ctx, inst)
}
