package pdk

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodePlain decodes the JSON value b into the Go values encoding/json gives an `any`
// (map[string]any, []any, string, float64, bool, nil) for plain JSON: valid UTF-8 strings (escapes
// included), numbers that fit a float64. For anything else it answers false and the
// caller uses encoding/json, so the result is always encoding/json's (a fuzz test holds them
// equal). It exists for the CR status the host sends with every reconcile: encoding/json decodes
// into `any` through a scanner call per byte, twice, which in wasm under termination checks costs
// a converged CR more than the plugin's own work (docs/benchmarks.md, "Guest-side fixes").
func decodePlain(b []byte) (any, bool) {
	d := plainDecoder{b: b}
	v, ok := d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.i == len(d.b)
}

type plainDecoder struct {
	b []byte
	i int
}

// maxPlainDepth bounds the recursion; deeper values go to encoding/json, which has its own limit.
const maxPlainDepth = 64

func (d *plainDecoder) space() {
	for d.i < len(d.b) && (d.b[d.i] == ' ' || d.b[d.i] == '\n' || d.b[d.i] == '\t' || d.b[d.i] == '\r') {
		d.i++
	}
}

func (d *plainDecoder) value(depth int) (any, bool) {
	d.space()
	if d.i >= len(d.b) || depth > maxPlainDepth {
		return nil, false
	}
	switch d.b[d.i] {
	case '{':
		return d.object(depth)
	case '[':
		return d.array(depth)
	case '"':
		return d.str()
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	return d.number()
}

func (d *plainDecoder) literal(word string) bool {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return false
	}
	d.i += len(word)
	return true
}

// str decodes a string as encoding/json does: escapes decoded, UTF-8 kept. What encoding/json
// would repair or refuse (invalid UTF-8, a lone surrogate escape, a control character, an unknown
// escape) is not plain. Escapes matter: Go's encoder writes "&", "<" and ">" as \u0026 and the
// like, so the next link of every full page a Go service answers has them, and Python's writes
// every non-ASCII character as one.
func (d *plainDecoder) str() (string, bool) {
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return string(d.b[start:j]), true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return d.slowStr(start, j, true)
		}
	}
	return "", false
}

// slowStr finishes str from b[j], the first byte that is not plain ASCII; with build false it
// only checks (for skip) and returns "".
func (d *plainDecoder) slowStr(start, j int, build bool) (string, bool) {
	var out []byte
	if build {
		out = make([]byte, 0, j-start+16)
		out = append(out, d.b[start:j]...)
	}
	b := d.b
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c < 0x80 && c != '\\':
			out = append(out, c)
			j++
		case c >= 0x80:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			out = append(out, b[j:j+size]...)
			j += size
		default: // an escape
			if j+1 >= len(b) {
				return "", false
			}
			switch e := b[j+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(b[j+2:])
				if !ok {
					return "", false
				}
				if utf16.IsSurrogate(r) {
					// Only a valid pair is plain; encoding/json makes a lone half U+FFFD.
					if len(b) < j+12 || b[j+6] != '\\' || b[j+7] != 'u' {
						return "", false
					}
					r2, ok := hex4(b[j+8:])
					if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
						return "", false
					}
					j += 6
				}
				out = utf8.AppendRune(out, r)
				j += 4
			default:
				return "", false
			}
			j += 2
		}
	}
	return "", false
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}

// number checks JSON's number grammar (which strconv.ParseFloat is looser than), then parses it
// as encoding/json does.
func (d *plainDecoder) number() (any, bool) {
	b, start := d.b, d.i
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return nil, false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	f, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		return nil, false
	}
	d.i = i
	return f, true
}

func (d *plainDecoder) object(depth int) (any, bool) {
	d.i++
	m := map[string]any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
		return m, true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != ':' {
			return nil, false
		}
		d.i++
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		m[k] = v
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return m, true
		default:
			return nil, false
		}
	}
}

func (d *plainDecoder) array(depth int) (any, bool) {
	d.i++
	a := []any{}
	d.space()
	if d.i < len(d.b) && d.b[d.i] == ']' {
		d.i++
		return a, true
	}
	for {
		v, ok := d.value(depth + 1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		d.space()
		if d.i >= len(d.b) {
			return nil, false
		}
		switch d.b[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return a, true
		default:
			return nil, false
		}
	}
}

// skip passes over the next value as value would decode it, without building it: the members a
// target type does not declare are still checked (they must be plain too) but cost no memory.
func (d *plainDecoder) skip(depth int) bool {
	d.space()
	if d.i >= len(d.b) || depth > maxPlainDepth {
		return false
	}
	switch d.b[d.i] {
	case '{', '[':
		open := d.b[d.i]
		close := byte('}')
		if open == '[' {
			close = ']'
		}
		d.i++
		d.space()
		if d.i < len(d.b) && d.b[d.i] == close {
			d.i++
			return true
		}
		for {
			if open == '{' {
				d.space()
				if d.i >= len(d.b) || d.b[d.i] != '"' || !d.skipString() {
					return false
				}
				d.space()
				if d.i >= len(d.b) || d.b[d.i] != ':' {
					return false
				}
				d.i++
			}
			if !d.skip(depth + 1) {
				return false
			}
			d.space()
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case ',':
				d.i++
			case close:
				d.i++
				return true
			default:
				return false
			}
		}
	case '"':
		return d.skipString()
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, ok := d.number()
	return ok
}

// skipString is str without the string.
func (d *plainDecoder) skipString() bool {
	for j := d.i + 1; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			d.i = j + 1
			return true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			_, ok := d.slowStr(d.i+1, j, false)
			return ok
		}
	}
	return false
}
