package admission

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// Structural limits a module must respect before the host compiles it. WebAssembly declares
// tables, vectors, strings and locals by count or size, and the decoder and compiler allocate
// what is declared: a few bytes can ask the host for gigabytes, outside the linear memory limit.
// Real plugins are far below these: the Go plugins of this repository (3.5-4.2 MB each) have at
// most 2,550 functions, one table of about 7,000 entries, at most a few dozen locals per function
// and at most 10,700 locals in all (docs/reliability.md, "Bounded load").
const (
	// MaxModuleBytes caps the module itself: every bound below is per module, and the host's
	// memory while it loads one grows with its size (docs/reliability.md, "Bounded load").
	MaxModuleBytes = 16 << 20
	// MaxTableEntries caps each table (8 bytes an entry on the host), at instantiation and when
	// the guest grows it with table.grow.
	MaxTableEntries = 1 << 20
	maxTables       = 4
	// MaxLocals caps the locals of one function.
	MaxLocals = 1 << 16
	// maxModuleLocals caps the locals of all functions together: the compiler keeps state per
	// local of every function it compiles, so 2,000 unused functions of 65,536 locals each (a
	// valid 17 KB module) would cost a gigabyte on every run.
	maxModuleLocals = 1 << 18
	// maxFunctions caps the functions a module defines (and the entries of its function
	// section); every one costs the decoder and the compiler a fixed record however small its
	// body.
	maxFunctions = 1 << 16

	// The entries below each cost the decoder a record of 100-600 bytes for as little as one to
	// five bytes of module, far past the 16 bytes a module byte the load bound allows (measured:
	// a type section of 3-byte types, 193 bytes allocated a byte), so each kind is counted. The
	// plugins of this repository have at most 19 types, 41 imports, 10 exports, 8 globals, one
	// element segment of 2,699 entries and 47,006 data segments.
	maxTypes = 1 << 12
	// maxTypeValues caps the parameters and results of one function type: the decoder's work
	// per type grows with their square (one type of a million parameters allocated over a
	// terabyte in all); maxModuleTypeValues those of every type together.
	maxTypeValues       = 1000
	maxModuleTypeValues = 1 << 13
	maxImports          = 1 << 12
	maxExports          = 1 << 12
	maxGlobals          = 1 << 12
	maxElementSegments  = 1 << 12
	// maxElementEntries caps the entries of all element segments (73 bytes each to the decoder).
	maxElementEntries = 1 << 17
	maxDataSegments   = 1 << 17
	maxTags           = 1 << 12
	// maxCustomSections caps custom sections: the shaping keeps a record per section.
	maxCustomSections = 1 << 10
	// maxNames caps the function names and the local names of a "name" section, each.
	maxNames = maxFunctions + maxImports
)

// Section ids of the binary format.
const (
	sectionCustom    = 0
	sectionType      = 1
	sectionImport    = 2
	sectionFunction  = 3
	sectionTable     = 4
	sectionMemory    = 5
	sectionGlobal    = 6
	sectionExport    = 7
	sectionStart     = 8
	sectionElement   = 9
	sectionCode      = 10
	sectionData      = 11
	sectionDataCount = 12
	sectionTag       = 13
)

var sectionNames = [...]string{"custom", "type", "import", "function", "table", "memory", "global",
	"export", "start", "element", "code", "data", "data count", "tag"}

// Limit refuses a module whose declared counts and sizes would make the host allocate
// memory the sandbox does not bound, and gives every table a maximum of at most MaxTableEntries
// so table.grow fails inside the guest instead of growing the host.
//
// It walks every section the way the decoder will and checks every count and size against the
// bytes that remain before the decoder sees it: each vector entry takes at least one byte and
// each string or byte vector is as long as it says, so nothing the decoder allocates from a
// declared number can exceed a small multiple of the module's own size. What it cannot read is
// refused rather than left to the decoder, which would allocate first and fail after. Function
// bodies' instructions are not walked: the compiler reads them from bytes already in memory.
func Limit(path string, b []byte) (Shape, error) {
	return shapeModule(path, b, true)
}

