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
