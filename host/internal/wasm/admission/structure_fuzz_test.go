package admission

import (
	"bytes"
	"context"
	"runtime/metrics"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// FuzzLimitStructure feeds the loader's pre-compile scan any bytes: it must never panic, a module
// it lets through is one it would let through unchanged again (every table capped), and what the
// decoder and compiler then allocate for it stays within the documented load bound (every byte
// allocated counts, freed or not, so the check is stricter than the peak; a call and an indirect
// call each add what the compiler allocates for it and frees with its function, which the peak
// of TestLoadMemoryStaysWithinTheBound never holds for more than one function's calls).
// Run with: go test -run XXX -fuzz FuzzLimitStructure ./host/internal/wasm/admission/
// What compiling one call and one indirect call allocates in all (measured ~0.9 KB and ~13 KB).
const (
	allocPerCall         = 1 << 10
	allocPerIndirectCall = 16 << 10
)

func FuzzLimitStructure(f *testing.F) {
	f.Add(wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(), Tables: []wasmtest.Table{{Min: 3}}}.Encode())
	f.Add(wasmtest.Module{Memory: true, Exports: []wasmtest.Func{{Name: "f", Locals: 9}}}.Encode())
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x04\x04\x01\x70\x00\x01"))
	for _, m := range hostileModules() {
		f.Add(m)
	}
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler())
	f.Cleanup(func() { r.Close(ctx) })
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	allocated := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		before := allocated()
		out, err := Limit("fuzz.wasm", b)
		if err != nil {
			return
		}
		if m, err := r.CompileModule(ctx, out.Module); err == nil {
			m.Close(ctx)
		}
		bound := uint64(len(b))*LoadBytesPerModuleByte + LoadFixedBudget + out.Calls*allocPerCall + out.IndirectCalls*allocPerIndirectCall
		if used := allocated() - before; used > bound {
			t.Fatalf("checking and compiling a %d-byte module allocated %d bytes, over the bound of %d", len(b), used, bound)
		}
		again, err := Limit("fuzz.wasm", out.Module)
		if err != nil || !bytes.Equal(out.Module, again.Module) || again.Data != nil {
			t.Fatalf("a module let through changes or is refused on a second scan: %v", err)
		}
	})
}