// LimitCompiled is Limit for a module this node has loaded before (its
// metadata record exists, see wasm.Load): the function bodies' control flow, which only bounds the
// compile, passed that load's walk and is not walked again (and with a warm cache nothing is
// compiled). Everything else is checked and rewritten as Limit does, so the compiled
// bytes, and with them the cache key, are the same.
func LimitCompiled(path string, b []byte) (Shape, error) {
	return shapeModule(path, b, false)
}

// Shape is a module as the host compiles it, and the data the host writes into each instance's
// memory itself (liftable): the module without that data section, and the section's body in the
// binary format's encoding, merged (planData), which is the body of the module's data file
// (modulecache.Lifted). Data is nil when the module keeps its data section.
type Shape struct {
	Module, Data []byte
	// Calls and IndirectCalls are what the function bodies call, when they were walked: each
	// costs the compiler memory while it compiles its function (compile.go).
	Calls, IndirectCalls uint64
}

func shapeModule(path string, b []byte, walkBodies bool) (Shape, error) {
	refuse := func(format string, args ...any) error {
		return &LoadError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < 8 || string(b[:8]) != "\x00asm\x01\x00\x00\x00" {
		// The decoder refuses the header without allocating, and the header is all it reads. A
		// copy: the result never shares the caller's bytes (a mapped file, see ReadModule).
		return Shape{Module: slices.Clone(b[:min(len(b), 8)])}, nil
	}
	if len(b) > MaxModuleBytes {
		return Shape{}, refuse("is %d bytes; the host loads modules of at most %d bytes (%d MiB)", len(b), MaxModuleBytes, MaxModuleBytes>>20)
	}
	s := &structure{walkBodies: walkBodies}
	customs := 0
	// The sections as they will be written, then one buffer of the exact size: the module is
	// megabytes, and every copy of it is host memory on every run. A merged data section is
	// written straight into it (data).
	parts := [][]byte{b[:8]}
	section := func(id byte, body []byte) {
		parts = append(parts, binary.AppendUvarint([]byte{id}, uint64(len(body))), body)
	}
	var data, lifted *dataPlan
	dataAt := -1
	for pos := 8; pos < len(b); {
		id := b[pos]
		size, n := uvarint32(b[pos+1:])
		if n <= 0 {
			return Shape{}, refuse("section header at offset %d is malformed", pos)
		}
		if size > uint64(len(b)-pos-1-n) {
			return Shape{}, refuse("section %d at offset %d declares %d bytes but only %d remain", id, pos, size, len(b)-pos-1-n)
		}
		whole := b[pos : pos+1+n+int(size)]
		body := b[pos+1+n : pos+1+n+int(size)]
		pos += len(whole)
		if int(id) >= len(sectionNames) {
			return Shape{}, refuse("section id %d at offset %d is not a WebAssembly section", id, pos-len(whole))
		}
		if id == sectionCustom {
			if customs++; customs > maxCustomSections {
				return Shape{}, refuse("has more than %d custom sections", maxCustomSections)
			}
		}
		if id == sectionTable {
			table, err := limitTables(body)
			if err != nil {
				return Shape{}, refuse("%v", err)
			}
			section(sectionTable, table)
			continue
		}
		if err := s.check(id, body); err != nil {
			if id == sectionCustom {
				return Shape{}, refuse("custom section %v", err)
			}
			return Shape{}, refuse("%s section: %v", sectionNames[id], err)
		}
		if id == sectionData {
			if plan, ok := s.planData(body, len(b)); ok {
				if s.liftable(plan) {
					lifted = plan
					continue
				}
				if plan.merges() {
					data, dataAt = plan, len(parts)
					parts = append(parts, nil)
					continue
				}
			}
		}
		parts = append(parts, whole)
	}
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if data != nil {
		size += data.size()
	}
	out := make([]byte, 0, size)
	for i, p := range parts {
		if i == dataAt {
			out = data.appendTo(out)
			continue
		}
		out = append(out, p...)
	}
	sh := Shape{Module: out, Calls: s.calls, IndirectCalls: s.indirectCalls}
	if lifted != nil {
		sh.Data = lifted.appendBody(make([]byte, 0, lifted.bodySize))
	}
	return sh, nil
}

// structure carries the module-wide totals across sections.
type structure struct {
	functions, locals uint64
	// typeValues, elementEntries: the parameters and results of every type, the entries of every
	// element segment; calls and indirectCalls those of every function body (checkBody).
	typeValues, elementEntries, calls, indirectCalls uint64
	// importsMemory and dataCount decide whether data segments may be merged (planData);
	// with memories, memoryMin and start, whether they may be lifted out (liftable).
	importsMemory, dataCount, start bool
	// memories is how many memories the module defines; memoryMin the first one's minimum pages.
	memories, memoryMin uint64
	// walkBodies walks each function body's instructions (checkBody).
	walkBodies bool
}

func (s *structure) check(id byte, body []byte) error {
	r := &reader{b: body}
	var err error
	switch id {
	case sectionCustom:
		return checkCustom(r)
	case sectionStart:
		s.start = true
		r.leb()
	case sectionDataCount:
		s.dataCount = true
		r.leb()
	case sectionType:
		err = r.eachUpTo("type", maxTypes, func(i uint64) error { return s.checkType(r) })
	case sectionImport:
		err = r.eachUpTo("import", maxImports, func(i uint64) error {
			memory, err := checkImport(r)
			s.importsMemory = s.importsMemory || memory
			return err
		})
	case sectionFunction:
		err = r.eachUpTo("function", maxFunctions, func(i uint64) error { r.leb(); return nil })
	case sectionMemory:
		err = r.each("memory", func(i uint64) error {
			if least := r.limits(); i == 0 {
				s.memoryMin = least
			}
			s.memories++
			return nil
		})
	case sectionGlobal:
		err = r.eachUpTo("global", maxGlobals, func(i uint64) error {
			r.valType()
			r.byte() // mutability
			return skipConstExpr(r)
		})
	case sectionExport:
		err = r.eachUpTo("export", maxExports, func(i uint64) error {
			r.bytes()
			r.byte() // kind
			r.leb()
			return nil
		})
	case sectionElement:
		err = s.checkElements(r)
	case sectionCode:
		err = s.checkCode(r)
	case sectionData:
		err = r.eachUpTo("data segment", maxDataSegments, func(i uint64) error { return checkData(r) })
	case sectionTag:
		err = r.eachUpTo("tag", maxTags, func(i uint64) error {
			r.byte() // attribute
			r.leb()
			return nil
		})
	}
	if err != nil {
		return err
	}
	if r.bad {
		return fmt.Errorf("is malformed: an entry runs past the end of its %d bytes", len(body))
	}
	if len(r.b) != 0 {
		return fmt.Errorf("has %d bytes after its last entry", len(r.b))
	}
	return nil
}

// checkCode checks each function body's size and declared locals, and the module's totals.
func (s *structure) checkCode(r *reader) error {
	return r.each("function body", func(i uint64) error {
		size := r.leb()
		if r.bad || size > uint64(len(r.b)) {
			return fmt.Errorf("function body %d declares %d bytes but only %d remain", i, size, len(r.b))
		}
		fn := &reader{b: r.b[:size]}
		r.b = r.b[size:]
		if s.functions++; s.functions > maxFunctions {
			return fmt.Errorf("defines more than %d functions", maxFunctions)
		}
		// Not fn.each: its name for the error is text per function, made only when refused.
		before := *fn
		n, err := fn.count("")
		if err != nil {
			*fn = before
			_, err = fn.count(fmt.Sprintf("the locals of function body %d", i))
			return err
		}
		var total uint64
		for j := uint64(0); j < n && !fn.bad; j++ {
			c := fn.leb()
			fn.valType()
			if c > MaxLocals-total {
				return fmt.Errorf("function body %d declares more than %d locals", i, MaxLocals)
			}
			total += c
			if s.locals += c; s.locals > maxModuleLocals {
				return fmt.Errorf("function bodies declare more than %d locals in all", maxModuleLocals)
			}
		}
		if fn.bad {
			return fmt.Errorf("function body %d: its locals run past its %d bytes", i, size)
		}
		if !s.walkBodies {
			return nil
		}
		return s.checkBody(i, fn.b)
	})
}

// limitTables checks a table section's entries and returns the section body with every maximum
// capped. An entry it cannot read is refused: an encoding it does not know could carry a table
// past the cap.
func limitTables(body []byte) ([]byte, error) {
	count, n := uvarint32(body)
	if n <= 0 {
		return nil, fmt.Errorf("table section: malformed count")
	}
	if count > maxTables {
		return nil, fmt.Errorf("declares %d tables; the host allows at most %d", count, maxTables)
	}
	b := body[n:]
	out := binary.AppendUvarint(nil, count)
	for i := range count {
		if len(b) < 2 || (b[0] != 0x70 && b[0] != 0x6f) || b[1] > 1 {
			return nil, fmt.Errorf("table %d is not a funcref or externref table with 32-bit limits", i)
		}
		refType, hasMax := b[0], b[1] == 1
		b = b[2:]
		minimum, n := uvarint32(b)
		if n <= 0 {
			return nil, fmt.Errorf("table %d has malformed limits", i)
		}
		b = b[n:]
		maximum := uint64(MaxTableEntries)
		if hasMax {
			declared, n := uvarint32(b)
			if n <= 0 {
				return nil, fmt.Errorf("table %d has malformed limits", i)
			}
			b = b[n:]
			maximum = min(maximum, declared)
		}
		if minimum > MaxTableEntries {
			return nil, fmt.Errorf("table %d has %d entries; the host allows at most %d", i, minimum, MaxTableEntries)
		}
		maximum = max(maximum, minimum)
		out = append(out, refType, 1)
		out = binary.AppendUvarint(out, minimum)
		out = binary.AppendUvarint(out, maximum)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("table section has %d bytes after its last entry", len(b))
	}
	return out, nil
}

// uvarint32 reads an unsigned LEB128 of at most 5 bytes, as the decoder reads every count and
// size; a longer or overflowing one is malformed (n <= 0).
func uvarint32(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || n > 5 || v > 1<<32-1 {
		return 0, -1
	}
	return v, n
}

// reader walks a section the way the decoder will, so a count can be checked against the bytes
// left before the decoder allocates for it. Any read past the end marks the walk bad, and the
// section is refused.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) byte() byte {
	if len(r.b) == 0 || r.bad {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) leb() uint64 {
	if r.bad {
		return 0
	}
	if len(r.b) > 0 && r.b[0] < 0x80 { // most counts, indices and immediates fit one byte
		v := r.b[0]
		r.b = r.b[1:]
		return uint64(v)
	}
	v, n := uvarint32(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

// sleb skips a signed LEB128 (constants, heap and block types) of up to 10 bytes.
func (r *reader) sleb() {
	for i := 0; i < 10; i++ {
		if r.byte()&0x80 == 0 || r.bad {
			return
		}
	}
	r.bad = true
}

func (r *reader) skip(n uint64) {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return
	}
	r.b = r.b[n:]
}

// bytes skips a length-prefixed byte string (a name or a data segment's contents).
func (r *reader) bytes() {
	r.skip(r.leb())
}

// count reads a vector count and reports whether it can be true: every entry takes a byte.
func (r *reader) count(what string) (uint64, error) {
	n := r.leb()
	if !r.bad && n > uint64(len(r.b)) {
		return 0, fmt.Errorf("%s declares %d entries but only %d bytes remain", what, n, len(r.b))
	}
	return n, nil
}

// each reads a vector count, checks it against the bytes left and calls f for every entry until
// one fails or the walk runs out of bytes.
func (r *reader) each(what string, f func(i uint64) error) error {
	n, err := r.count(what)
	if err != nil {
		return err
	}
	for i := uint64(0); i < n && !r.bad; i++ {
		if err := f(i); err != nil {
			return err
		}
	}
	return nil
}

// eachUpTo is each for a vector of at most limit entries: what (in the singular) names them.
func (r *reader) eachUpTo(what string, limit uint64, f func(i uint64) error) error {
	before := *r
	n, err := r.count(what)
	if err != nil {
		return err
	}
	if n > limit {
		return fmt.Errorf("declares %d %ss; the host allows at most %d", n, what, limit)
	}
	*r = before
	return r.each(what, f)
}

// valType skips a value type: one byte, or a reference prefix and its heap type.
func (r *reader) valType() {
	if t := r.byte(); t == 0x63 || t == 0x64 {
		r.sleb()
	}
}

// limits reads memory or table limits (flags 0-3: with or without a maximum, shared or not) and
// returns the minimum.
func (r *reader) limits() uint64 {
	flags := r.byte()
	if flags > 3 {
		r.bad = true
		return 0
	}
	least := r.leb()
	if flags&1 != 0 {
		r.leb()
	}
	return least
}

// checkType checks one function type, or a recursion group of them, and counts their
// parameters and results.
func (s *structure) checkType(r *reader) error {
	functype := func() error {
		if r.byte() != 0x60 && !r.bad {
			return fmt.Errorf("has a type that is not a function type")
		}
		values := uint64(0)
		for _, what := range []string{"the parameters of a type", "the results of a type"} {
			n, err := r.count(what)
			if err != nil {
				return err
			}
			if values += n; values > maxTypeValues {
				return fmt.Errorf("has a type of more than %d parameters and results", maxTypeValues)
			}
			for range n {
				if r.bad {
					break
				}
				r.valType()
			}
		}
		if s.typeValues += values; s.typeValues > maxModuleTypeValues {
			return fmt.Errorf("has more than %d parameters and results in all its types", maxModuleTypeValues)
		}
		return nil
	}
	if len(r.b) > 0 && r.b[0] == 0x4e { // recursion group
		r.byte()
		return r.eachUpTo("type", maxTypes, func(uint64) error { return functype() })
	}
	return functype()
}

// checkImport checks one import and reports whether it is a memory.
func checkImport(r *reader) (memory bool, err error) {
	r.bytes() // module
	r.bytes() // name
	switch kind := r.byte(); kind {
	case 0: // function
		r.leb()
	case 1: // table
		r.valType()
		r.limits()
	case 2: // memory
		r.limits()
		return true, nil
	case 3: // global
		r.valType()
		r.byte()
	case 4: // tag
		r.byte()
		r.leb()
	default:
		if !r.bad {
			return false, fmt.Errorf("has an import of unknown kind %d", kind)
		}
	}
	return false, nil
}

// MaxDataGap is the largest run of zeros planData writes between two data segments.
const MaxDataGap = 4096

// planData plans a data section (body already checked) whose active segments are merged where
// they are at most MaxDataGap bytes apart, the gaps written as zeros, and reports whether the
// section may be rewritten at all; the plan writes the section straight into the shaped module
// (dataPlan.appendTo), or, lifted (liftable), apart from it (appendBody).
//
// Go's linker writes a segment for every run of data between runs of zeros, which makes a 4 MB
// plugin carry about 47,000 segments: wazero decodes each one in every process and copies each
// one into every instance it starts, a few milliseconds per instance, and the decoded segments
// cost the host megabytes. Merged, the same bytes land in memory at the same places. That holds
// only where a segment's place and its index mean nothing else: the memory is the module's own,
// and so zeros where no segment writes (an imported memory may hold anything there); no data
// count section, without which no memory.init or data.drop can name a segment by its index;
// every segment active on memory 0 at a constant offset; and no two overlapping, so the order
// they are written in does not matter. Anything else is left as it is. The zeros written are
// bounded by moduleSize, so a module of a few scattered bytes cannot make the host allocate
// gigabytes (at most the module's size, or 1 MiB for a smaller one).
func (s *structure) planData(body []byte, moduleSize int) (*dataPlan, bool) {
	if s.importsMemory || s.dataCount {
		return nil, false
	}
	r := &reader{b: body}
	n := r.leb()
	if r.bad || n < 1 {
		return nil, false
	}
	// Segments by their place in body, not as slices of it: no pointers for the collector to
	// follow in a list of 47,000.
	segs := make([]dataSegment, 0, n)
	for range n {
		if r.leb() != 0 || r.byte() != 0x41 { // active on memory 0; i32.const
			return nil, false
		}
		offset, k := binary.Uvarint(r.b)
		// A signed LEB128 of a non-negative i32 has bit 6 of its last byte clear.
		if k <= 0 || k > 5 || r.b[k-1]&0x40 != 0 || offset > 1<<31-1 {
			return nil, false
		}
		r.skip(uint64(k))
		if r.byte() != 0x0b {
			return nil, false
		}
		size := r.leb()
		start := len(body) - len(r.b)
		r.skip(size)
		if r.bad {
			return nil, false
		}
		segs = append(segs, dataSegment{offset: offset, start: start, end: start + int(size)})
	}
	// Go's linker writes them in order already; sorting is for everyone else.
	byOffset := func(a, b dataSegment) int { return cmp.Compare(a.offset, b.offset) }
	if !slices.IsSortedFunc(segs, byOffset) {
		slices.SortStableFunc(segs, byOffset)
	}
	// Where each merged segment starts and how long it is; appendTo writes them.
	plan := &dataPlan{body: body, segs: segs,
		runs: []dataRun{{first: 0, offset: segs[0].offset, size: uint64(segs[0].end - segs[0].start)}}}
	zeros := 0
	for i, sg := range segs[1:] {
		last := &plan.runs[len(plan.runs)-1]
		end := last.offset + last.size
		if sg.offset < end {
			return nil, false // overlapping: the later segment wins, so their order matters
		}
		gap := sg.offset - end
		if gap > MaxDataGap || zeros+int(gap) > max(moduleSize, 1<<20) {
			plan.runs = append(plan.runs, dataRun{first: i + 1, offset: sg.offset, size: uint64(sg.end - sg.start)})
			continue
		}
		zeros += int(gap)
		last.size += gap + uint64(sg.end-sg.start)
	}
	plan.merged = len(plan.runs) < len(segs)
	plan.bodySize = uvarintLen(uint64(len(plan.runs)))
	for _, rn := range plan.runs {
		plan.bodySize += 2 + slebLen(int64(rn.offset)) + 1 + uvarintLen(rn.size) + int(rn.size)
	}
	return plan, true
}

// dataSegment is an active data segment of a data section: where it goes in memory, and where
// its bytes are in the section's body.
type dataSegment struct {
	offset     uint64
	start, end int
}

// dataRun is one merged segment: the first of the segments it holds, where it goes and its size.
type dataRun struct {
	first        int
	offset, size uint64
}

// dataPlan is a merged data section, written by appendTo.
type dataPlan struct {
	body     []byte
	segs     []dataSegment
	runs     []dataRun
	bodySize int
	merged   bool
}

// merges reports whether the plan writes fewer segments than the section has.
func (d *dataPlan) merges() bool { return d.merged }

// liftable reports whether the planned data may leave the module, for the host to write into
// each instance's memory itself (modulecache.Lifted.Apply) before anything in the guest runs.
//
// wazero keeps a decoded copy of every data segment for the life of the compiled module, and
// decodes it from the shaped module's pages in every hook run, while the compiled code is read
// in: for a 4 MB Go plugin that is its 2 MB of merged data twice over (the mapped pages and the
// copy) at the moment the process peaks. Lifted, the data is read from its own cache file into
// each instance as it starts, and costs the load nothing (docs/benchmarks.md, round 6).
//
// The guest cannot tell only where planData could merge, and nothing runs in the guest before
// the host writes the data: no start section (its function would run inside the instantiation,
// before the data is there; a reactor's _initialize is an export the host calls after), and the
// module's one memory holds every segment at its minimum size, so the writes cannot fail where
// wazero's would have failed the instantiation with its own error (those modules keep their
// section, and that error).
func (s *structure) liftable(d *dataPlan) bool {
	if s.start || s.memories != 1 {
		return false
	}
	for _, rn := range d.runs {
		if rn.offset+rn.size > s.memoryMin*pageSize {
			return false
		}
	}
	return true
}

// pageSize is a WebAssembly memory page.
const pageSize = 1 << 16

// appendTo appends the merged data section, header included, to dst.
func (d *dataPlan) appendTo(dst []byte) []byte {
	dst = append(dst, sectionData)
	dst = binary.AppendUvarint(dst, uint64(d.bodySize))
	return d.appendBody(dst)
}

// appendBody appends the merged data section's body (its segment count and segments) to dst.
func (d *dataPlan) appendBody(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(d.runs)))
	for i, rn := range d.runs {
		dst = append(dst, 0, 0x41)
		dst = appendSleb(dst, int64(rn.offset))
		dst = append(dst, 0x0b)
		dst = binary.AppendUvarint(dst, rn.size)
		next := len(d.segs)
		if i+1 < len(d.runs) {
			next = d.runs[i+1].first
		}
		at := rn.offset
		for _, sg := range d.segs[rn.first:next] {
			dst = appendZeros(dst, int(sg.offset-at))
			dst = append(dst, d.body[sg.start:sg.end]...)
			at = sg.offset + uint64(sg.end-sg.start)
		}
	}
	return dst
}

