package admission

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Modules built section by section, to load the costliest module of each section kind: the
// decoder and the compiler allocate per entry of a section, and some entries cost them hundreds
// of bytes for one to five bytes of module (docs/reliability.md, "Bounded load").

// wasmHeader starts every module.
const wasmHeader = "\x00asm\x01\x00\x00\x00"

// module is the header followed by the given sections.
func module(sections ...[]byte) []byte {
	out := []byte(wasmHeader)
	for _, s := range sections {
		out = append(out, s...)
	}
	return out
}

// section is one section: its id, its size and body.
func section(id byte, body []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(body)))...), body...)
}

// vec is a vector of n entries.
func vec(n int, entry func(i int) []byte) []byte {
	b := uleb(uint64(n))
	for i := range n {
		b = append(b, entry(i)...)
	}
	return b
}

// repeat is unit repeated until n bytes are reached.
func repeat(unit []byte, n int) []byte {
	b := make([]byte, 0, n+len(unit))
	for len(b) < n {
		b = append(b, unit...)
	}
	return b
}

// name4 is the i-th of 456,976 distinct four-letter names.
func name4(i int) []byte {
	return []byte{'a' + byte(i%26), 'a' + byte(i/26%26), 'a' + byte(i/676%26), 'a' + byte(i/17576%26)}
}

var (
	// voidType is one type, () -> ().
	voidType = section(sectionType, []byte{1, 0x60, 0, 0})
	// oneTable is a funcref table of one entry.
	oneTable = section(sectionTable, []byte{1, 0x70, 0, 1})
	// oneMemory is a memory of one page.
	oneMemory = section(sectionMemory, []byte{1, 0, 1})
)

// functions is the function and code sections of n functions of type 0, each with body (its
// instructions, without locals and end), and between them the sections that come before code.
func functions(n int, body []byte, between ...[]byte) []byte {
	code := append([]byte{0}, body...)
	code = append(code, 0x0b)
	entry := append(uleb(uint64(len(code))), code...)
	out := section(sectionFunction, vec(n, func(int) []byte { return []byte{0} }))
	for _, b := range between {
		out = append(out, b...)
	}
	return append(out, section(sectionCode, vec(n, func(int) []byte { return entry }))...)
}

// nameSection is a "name" custom section holding one subsection.
func nameSection(sub byte, body []byte) []byte {
	b := append([]byte{4, 'n', 'a', 'm', 'e', sub}, uleb(uint64(len(body)))...)
	return section(sectionCustom, append(b, body...))
}

var (
	callUnit         = []byte{0x10, 0x00}                   // call 0
	indirectCallUnit = []byte{0x41, 0x00, 0x11, 0x00, 0x00} // i32.const 0; call_indirect type 0 table 0
	constDropUnit    = []byte{0x41, 0x00, 0x1a}             // i32.const 0; drop
)

// denseModules are modules of about size bytes, each filled with the cheapest entries of one
// section kind: where the host's check lets the kind through at that size, this is what it costs
// the decoder and the compiler most; past a cap, the check refuses it before either runs.
func denseModules(size int) map[string][]byte {
	bodies := func(unit []byte, between ...[]byte) []byte {
		per := min(size, maxFunctionBytes-16)
		return functions(max(1, size/per), repeat(unit, per), between...)
	}
	return map[string][]byte{
		"type": module(section(sectionType, vec(size/3, func(int) []byte { return []byte{0x60, 0, 0} }))),
		"type values": module(section(sectionType, vec(1, func(int) []byte {
			return append(append([]byte{0x60}, vec(size-16, func(int) []byte { return []byte{0x7f} })...), 0)
		}))),
		"import":         module(voidType, section(sectionImport, vec(size/4, func(int) []byte { return []byte{0, 0, 0, 0} }))),
		"function":       module(voidType, section(sectionFunction, vec(size, func(int) []byte { return []byte{0} }))),
		"global":         module(section(sectionGlobal, vec(size/5, func(int) []byte { return []byte{0x7f, 0, 0x41, 0, 0x0b} }))),
		"export":         module(voidType, section(sectionFunction, []byte{1, 0}), section(sectionExport, vec(size/7, func(i int) []byte { return append(append([]byte{4}, name4(i)...), 0, 0) })), section(sectionCode, []byte{1, 2, 0, 0x0b})),
		"element":        module(section(sectionElement, vec(size/3, func(int) []byte { return []byte{1, 0, 0} }))),
		"element entry":  module(voidType, section(sectionFunction, []byte{1, 0}), oneTable, section(sectionElement, append([]byte{1, 0, 0x41, 0, 0x0b}, vec(size-8, func(int) []byte { return []byte{0} })...))),
		"data segment":   module(oneMemory, section(sectionDataCount, uleb(uint64(size/2))), section(sectionData, vec(size/2, func(int) []byte { return []byte{1, 0} }))),
		"custom":         module(repeat(section(sectionCustom, []byte{1, 'c', 0}), size)),
		"function name":  module(nameSection(1, vec(size/5, func(i int) []byte { return append(uleb(uint64(i%maxFunctions)), 1, 'f') }))),
		"local name":     module(nameSection(2, vec(size/3, func(i int) []byte { return append(uleb(uint64(i%maxFunctions)), 0) }))),
		"tiny function":  module(voidType, functions(size/4, nil)),
		"call":           module(voidType, bodies(callUnit)),
		"indirect call":  module(voidType, oneTable, bodies(indirectCallUnit)),
		"const and drop": module(voidType, bodies(constDropUnit)),
		"data bytes":     module(oneMemory, section(sectionData, append([]byte{1, 0, 0x41, 0, 0x0b}, append(uleb(uint64(size)), make([]byte, size)...)...))),
		"custom bytes":   module(section(sectionCustom, append([]byte{1, 'c'}, make([]byte, size)...))),
	}
}

