//go:build !unix

package wasm

import "context"

// linearMemoryMapped: there is no mmap; runtimeConfig reserves the limit as a slice capacity.
const linearMemoryMapped = false

// withLinearMemory leaves wazero's own allocation (a Go slice with the limit as its capacity,
// runtimeConfig) where there is no mmap.
func withLinearMemory(ctx context.Context) context.Context { return ctx }