// size is the length appendTo appends.
func (d *dataPlan) size() int {
	return 1 + uvarintLen(uint64(d.bodySize)) + d.bodySize
}

// appendZeros appends n zero bytes.
func appendZeros(b []byte, n int) []byte {
	b = slices.Grow(b, n)
	b = b[:len(b)+n]
	clear(b[len(b)-n:])
	return b
}

func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

func slebLen(v int64) int { return len(appendSleb(make([]byte, 0, 10), v)) }

// appendSleb appends v as a signed LEB128.
func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func checkData(r *reader) error {
	switch flags := r.leb(); flags {
	case 0:
		if err := skipConstExpr(r); err != nil {
			return err
		}
	case 1:
	case 2:
		r.leb() // memory index
		if err := skipConstExpr(r); err != nil {
			return err
		}
	default:
		if !r.bad {
			return fmt.Errorf("has a data segment with flags %d", flags)
		}
	}
	size := r.leb()
	if !r.bad && size > uint64(len(r.b)) {
		return fmt.Errorf("a data segment declares %d bytes but only %d remain", size, len(r.b))
	}
	r.skip(size)
	return nil
}

// checkCustom checks a custom section's name and, for the "name" section the decoder reads to
// name functions and locals, its counts: function names (1) and local names (2); other
// subsections are skipped by their size, as the decoder does. Other custom sections are copied or
// skipped by the decoder within their size, which is already checked.
func checkCustom(r *reader) error {
	size := r.leb()
	if !r.bad && size > uint64(len(r.b)) {
		return fmt.Errorf("name declares %d bytes but only %d remain", size, len(r.b))
	}
	if r.bad || size != 4 || string(r.b[:4]) != "name" {
		r.skip(size)
		r.b = nil
		return nil
	}
	r.skip(4)
	for !r.bad && len(r.b) > 0 {
		id := r.byte()
		size := r.leb()
		if !r.bad && size > uint64(len(r.b)) {
			return fmt.Errorf("\"name\": subsection %d declares %d bytes but only %d remain", id, size, len(r.b))
		}
		switch id {
		case 0:
			r.bytes()
		case 1, 2:
			names := 0
			name := func() error {
				if names++; names > maxNames {
					return fmt.Errorf("\"name\": subsection %d names more than %d functions or locals", id, maxNames)
				}
				r.leb()
				r.bytes()
				return nil
			}
			err := r.each(fmt.Sprintf("\"name\": subsection %d", id), func(uint64) error {
				if id == 1 {
					return name()
				}
				// A function's entry costs the decoder a record of its own, locals or none.
				if names++; names > maxNames {
					return fmt.Errorf("\"name\": subsection %d names more than %d functions or locals", id, maxNames)
				}
				r.leb()
				return r.each("\"name\": the local names of a function", func(uint64) error { return name() })
			})
			if err != nil {
				return err
			}
		default:
			r.skip(size)
		}
	}
	if r.bad {
		return fmt.Errorf("\"name\" is malformed")
	}
	return nil
}

