//go:build unix

package wasm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
