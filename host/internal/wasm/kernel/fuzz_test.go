package kernel

import (
	"context"
	"encoding/binary"
	"slices"
	"testing"
)

// FuzzKernel runs any sequence of kernel calls with any arguments: each must either work or fault
// with a *Fault (never an index panic, never memory past the limit), as a hostile guest would
// find otherwise. Run with: go test -fuzz FuzzKernel ./host/internal/wasm/kernel/
func FuzzKernel(f *testing.F) {
	f.Add([]byte{0, 16, 0, 0, 0, 0, 0, 0, 0, 3, 8, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 8, 0, 0, 0, 0, 0, 0, 0, 5, 255, 255, 255, 255, 255, 255, 255, 255})
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range functions {
			if !yield(n) {
				return
			}
		}
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		limits := Limits{Memory: 4 << 10, Output: 256, Vars: 128, LogLine: 32, LogBytes: 128}
		s := NewState(limits, func(k string) (string, bool) { return "v-" + k, len(k) < 4 },
			func(context.Context, int32, string) {}, LevelTrace)
		s.Reset([]byte("input bytes"))
		for len(data) > 0 {
			fn := functions[names[int(data[0])%len(names)]]
			data = data[1:]
			stack := make([]uint64, max(len(fn.Params), len(fn.Results)))
			for i := range fn.Params {
				var w [8]byte
				n := copy(w[:], data)
				data = data[n:]
				v := binary.LittleEndian.Uint64(w[:])
				// Mostly offsets near the arena, sometimes anything.
				if v>>63 == 0 {
					v %= uint64(len(s.arena) + 16)
				}
				stack[i] = v
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(*Fault); !ok {
							t.Fatalf("kernel function panicked with %T: %v", r, r)
						}
					}
				}()
				fn.fn(WithState(context.Background(), s), stack)
			}()
			used := len(s.arena) + len(s.order)*blockOverhead
			if used > limits.Memory+8 {
				t.Fatalf("kernel holds %d bytes, over the %d-byte limit", used, limits.Memory)
			}
			if s.varBytes > limits.Vars {
				t.Fatalf("vars hold %d bytes, over the %d-byte limit", s.varBytes, limits.Vars)
			}
			for off, n := range s.blocks {
				if off < arenaBase || off+n > uint64(len(s.arena)) {
					t.Fatalf("block %d+%d lies outside the arena [%d, %d)", off, n, arenaBase, len(s.arena))
				}
			}
		}
	})
}