// checkElements checks the vector counts inside element segments, in each of the eight
// encodings. A constant expression it cannot read is refused: the decoder accepts no more than
// these, and one it could read past would reach a count unchecked.
func (s *structure) checkElements(r *reader) error {
	return r.eachUpTo("element segment", maxElementSegments, func(i uint64) error {
		flags := r.leb()
		if flags > 7 {
			return fmt.Errorf("element segment %d has flags %d", i, flags)
		}
		if flags&2 != 0 && flags&1 == 0 {
			r.leb() // table index
		}
		if flags&1 == 0 {
			if err := skipConstExpr(r); err != nil {
				return fmt.Errorf("element segment %d: %v", i, err)
			}
		}
		exprs := flags&4 != 0
		if flags&3 != 0 {
			if exprs {
				r.valType()
			} else {
				r.byte() // element kind
			}
		}
		before := *r
		n, err := r.count(fmt.Sprintf("element segment %d", i))
		if err != nil {
			return err
		}
		if s.elementEntries += n; s.elementEntries > maxElementEntries {
			return fmt.Errorf("element segments hold more than %d entries in all", maxElementEntries)
		}
		*r = before
		return r.each(fmt.Sprintf("element segment %d", i), func(uint64) error {
			if !exprs {
				r.leb()
				return nil
			}
			if err := skipConstExpr(r); err != nil {
				return fmt.Errorf("element segment %d: %v", i, err)
			}
			return nil
		})
	})
}

// skipConstExpr reads one constant expression up to its end.
func skipConstExpr(r *reader) error {
	for !r.bad {
		switch op := r.byte(); op {
		case 0x0b: // end
			return nil
		case 0x41, 0x42: // i32.const, i64.const
			r.sleb()
		case 0x23, 0xd2: // global.get, ref.func
			r.leb()
		case 0x43: // f32.const
			r.skip(4)
		case 0x44: // f64.const
			r.skip(8)
		case 0xd0: // ref.null
			r.sleb()
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // extended constant arithmetic
		case 0xfd: // v128.const
			if r.leb() != 12 {
				return fmt.Errorf("constant expression has a vector opcode other than v128.const")
			}
			r.skip(16)
		default:
			if !r.bad {
				return fmt.Errorf("constant expression has opcode 0x%02x", op)
			}
		}
	}
	return nil
}
