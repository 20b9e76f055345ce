package wasmtest

// Minimal WebAssembly binary encoder: enough to write modules with chosen imports and exports
// whose functions return zero, which is all the loader's structural checks look at.

// Value types.
const (
	I32 byte = 0x7f
	I64 byte = 0x7e
)

// Func is an imported or exported function.
type Func struct {
	Module  string // imports only
	Name    string
	Params  []byte
	Results []byte
	// Locals declares that many i32 locals in an export's body.
	Locals uint32
	// Body, when set, is an export's instructions (without the final end) instead of returning
	// zeros.
	Body []byte
}

// Table is a funcref table; a nil Max declares none.
type Table struct {
	Min uint32
	Max *uint32
}

// Module describes a module to encode.
type Module struct {
	Imports []Func
	Exports []Func
	// Memory exports one page of memory as "memory" when true.
	Memory bool
	Tables []Table
	// Data are the module's data segments, in this order; DataCount adds a data count section.
	Data      []Data
	DataCount bool
	// Start, when set, adds a start section naming that function (imports first).
	Start *uint32
}

// Data is one data segment: active on memory 0 at Offset, or passive.
type Data struct {
	Offset  int32
	Bytes   []byte
	Passive bool
}

// Encode returns the module's binary form.
func (m Module) Encode() []byte {
	var types [][]byte
	typeIndex := func(f Func) uint32 {
		t := []byte{0x60}
		t = append(t, uleb(uint32(len(f.Params)))...)
		t = append(t, f.Params...)
		t = append(t, uleb(uint32(len(f.Results)))...)
		t = append(t, f.Results...)
		for i, have := range types {
			if string(have) == string(t) {
				return uint32(i)
			}
		}
		types = append(types, t)
		return uint32(len(types) - 1)
	}
	var imports, funcs, exports, code []byte
	for _, f := range m.Imports {
		imports = append(imports, name(f.Module)...)
		imports = append(imports, name(f.Name)...)
		imports = append(imports, 0x00)
		imports = append(imports, uleb(typeIndex(f))...)
	}
	for i, f := range m.Exports {
		funcs = append(funcs, uleb(typeIndex(f))...)
		exports = append(exports, name(f.Name)...)
		exports = append(exports, 0x00)
		exports = append(exports, uleb(uint32(len(m.Imports)+i))...)
		var body []byte
		if f.Locals > 0 {
			body = append(body, 0x01)
			body = append(body, uleb(f.Locals)...)
			body = append(body, I32)
		} else {
			body = append(body, 0x00) // no locals
		}
		for _, r := range f.Results {
			if f.Body != nil {
				break
			}
			if r == I64 {
				body = append(body, 0x42, 0x00) // i64.const 0
			} else {
				body = append(body, 0x41, 0x00) // i32.const 0
			}
		}
		body = append(body, f.Body...)
		body = append(body, 0x0b)
		code = append(code, uleb(uint32(len(body)))...)
		code = append(code, body...)
	}
	exportCount := len(m.Exports)
	if m.Memory {
		exports = append(exports, name("memory")...)
		exports = append(exports, 0x02, 0x00)
		exportCount++
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	var typeSec []byte
	for _, t := range types {
		typeSec = append(typeSec, t...)
	}
	out = section(out, 1, len(types), typeSec)
	out = section(out, 2, len(m.Imports), imports)
	out = section(out, 3, len(m.Exports), funcs)
	var tables []byte
	for _, t := range m.Tables {
		tables = append(tables, 0x70)
		if t.Max == nil {
			tables = append(tables, 0x00)
			tables = append(tables, uleb(t.Min)...)
		} else {
			tables = append(tables, 0x01)
			tables = append(tables, uleb(t.Min)...)
			tables = append(tables, uleb(*t.Max)...)
		}
	}
	out = section(out, 4, len(m.Tables), tables)
	if m.Memory {
		out = section(out, 5, 1, []byte{0x00, 0x01})
	}
	out = section(out, 7, exportCount, exports)
	if m.Start != nil {
		start := uleb(*m.Start)
		out = append(out, 8)
		out = append(out, uleb(uint32(len(start)))...)
		out = append(out, start...)
	}
	if m.DataCount {
		out = append(out, 12)
		out = append(out, uleb(uint32(len(uleb(uint32(len(m.Data))))))...)
		out = append(out, uleb(uint32(len(m.Data)))...)
	}
	out = section(out, 10, len(m.Exports), code)
	var data []byte
	for _, d := range m.Data {
		if d.Passive {
			data = append(data, 0x01)
		} else {
			data = append(data, 0x00, 0x41)
			data = append(data, SLEB(d.Offset)...)
			data = append(data, 0x0b)
		}
		data = append(data, uleb(uint32(len(d.Bytes)))...)
		data = append(data, d.Bytes...)
	}
	return section(out, 11, len(m.Data), data)
}

func section(out []byte, id byte, count int, body []byte) []byte {
	if count == 0 {
		return out
	}
	content := append(uleb(uint32(count)), body...)
	out = append(out, id)
	out = append(out, uleb(uint32(len(content)))...)
	return append(out, content...)
}

func name(s string) []byte { return append(uleb(uint32(len(s))), s...) }

func uleb(v uint32) []byte {
	var b []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

// EntryPoints are the exports a plugin of ABI v1 has, with their types.
func EntryPoints() []Func {
	var fs []Func
	for _, n := range []string{"metadata", "wait_for_api", "group_begin", "group_end", "reconcile", "prune"} {
		fs = append(fs, Func{Name: n, Results: []byte{I32}})
	}
	return append(fs, Func{Name: "openstack_sync_abi_v1"}, Func{Name: "_initialize"})
}

// SLEB is v as a signed LEB128, as constant expressions write it.
func SLEB(v int32) []byte {
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

// NestedBlocks is a function body of n nested empty blocks: cheap to encode, and what makes a
// compile slow (admission's nesting limit, the compile deadline's tests).
func NestedBlocks(n int) []byte {
	var b []byte
	for range n {
		b = append(b, 0x02, 0x40) // block (no result)
	}
	for range n {
		b = append(b, 0x0b)
	}
	return b
}
