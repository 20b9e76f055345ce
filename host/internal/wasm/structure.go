package wasm

import (
	"encoding/binary"
	"fmt"
)

// Structural limits a module must respect before the host compiles it. WebAssembly declares
// tables, vectors and locals by count, and the decoder and runtime allocate what is declared: a
// few bytes can ask the host for gigabytes, outside the linear memory limit. Real plugins are far
// below these (a Go plugin has one table of about 7,000 entries and at most a few dozen locals
// per function).
const (
	// maxTableEntries caps each table (8 bytes an entry on the host), at instantiation and when
	// the guest grows it with table.grow.
	maxTableEntries = 1 << 20
	maxTables       = 4
	// maxLocals caps the locals of one function.
	maxLocals = 1 << 16
)

// Section ids of the binary format.
const (
	sectionCustom    = 0
	sectionTable     = 4
	sectionStart     = 8
	sectionElement   = 9
	sectionCode      = 10
	sectionDataCount = 12
	sectionTag       = 13
)

// limitStructure refuses a module whose declared sizes would make the host allocate memory the
// sandbox does not bound, and gives every table a maximum of at most maxTableEntries so
// table.grow fails inside the guest instead of growing the host. Bytes it cannot parse are left
// for the compiler to reject.
func limitStructure(path string, b []byte) ([]byte, error) {
	refuse := func(format string, args ...any) error {
		return &LoadError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(b) < 8 {
		return b, nil
	}
	out := append(make([]byte, 0, len(b)+16), b[:8]...)
	for pos := 8; pos < len(b); {
		id := b[pos]
		size, n := binary.Uvarint(b[pos+1:])
		if n <= 0 || size > uint64(len(b)-pos-1-n) {
			return append(out, b[pos:]...), nil
		}
		section := b[pos : pos+1+n+int(size)]
		body := b[pos+1+n : pos+1+n+int(size)]
		pos += len(section)
		if id == sectionCustom {
			if err := checkNameSection(body); err != nil {
				return nil, refuse("custom section \"name\": %v", err)
			}
		}
		// Every other known section is a vector; the start section is one function index.
		if id == sectionCustom || id == sectionStart || id == sectionDataCount || id > sectionTag {
			out = append(out, section...)
			continue
		}
		count, n := binary.Uvarint(body)
		// Every entry takes at least one byte, so a larger count is one the decoder would
		// allocate for before finding the section too short.
		if n > 0 && count > uint64(len(body)-n) {
			return nil, refuse("section %d declares %d entries in %d bytes", id, count, len(body))
		}
		switch {
		case n <= 0:
		case id == sectionTable:
			table, err := limitTables(body[n:], count)
			if err != nil {
				return nil, refuse("%v", err)
			}
			out = append(out, sectionTable)
			out = binary.AppendUvarint(out, uint64(len(table)))
			out = append(out, table...)
			continue
		case id == sectionCode:
			if err := limitLocals(body[n:], count); err != nil {
				return nil, refuse("%v", err)
			}
		case id == sectionElement:
			if err := checkElements(body[n:], count); err != nil {
				return nil, refuse("%v", err)
			}
		}
		out = append(out, section...)
	}
	return out, nil
}

// limitTables checks a table section's entries and returns the section body with every maximum
// capped. An entry it cannot read is refused: an encoding it does not know could carry a table
// past the cap.
func limitTables(b []byte, count uint64) ([]byte, error) {
	if count > maxTables {
		return nil, fmt.Errorf("declares %d tables; the host allows at most %d", count, maxTables)
	}
	out := binary.AppendUvarint(nil, count)
	for i := range count {
		if len(b) < 2 || (b[0] != 0x70 && b[0] != 0x6f) || b[1] > 1 {
			return nil, fmt.Errorf("table %d is not a funcref or externref table with 32-bit limits", i)
		}
		refType, hasMax := b[0], b[1] == 1
		b = b[2:]
		minimum, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("table %d has malformed limits", i)
		}
		b = b[n:]
		maximum := uint64(maxTableEntries)
		if hasMax {
			declared, n := binary.Uvarint(b)
			if n <= 0 {
				return nil, fmt.Errorf("table %d has malformed limits", i)
			}
			b = b[n:]
			maximum = min(maximum, declared)
		}
		if minimum > maxTableEntries {
			return nil, fmt.Errorf("table %d has %d entries; the host allows at most %d", i, minimum, maxTableEntries)
		}
		maximum = max(maximum, minimum)
		out = append(out, refType, 1)
		out = binary.AppendUvarint(out, minimum)
		out = binary.AppendUvarint(out, maximum)
	}
	return append(out, b...), nil
}

