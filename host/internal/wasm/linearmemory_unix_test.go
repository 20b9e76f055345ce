//go:build unix

package wasm

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// The mapping is the guest's whole memory: growing returns the same bytes longer, past the
// maximum it refuses (memory.grow fails in the guest), and Free can come once, last.
func TestMappedMemoryGrowsInPlaceAndRefusesPastItsMaximum(t *testing.T) {
	m := newMappedMemory(0, 4<<16)
	b := m.Reallocate(1 << 16)
	require.Len(t, b, 1<<16)
	b[100] = 7
	grown := m.Reallocate(3 << 16)
	require.Len(t, grown, 3<<16)
	assert.Equal(t, byte(7), grown[100], "growing keeps the contents in place")
	assert.Same(t, &b[0], &grown[0], "growing never copies")
	assert.Equal(t, 3<<16, cap(grown), "the guest cannot reach past its current size")
	assert.Nil(t, m.Reallocate(5<<16), "past the maximum")
	m.Free()
	assert.Nil(t, m.Reallocate(1), "a freed memory has no bytes")
	m.Free()

	empty := newMappedMemory(0, 0)
	assert.Empty(t, empty.Reallocate(0))
	assert.Nil(t, empty.Reallocate(1))
	empty.Free()
}

// recordingMemory is a mapped memory that notes when wazero frees it and from which goroutine.
type recordingMemory struct {
	experimental.LinearMemory
	freed     *atomic.Int32
	goroutine *atomic.Uint64
}

func (m recordingMemory) Free() {
	m.freed.Add(1)
	m.goroutine.Store(goroutineID())
	m.LinearMemory.Free()
}

func goroutineID() uint64 {
	var buf [64]byte
	f := strings.Fields(string(buf[:runtime.Stack(buf[:], false)]))
	id, _ := strconv.ParseUint(f[1], 10, 64)
	return id
}

// Unmapping a guest's memory is safe only because wazero's memory allocator (experimental in
// wazero) frees it once, when the instance is closed, on the goroutine that closes it, before
// Close returns, and never while a call may still touch it (no finaliser, no background
// goroutine). This pins that: a wazero upgrade that frees elsewhere or later fails here rather
// than as a fault in a hook run.
func TestTheGuestsMemoryIsFreedOnceInsideClose(t *testing.T) {
	ctx := context.Background()
	var freed atomic.Int32
	var goroutine atomic.Uint64
	ctx = experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		return recordingMemory{LinearMemory: newMappedMemory(capacity, max), freed: &freed, goroutine: &goroutine}
	}))
	r := wazero.NewRuntimeWithConfig(ctx, runtimeConfig(Options{}.withDefaults(), true))
	defer r.Close(ctx)
	grow := []byte{0x41, 0x01, 0x40, 0x00, 0x1a} // i32.const 1; memory.grow; drop
	mod, err := r.Instantiate(ctx, wasmtest.Module{Memory: true, Exports: []wasmtest.Func{{Name: "grow", Body: grow}}}.Encode())
	require.NoError(t, err)
	for range 3 {
		_, err = mod.ExportedFunction("grow").Call(ctx)
		require.NoError(t, err)
	}
	runtime.GC()
	runtime.GC()
	assert.Zero(t, freed.Load(), "not freed while the instance lives, the collector's runs included")
	require.NoError(t, mod.Close(ctx))
	assert.Equal(t, int32(1), freed.Load(), "freed once, before Close returned")
	assert.Equal(t, goroutineID(), goroutine.Load(), "on the goroutine that closed the instance")
	require.NoError(t, r.Close(ctx))
	runtime.GC()
	assert.Equal(t, int32(1), freed.Load(), "and never again")
}
