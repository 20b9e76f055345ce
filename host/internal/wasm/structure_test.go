package wasm

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// A few bytes of module can declare tables, vectors or locals the host would allocate outside
// the guest's memory limit; the loader refuses them before compiling anything.
func TestModulesDeclaringHugeHostAllocationsAreRefused(t *testing.T) {
	bigTable := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
		Tables: []wasmtest.Table{{Min: maxTableEntries + 1}}}
	manyTables := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
		Tables: []wasmtest.Table{{Min: 1}, {Min: 1}, {Min: 1}, {Min: 1}, {Min: 1}}}
	manyLocals := wasmtest.Module{Memory: true, Exports: append(without("reconcile"),
		wasmtest.Func{Name: "reconcile", Results: []byte{wasmtest.I32}, Locals: maxLocals + 1})}
	cases := []struct {
		name   string
		module []byte
		want   string
	}{
		{"table over the cap", bigTable.Encode(), "table 0 has 1048577 entries; the host allows at most 1048576"},
		{"too many tables", manyTables.Encode(), "declares 5 tables; the host allows at most 4"},
		{"too many locals", manyLocals.Encode(), "code section: function body 7 declares more than 65536 locals"},
		// A function section claiming 2^32-1 entries in 5 bytes.
		{"vector count larger than its section", append([]byte("\x00asm\x01\x00\x00\x00"), 3, 5, 0xff, 0xff, 0xff, 0xff, 0x0f),
			"function section: function declares 4294967295 entries but only 0 bytes remain"},
		// The decoder allocates 96 GiB for these 20-byte modules and the process dies.
		{"function names larger than their section", append([]byte("\x00asm\x01\x00\x00\x00"),
			0, 12, 4, 'n', 'a', 'm', 'e', 1, 5, 0xff, 0xff, 0xff, 0xff, 0x0f),
			`custom section "name": subsection 1 declares 4294967295 entries but only 0 bytes remain`},
		{"local names larger than their section", append([]byte("\x00asm\x01\x00\x00\x00"),
			0, 14, 4, 'n', 'a', 'm', 'e', 2, 7, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f),
			`custom section "name": the local names of a function declares 4294967295 entries but only 0 bytes remain`},
		{"element segment larger than its section", append([]byte("\x00asm\x01\x00\x00\x00"),
			9, 10, 1, 0, 0x41, 0, 0x0b, 0xff, 0xff, 0xff, 0xff, 0x0f),
			"element section: element segment 0 declares 4294967295 entries but only 0 bytes remain"},
		{"passive expression segment larger than its section", append([]byte("\x00asm\x01\x00\x00\x00"),
			9, 8, 1, 5, 0x70, 0xff, 0xff, 0xff, 0xff, 0x0f),
			"element section: element segment 0 declares 4294967295 entries but only 0 bytes remain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _ := testOptions(t)
			path := filepath.Join(t.TempDir(), "hostile.wasm")
			require.NoError(t, os.WriteFile(path, c.module, 0o644))
			_, err := Load(context.Background(), path, o)
			var le *LoadError
			require.ErrorAs(t, err, &le)
			assert.Contains(t, err.Error(), "wasm plugin "+path+": "+c.want)
		})
	}
}

// Go modules declare their table without a maximum, so table.grow could ask the host for up to
// 32 GiB; the loader gives every table a maximum and the guest's growth past it fails in the guest.
func TestTableGrowthIsCappedInsideTheGuest(t *testing.T) {
	grow := func(name string, delta int32) wasmtest.Func {
		body := []byte{0xd0, 0x70, 0x41} // ref.null func; i32.const delta
		body = append(body, sleb(delta)...)
		body = append(body, 0xfc, 0x0f, 0x00) // table.grow 0
		return wasmtest.Func{Name: name, Results: []byte{wasmtest.I32}, Body: body}
	}
	// Without a maximum, and with one declared far past the cap.
	declared := uint32(maxTableEntries * 4)
	for _, table := range []wasmtest.Table{{Min: 1}, {Min: 1, Max: &declared}} {
		m := wasmtest.Module{Memory: true, Tables: []wasmtest.Table{table},
			Exports: []wasmtest.Func{grow("grow_past_cap", maxTableEntries), grow("grow_one", 1)}}
		b, err := limitStructure("grow.wasm", m.Encode())
		require.NoError(t, err)

		ctx := context.Background()
		r := wazero.NewRuntime(ctx)
		defer r.Close(ctx)
		mod, err := r.Instantiate(ctx, b)
		require.NoError(t, err)
		res, err := mod.ExportedFunction("grow_past_cap").Call(ctx)
		require.NoError(t, err)
		assert.Equal(t, int32(-1), int32(res[0]), "growing past the cap fails inside the guest (declared max %v)", table.Max)
		res, err = mod.ExportedFunction("grow_one").Call(ctx)
		require.NoError(t, err)
		assert.Equal(t, int32(1), int32(res[0]), "growing within the cap works")
	}
}

func TestRealPluginsPassTheStructuralLimits(t *testing.T) {
	b, err := os.ReadFile(guest(t, "pdkmock"))
	require.NoError(t, err)
	out, err := limitStructure("pdkmock.wasm", b)
	require.NoError(t, err)
	assert.InDelta(t, len(b), len(out), 8, "only the table section changes: a maximum is added")
	again, err := limitStructure("pdkmock.wasm", out)
	require.NoError(t, err)
	assert.Equal(t, out, again, "a capped module is left as it is")
}

func sleb(v int32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}