// atTheCaps are the costliest modules the check lets through: each section kind at its cap
// (docs/reliability.md, "Bounded load").
func atTheCaps() map[string][]byte {
	maxed := func(per, n int, unit []byte, between ...[]byte) []byte {
		return functions(n, repeat(unit, per*len(unit)), between...)
	}
	values := append(append([]byte{0x60}, vec(maxTypeValues, func(int) []byte { return []byte{0x7f} })...), 0)
	return map[string][]byte{
		"types":            module(section(sectionType, vec(maxTypes, func(int) []byte { return []byte{0x60, 0, 0} }))),
		"type values":      module(section(sectionType, vec(maxModuleTypeValues/maxTypeValues, func(int) []byte { return values }))),
		"imports":          module(voidType, section(sectionImport, vec(maxImports, func(int) []byte { return []byte{1, 'm', 1, 'f', 0, 0} }))),
		"functions":        module(voidType, functions(maxFunctions, nil)),
		"exports":          module(voidType, section(sectionFunction, []byte{1, 0}), section(sectionExport, vec(maxExports, func(i int) []byte { return append(append([]byte{4}, name4(i)...), 0, 0) })), section(sectionCode, []byte{1, 2, 0, 0x0b})),
		"globals":          module(section(sectionGlobal, vec(maxGlobals, func(int) []byte { return []byte{0x7f, 0, 0x41, 0, 0x0b} }))),
		"element segments": module(section(sectionElement, vec(maxElementSegments, func(int) []byte { return []byte{1, 0, 0} }))),
		"element entries":  module(voidType, section(sectionFunction, []byte{1, 0}), section(sectionTable, append([]byte{1, 0x70, 0}, uleb(maxElementEntries)...)), section(sectionElement, append([]byte{1, 0, 0x41, 0, 0x0b}, vec(maxElementEntries, func(int) []byte { return []byte{0} })...)), section(sectionCode, []byte{1, 2, 0, 0x0b})),
		"data segments":    module(oneMemory, section(sectionDataCount, uleb(maxDataSegments)), section(sectionData, vec(maxDataSegments, func(int) []byte { return []byte{1, 0} }))),
		"custom sections":  module(repeat(section(sectionCustom, []byte{1, 'c', 0}), maxCustomSections*5)),
		"function names":   module(nameSection(1, vec(maxNames, func(i int) []byte { return append(uleb(uint64(i)), 1, 'f') }))),
		"calls":            module(voidType, maxed(maxFunctionCalls, maxModuleCalls/maxFunctionCalls, callUnit)),
		"indirect calls":   module(voidType, maxed(maxFunctionIndirectCalls, maxModuleIndirectCalls/maxFunctionIndirectCalls, indirectCallUnit, oneTable)),
		"largest function": module(voidType, functions(1, repeat(constDropUnit, maxFunctionBytes-16))),
	}
}

// sortedNames lists a module map's names in order, for stable test output.
func sortedNames(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }

// Every section kind whose entries cost the decoder or the compiler more than the load bound
// allows a module byte is counted and refused past its cap, naming the section and the cap;
// at the cap it is let through (TestLoadMemoryStaysWithinTheBound loads both).
func TestEverySectionKindIsCapped(t *testing.T) {
	dense := denseModules(denseSize)
	for _, name := range sortedNames(dense) {
		t.Run(name, func(t *testing.T) {
			_, err := Limit("dense.wasm", dense[name])
			switch name {
			case "const and drop", "data bytes", "custom bytes":
				assert.NoError(t, err, "what costs the host less than the bound per byte is not counted")
				return
			}
			require.Error(t, err)
			assert.Regexp(t, `^wasm plugin dense.wasm: .*(the host allows at most \d+|more than \d+)`, err.Error())
		})
	}
	caps := atTheCaps()
	for _, name := range sortedNames(caps) {
		_, err := Limit("caps.wasm", caps[name])
		assert.NoError(t, err, "%s at the cap", name)
	}
	big := make([]byte, MaxModuleBytes+1)
	copy(big, wasmHeader)
	_, err := Limit("big.wasm", big)
	require.Error(t, err)
	assert.Equal(t, "wasm plugin big.wasm: is 16777217 bytes; the host loads modules of at most 16777216 bytes (16 MiB)", err.Error())
}
