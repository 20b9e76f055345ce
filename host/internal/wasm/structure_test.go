package wasm

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// A few bytes of module can declare tables, vectors or locals the host would allocate outside
// the guest's memory limit; the loader refuses them before compiling anything.
func TestModulesDeclaringHugeHostAllocationsAreRefused(t *testing.T) {
	bigTable := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
		Tables: []wasmtest.Table{{Min: admission.MaxTableEntries + 1}}}
	manyTables := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
		Tables: []wasmtest.Table{{Min: 1}, {Min: 1}, {Min: 1}, {Min: 1}, {Min: 1}}}
	manyLocals := wasmtest.Module{Memory: true, Exports: append(without("reconcile"),
		wasmtest.Func{Name: "reconcile", Results: []byte{wasmtest.I32}, Locals: admission.MaxLocals + 1})}
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
		body = append(body, wasmtest.SLEB(delta)...)
		body = append(body, 0xfc, 0x0f, 0x00) // table.grow 0
		return wasmtest.Func{Name: name, Results: []byte{wasmtest.I32}, Body: body}
	}
	// Without a maximum, and with one declared far past the cap.
	declared := uint32(admission.MaxTableEntries * 4)
	for _, table := range []wasmtest.Table{{Min: 1}, {Min: 1, Max: &declared}} {
		m := wasmtest.Module{Memory: true, Tables: []wasmtest.Table{table},
			Exports: []wasmtest.Func{grow("grow_past_cap", admission.MaxTableEntries), grow("grow_one", 1)}}
		b, err := admission.Limit("grow.wasm", m.Encode())
		require.NoError(t, err)

		ctx := context.Background()
		r := wazero.NewRuntime(ctx)
		defer r.Close(ctx)
		mod, err := r.Instantiate(ctx, b.Module)
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
	out, err := admission.Limit("pdkmock.wasm", b)
	require.NoError(t, err)
	assert.Greater(t, dataSegments(t, b), 1000, "Go writes a data segment per run of non-zero bytes")
	assert.Zero(t, dataSegments(t, out.Module), "the data leaves the module")
	assert.Less(t, segmentCount(t, out.Data), 10, "the data segments are merged")
	again, err := admission.Limit("pdkmock.wasm", out.Module)
	require.NoError(t, err)
	assert.Equal(t, out.Module, again.Module, "a capped module without its data is left as it is")
	assert.Nil(t, again.Data)
	assert.Equal(t, memoryAfterStart(t, admission.Shape{Module: b}), memoryAfterStart(t, out), "the guest starts with the same memory")
}

