package wasm

import (
	"bytes"
	"testing"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// FuzzLimitStructure feeds the loader's pre-compile scan any bytes: it must never panic, and a
// module it lets through is one it would let through unchanged again (every table capped).
// Run with: go test -run XXX -fuzz FuzzLimitStructure ./host/internal/wasm/
func FuzzLimitStructure(f *testing.F) {
	f.Add(wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(), Tables: []wasmtest.Table{{Min: 3}}}.Encode())
	f.Add(wasmtest.Module{Memory: true, Exports: []wasmtest.Func{{Name: "f", Locals: 9}}}.Encode())
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x04\x04\x01\x70\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := limitStructure("fuzz.wasm", b)
		if err != nil {
			return
		}
		again, err := limitStructure("fuzz.wasm", out)
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("a module let through changes or is refused on a second scan: %v", err)
		}
	})
}
