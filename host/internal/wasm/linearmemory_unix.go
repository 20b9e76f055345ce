//go:build unix

package wasm

import (
	"context"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// linearMemoryMapped: withLinearMemory maps each instance's memory.
const linearMemoryMapped = true

// withLinearMemory has each instance's linear memory reserved as one anonymous mapping of its
// limit (docs/reliability.md, "Memory per instance"): a page costs the host only once the guest
// touches it, growing never copies (a Go slice grown by append held the old and new buffers,
// and the GC kept earlier ones: 4-5x the limit), the memory needs no zeroing when an instance
// starts (a Go allocation of the limit from reused heap is cleared in full, ~7 ms per instance)
// and it goes back to the kernel the moment the instance closes, not when the GC runs.
func withLinearMemory(ctx context.Context) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(newMappedMemory))
}

// mappedMemory is a linear memory backed by a private anonymous mapping of its maximum.
type mappedMemory struct {
	buf    []byte
	mapped bool
}

func newMappedMemory(_, max uint64) experimental.LinearMemory {
	m := &mappedMemory{}
	if max == 0 {
		return m
	}
	buf, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		// No address space for the mapping: a Go allocation of the same size still bounds the
		// guest (and wazero refuses an instance whose minimum it cannot have).
		m.buf = make([]byte, max)
		return m
	}
	m.buf, m.mapped = buf, true
	return m
}

// Reallocate returns the first size bytes of the memory; nil (the guest's memory.grow fails)
// past its maximum.
func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size:size]
}

// Free unmaps the memory; wazero calls it once, when the instance is closed, after its last call.
func (m *mappedMemory) Free() {
	if m.mapped {
		_ = syscall.Munmap(m.buf)
	}
	m.buf, m.mapped = nil, false
}
