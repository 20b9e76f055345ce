package admission

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

func brTableOf(n int) []byte {
	b := append([]byte{0x02, 0x40, 0x41, 0x00, 0x0e}, uleb(uint64(n))...) // block; i32.const 0; br_table
	for range n + 1 {
		b = append(b, 0x00)
	}
	return append(b, 0x0b)
}

func withBody(body []byte) []byte {
	return withBodies(1, body)
}

// withBodies is a module of n exported functions of type () -> () with the same body.
func withBodies(n int, body []byte) []byte {
	m := wasmtest.Module{Memory: true}
	for i := range n {
		m.Exports = append(m.Exports, wasmtest.Func{Name: fmt.Sprint("f", i), Body: body})
	}
	return m.Encode()
}

// calls is a body of n calls of function 0 (a () -> () export of withBodies), or with indirect, of
// n call_indirect through table entry 0 with type 0.
func calls(n int, indirect bool) []byte {
	var b []byte
	for range n {
		if indirect {
			b = append(b, 0x41, 0x00, 0x11, 0x00, 0x00) // i32.const 0; call_indirect type 0 table 0
		} else {
			b = append(b, 0x10, 0x00) // call 0
		}
	}
	return b
}

// Control flow whose compile time or memory grows faster than its size is refused before the
// compiler sees it, with the function named (issue 11 item 2).
func TestPathologicalControlFlowIsRefusedBeforeCompiling(t *testing.T) {
	var manyTables []byte
	for range 3 {
		manyTables = append(manyTables, brTableOf(maxBrTableTargets)...)
	}
	huge := make([]byte, maxFunctionBytes)
	for i := range huge {
		huge[i] = 0x01 // nop
	}
	cases := []struct {
		name   string
		module []byte
		want   string
	}{
		{"deeply nested blocks", withBody(wasmtest.NestedBlocks(MaxNesting + 1)), "function body 0 nests blocks deeper than 4096"},
		{"a huge br_table", withBody(brTableOf(maxBrTableTargets + 1)), "function body 0 has a br_table of 16385 targets; the host compiles at most 16384"},
		{"many br_tables", withBody(manyTables), "function body 0 has more than 32768 br_table targets in all"},
		{"a huge function", withBody(huge), "function body 0 has 262145 bytes; the host compiles at most 262144"},
		{"many calls", withBody(calls(maxFunctionCalls+1, false)), "function body 0 makes more than 8192 calls"},
		{"many indirect calls", withBody(calls(maxFunctionIndirectCalls+1, true)), "function body 0 makes more than 1024 indirect calls"},
		{"many calls in all", withBodies(maxModuleCalls/maxFunctionCalls+1, calls(maxFunctionCalls, false)),
			"function bodies make more than 262144 calls in all"},
		{"many indirect calls in all", withBodies(maxModuleIndirectCalls/maxFunctionIndirectCalls+1, calls(maxFunctionIndirectCalls, true)),
			"function bodies make more than 16384 indirect calls in all"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Limit("patho.wasm", c.module)
			require.Error(t, err)
			assert.Equal(t, "wasm plugin patho.wasm: code section: "+c.want, err.Error())
		})
	}
	for _, ok := range [][]byte{withBody(wasmtest.NestedBlocks(MaxNesting)), withBody(brTableOf(maxBrTableTargets)),
		withBodies(maxModuleCalls/maxFunctionCalls, calls(maxFunctionCalls, false)),
		withBodies(maxModuleIndirectCalls/maxFunctionIndirectCalls, calls(maxFunctionIndirectCalls, true))} {
		_, err := Limit("ok.wasm", ok)
		assert.NoError(t, err, "control flow at the limits is compiled")
	}
}