// limitLocals checks the locals each function body declares.
func limitLocals(b []byte, count uint64) error {
	for i := range count {
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil
		}
		fn := b[n : n+int(size)]
		b = b[n+int(size):]
		decls, n := binary.Uvarint(fn)
		if n <= 0 || decls > uint64(len(fn)-n) {
			return nil
		}
		fn = fn[n:]
		var total uint64
		for range decls {
			c, n := binary.Uvarint(fn)
			if n <= 0 || n >= len(fn) {
				return nil
			}
			if c > maxLocals-total {
				return fmt.Errorf("function body %d declares more than %d locals", i, maxLocals)
			}
			total += c
			typ := fn[n]
			fn = fn[n+1:]
			if typ == 0x63 || typ == 0x64 { // (ref null? ht): a LEB128 heap type follows
				_, n := binary.Uvarint(fn)
				if n <= 0 {
					return nil
				}
				fn = fn[n:]
			}
		}
	}
	return nil
}

// reader walks a section the way the decoder will, so a count can be checked against the bytes
// left before the decoder allocates for it. Any read past the end stops the walk: the decoder
// stops at the same place, before anything further is allocated.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) byte() byte {
	if r.bad || len(r.b) == 0 {
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
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) skip(n uint64) {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return
	}
	r.b = r.b[n:]
}

// count reads a vector count and reports whether it can be true: every entry takes a byte.
func (r *reader) count(what string) (uint64, error) {
	n := r.leb()
	if !r.bad && n > uint64(len(r.b)) {
		return 0, fmt.Errorf("%s declares %d entries in %d bytes", what, n, len(r.b))
	}
	return n, nil
}

// checkNameSection checks the counts of the "name" custom section, which the decoder reads to
// name functions and locals: function names (1) and local names (2); other subsections are
// skipped by their size, as the decoder does.
func checkNameSection(body []byte) error {
	r := &reader{b: body}
	if name := r.leb(); r.bad || name != 4 || len(r.b) < 4 || string(r.b[:4]) != "name" {
		return nil
	}
	r.skip(4)
	for !r.bad && len(r.b) > 0 {
		id := r.byte()
		size := r.leb()
		switch id {
		case 0:
			r.skip(r.leb())
		case 1, 2:
			n, err := r.count(fmt.Sprintf("subsection %d", id))
			if err != nil {
				return err
			}
			for i := uint64(0); i < n && !r.bad; i++ {
				r.leb()
				if id == 1 {
					r.skip(r.leb())
					continue
				}
				locals, err := r.count("the local names of a function")
				if err != nil {
					return err
				}
				for j := uint64(0); j < locals && !r.bad; j++ {
					r.leb()
					r.skip(r.leb())
				}
			}
		default:
			r.skip(size)
		}
	}
	return nil
}

// checkElements checks the vector counts inside element segments, in each of the eight
// encodings. A constant expression it cannot read is refused: the decoder accepts no more than
// these, and one it could read past would reach a count unchecked.
func checkElements(body []byte, segments uint64) error {
	r := &reader{b: body}
	for i := uint64(0); i < segments && !r.bad; i++ {
		flags := r.leb()
		if flags > 7 {
			return nil
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
				skipRefType(r)
			} else {
				r.byte() // element kind
			}
		}
		n, err := r.count(fmt.Sprintf("element segment %d", i))
		if err != nil {
			return err
		}
		for j := uint64(0); j < n && !r.bad; j++ {
			if !exprs {
				r.leb()
				continue
			}
			if err := skipConstExpr(r); err != nil {
				return fmt.Errorf("element segment %d: %v", i, err)
			}
		}
	}
	return nil
}

func skipRefType(r *reader) {
	if t := r.byte(); t == 0x63 || t == 0x64 {
		r.leb() // heap type
	}
}

// skipConstExpr reads one constant expression up to its end.
func skipConstExpr(r *reader) error {
	for !r.bad {
		switch op := r.byte(); op {
		case 0x0b: // end
			return nil
		case 0x41, 0x42, 0x23, 0xd2: // i32.const, i64.const, global.get, ref.func
			r.leb()
		case 0x43: // f32.const
			r.skip(4)
		case 0x44: // f64.const
			r.skip(8)
		case 0xd0: // ref.null
			skipRefType(r)
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