// Lifting the data out of the module, and merging its segments, puts the same bytes at the same
// places before the guest runs; where a segment's index or the order of segments could matter,
// or the memory is not the module's own, nothing is changed, and where guest code could run
// before the host writes the data, or the data does not fit the memory, it is only merged.
func TestDataSegmentsAreLiftedAndMergedOnlyWhereNothingCanTell(t *testing.T) {
	far := int32(201 + admission.MaxDataGap + 1)
	segs := []wasmtest.Data{{Offset: 100, Bytes: []byte("abc")}, {Offset: 10, Bytes: []byte("xy")},
		{Offset: 200, Bytes: []byte("z")}, {Offset: far, Bytes: []byte("far")}, {Offset: 103, Bytes: []byte("d")}}
	zero := uint32(0)
	lifted := map[string]struct {
		m        wasmtest.Module
		segments int
	}{
		"merged up to the gap of more than maxDataGap bytes": {wasmtest.Module{Memory: true, Data: segs}, 2},
		"one segment": {wasmtest.Module{Memory: true, Data: segs[:1]}, 1},
	}
	for name, c := range lifted {
		out, err := admission.Limit("data.wasm", c.m.Encode())
		require.NoError(t, err, name)
		assert.Zero(t, dataSegments(t, out.Module), name)
		assert.Equal(t, c.segments, segmentCount(t, out.Data), name)
		assert.Equal(t, memoryAfterStart(t, admission.Shape{Module: c.m.Encode()}), memoryAfterStart(t, out), name)
	}

	mergedOnly := map[string]wasmtest.Module{
		"a start section (its function runs before the host could write)": {Memory: true, Data: segs,
			Exports: []wasmtest.Func{{Name: "f"}}, Start: &zero},
	}
	for name, m := range mergedOnly {
		out, err := admission.Limit("data.wasm", m.Encode())
		require.NoError(t, err, name)
		assert.Nil(t, out.Data, name)
		assert.Equal(t, 2, dataSegments(t, out.Module), name)
	}

	unchanged := map[string]wasmtest.Module{
		"data count section (memory.init and data.drop name segments)": {Memory: true, Data: segs, DataCount: true},
		"overlapping segments (the later one wins)": {Memory: true, Data: []wasmtest.Data{
			{Offset: 10, Bytes: []byte("abc")}, {Offset: 11, Bytes: []byte("x")}}},
		"a passive segment": {Memory: true, Data: []wasmtest.Data{
			{Offset: 10, Bytes: []byte("abc")}, {Passive: true, Bytes: []byte("x")}}},
		"a negative offset": {Memory: true, Data: []wasmtest.Data{
			{Offset: 10, Bytes: []byte("abc")}, {Offset: -1, Bytes: []byte("x")}}},
		"a segment past the memory's minimum (the instantiation fails as it would have)": {Memory: true,
			Data: []wasmtest.Data{{Offset: 10, Bytes: []byte("abc")}, {Offset: 1<<16 - 1, Bytes: []byte("xy")}}},
		"an imported memory": {Data: segs},
	}
	for name, m := range unchanged {
		b := m.Encode()
		if name == "an imported memory" {
			b = importMemory(t, b)
		}
		out, err := admission.Limit("data.wasm", b)
		require.NoError(t, err, name)
		assert.Equal(t, b, out.Module, name)
		assert.Nil(t, out.Data, name)
	}
}

// importMemory adds an import of env.memory to a module that has no other import.
func importMemory(t *testing.T, b []byte) []byte {
	t.Helper()
	imports := []byte{2 /* the import section */, 10, 1, 3, 'e', 'n', 'v', 3, 'm', 'e', 'm', 2, 0, 1}
	imports[1] = byte(len(imports) - 2)
	return append(append(slices.Clone(b[:8]), imports...), b[8:]...)
}

// segmentCount is the number of segments of a data section's body.
func segmentCount(t *testing.T, body []byte) int {
	t.Helper()
	count, n := binary.Uvarint(body)
	require.Positive(t, n)
	return int(count)
}

// dataSegments counts a module's data segments.
func dataSegments(t *testing.T, b []byte) int {
	t.Helper()
	for pos := 8; pos < len(b); {
		size, n := binary.Uvarint(b[pos+1:])
		require.Positive(t, n)
		if b[pos] == 11 { // the data section
			count, _ := binary.Uvarint(b[pos+1+n:])
			return int(count)
		}
		pos += 1 + n + int(size)
	}
	return 0
}

// memoryAfterStart is the module's memory once instantiated by the host's runtime and given its
// lifted data, before any start function runs.
func memoryAfterStart(t *testing.T, sh admission.Shape) []byte {
	t.Helper()
	ctx := context.Background()
	o, _ := testOptions(t)
	o, err := o.fromEnv()
	require.NoError(t, err)
	r, err := newRuntime(ctx, o, nil, &Plugin{opts: o}, true)
	require.NoError(t, err)
	defer r.Close(ctx)
	mod, err := r.InstantiateWithConfig(ctx, sh.Module, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	require.NoError(t, err)
	require.NoError(t, modulecache.HeapData(sh.Data).Apply(mod.Memory()))
	mem, ok := mod.Memory().Read(0, mod.Memory().Size())
	require.True(t, ok)
	return slices.Clone(mem)
}
