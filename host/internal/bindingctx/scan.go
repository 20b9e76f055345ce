package bindingctx

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// The scanner decodes JSON straight from its bytes into what encoding/json gives for `any` with
// UseNumber (the same maps, lists, strings, json.Number, bool and nil; metadata.managedFields of
// a CR read past), and declines rather than guesses: on any syntax error (so that every error and
// its text stay encoding/json's), a read error, and a nesting deeper than maxScanDepth. The index
// pass (index.go) reads a whole document with it; decoding a CR (List) reads that CR's bytes.
// Differential fuzz tests hold both to encoding/json (FuzzScanMatchesEncodingJSON).
//
// It exists for the cost per CR: encoding/json's Decoder.Token and Decode run a scanner function
// per input byte, twice for every value (once to find its end, once to decode it), and the
// managed fields read past are scanned twice too; that was about a third of a converged pass's
// host CPU (docs/benchmarks.md, "Host-side costs").
//
// The input is read through a buffer, grown only for a token longer than it, so a document is
// never held whole.

// maxScanDepth bounds the recursion; deeper documents go to encoding/json, which has its own limit.
const maxScanDepth = 512

// Member names and short strings are shared (scanner.keys): a snapshot repeats the same few dozen
// names and values (kind, namespace, Secret, "Synced", timestamps) in every object, and sharing
// them saves an allocation each, and the memory of the specs and statuses a run holds. The table
// is bounded, so unique values (names, UIDs) fill it once and are then allocated as usual.
const (
	maxInterned    = 4096
	maxInternedLen = 24
)

// mode is what an object or list is in a CR, which decides how its members are read: the shape
// decodeObject walks.
type mode uint8

const (
	modeAny      mode = iota // any JSON value, decoded whole (decodeAny)
	modeCR                   // a CR (decodeObject)
	modeMetadata             // a CR's metadata (decodeMetadata)
)

// member is how the member key of an object in mode m is read; skip when it is read past.
func (m mode) member(key string) (child mode, skip bool) {
	switch {
	case m == modeCR && key == "metadata":
		return modeMetadata, false
	case m == modeMetadata && key == "managedFields":
		return modeAny, true
	}
	return modeAny, false
}

type scanner struct {
	r   io.Reader
	buf []byte
	// i is the read position in buf; buf[i:] is kept when more input is read.
	i int
	// base is the input offset of buf[0].
	base int64
	// done: r reported the end of its input (or an error, then failed too).
	done, failed bool
	keys         map[string]string
}

// fill reads more input, keeping buf[i:] (the token being read) at the front of the buffer; false
// at the end of the input.
func (d *scanner) fill() bool {
	if d.done {
		return false
	}
	kept := copy(d.buf[:cap(d.buf)], d.buf[d.i:])
	d.base += int64(d.i)
	d.buf, d.i = d.buf[:kept], 0
	if kept == cap(d.buf) {
		d.buf = slices.Grow(d.buf, max(cap(d.buf), 512))
	}
	for empty := 0; ; empty++ {
		n, err := d.r.Read(d.buf[kept:cap(d.buf)])
		d.buf = d.buf[:kept+n]
		if err != nil {
			d.done = true
			d.failed = err != io.EOF
		}
		if empty > 100 {
			d.done, d.failed = true, true // io.ErrNoProgress
		}
		if n > 0 {
			return true
		}
		if d.done {
			return false
		}
	}
}

// at is the byte k past the read position, reading more input as needed.
func (d *scanner) at(k int) (byte, bool) {
	for d.i+k >= len(d.buf) {
		if !d.fill() {
			return 0, false
		}
	}
	return d.buf[d.i+k], true
}

// next skips white space and returns the byte after it, unread; false at the end of the input.
func (d *scanner) next() (byte, bool) {
	for {
		for d.i < len(d.buf) {
			switch c := d.buf[d.i]; c {
			case ' ', '\n', '\t', '\r':
				d.i++
			default:
				return c, true
			}
		}
		if !d.fill() {
			return 0, false
		}
	}
}

func (d *scanner) value(m mode, depth int) (any, bool) {
	c, ok := d.next()
	if !ok || depth > maxScanDepth {
		return nil, false
	}
	switch c {
	case '{':
		return d.object(m, depth)
	case '[':
		return d.array(m, depth)
	case '"':
		return d.str(strValue)
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	}
	n, ok := d.number()
	if !ok {
		return nil, false
	}
	return json.Number(n), true
}

// object reads an object whose opening brace is at the read position.
func (d *scanner) object(m mode, depth int) (map[string]any, bool) {
	d.i++
	out := map[string]any{}
	c, ok := d.next()
	if !ok {
		return nil, false
	}
	if c == '}' {
		d.i++
		return out, true
	}
	for {
		if c != '"' {
			return nil, false
		}
		key, ok := d.str(strKey)
		if !ok {
			return nil, false
		}
		if c, ok = d.next(); !ok || c != ':' {
			return nil, false
		}
		d.i++
		child, skip := m.member(key)
		if skip {
			if !d.skip(depth + 1) {
				return nil, false
			}
		} else {
			v, ok := d.value(child, depth+1)
			if !ok {
				return nil, false
			}
			out[key] = v
		}
		if c, ok = d.next(); !ok {
			return nil, false
		}
		d.i++
		switch c {
		case ',':
			if c, ok = d.next(); !ok {
				return nil, false
			}
		case '}':
			return out, true
		default:
			return nil, false
		}
	}
}

// array reads a list whose opening bracket is at the read position.
func (d *scanner) array(m mode, depth int) ([]any, bool) {
	d.i++
	out := []any{}
	c, ok := d.next()
	if !ok {
		return nil, false
	}
	if c == ']' {
		d.i++
		return out, true
	}
	for {
		v, ok := d.value(modeAny, depth+1)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if c, ok = d.next(); !ok {
			return nil, false
		}
		d.i++
		switch c {
		case ',':
		case ']':
			return out, true
		default:
			return nil, false
		}
	}
}

// skip reads past a value, checking its syntax as encoding/json does for a json.RawMessage
// (strings are not checked for UTF-8).
func (d *scanner) skip(depth int) bool {
	c, ok := d.next()
	if !ok || depth > maxScanDepth {
		return false
	}
	switch c {
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		d.i++
		if c, ok = d.next(); !ok {
			return false
		}
		if c == end {
			d.i++
			return true
		}
		for {
			if end == '}' {
				if c != '"' {
					return false
				}
				if _, ok := d.str(strCheck); !ok {
					return false
				}
				if c, ok = d.next(); !ok || c != ':' {
					return false
				}
				d.i++
			}
			if !d.skip(depth + 1) {
				return false
			}
			if c, ok = d.next(); !ok {
				return false
			}
			d.i++
			switch c {
			case ',':
				if c, ok = d.next(); !ok {
					return false
				}
			case end:
				return true
			default:
				return false
			}
		}
	case '"':
		_, ok := d.str(strCheck)
		return ok
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	}
	_, ok = d.number()
	return ok
}

func (d *scanner) literal(word string) bool {
	for k := range len(word) {
		if c, ok := d.at(k); !ok || c != word[k] {
			return false
		}
	}
	d.i += len(word)
	return true
}

// number reads a number by JSON's grammar and returns its text (json.Number keeps it as it is).
func (d *scanner) number() (string, bool) {
	k := 0
	c, _ := d.at(k)
	if c == '-' {
		k++
		c, _ = d.at(k)
	}
	digits := func() int {
		n := 0
		for {
			c, ok := d.at(k)
			if !ok || c < '0' || c > '9' {
				return n
			}
			k, n = k+1, n+1
		}
	}
	switch {
	case c == '0':
		k++
	case '1' <= c && c <= '9':
		digits()
	default:
		return "", false
	}
	if c, _ := d.at(k); c == '.' {
		k++
		if digits() == 0 {
			return "", false
		}
	}
	if c, _ := d.at(k); c == 'e' || c == 'E' {
		k++
		if c, _ := d.at(k); c == '+' || c == '-' {
			k++
		}
		if digits() == 0 {
			return "", false
		}
	}
	n := string(d.buf[d.i : d.i+k])
	d.i += k
	return n, true
}

// strMode is what str does with a string.
type strMode uint8

const (
	strValue strMode = iota // build it
	strKey                  // build it and share it: a member name
	strCheck                // only read past it
)

// str reads a string whose opening quote is at the read position.
func (d *scanner) str(how strMode) (string, bool) {
	k := 1
	for {
		b := d.buf[d.i:]
		for ; k < len(b); k++ {
			c := b[k]
			if c == '"' {
				raw := b[1:k]
				d.i += k + 1
				switch {
				case how == strCheck:
					return "", true
				case how == strKey || len(raw) <= maxInternedLen:
					if s, ok := d.keys[string(raw)]; ok {
						return s, true
					}
					s := string(raw)
					if len(d.keys) < maxInterned {
						d.keys[s] = s
					}
					return s, true
				}
				return string(raw), true
			}
			if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return d.slowStr(k, how == strCheck)
			}
		}
		if !d.fill() {
			return "", false
		}
	}
}

// slowStr finishes str from its k-th byte, the first that is not plain ASCII: escapes are checked
// as encoding/json's scanner does, then decoded as encoding/json does (unquote, else
// encoding/json itself for what it repairs).
func (d *scanner) slowStr(k int, check bool) (string, bool) {
	for {
		b := d.buf[d.i:]
	scan:
		for k < len(b) {
			switch c := b[k]; {
			case c == '"':
				raw := b[:k+1]
				d.i += k + 1
				if check {
					return "", true
				}
				if s, ok := unquote(raw[1:k]); ok {
					return s, true
				}
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return "", false
				}
				return s, true
			case c < 0x20:
				return "", false
			case c == '\\':
				if k+6 > len(b) && !d.done {
					break scan // the escape may end past the buffer: read more first
				}
				if k+1 >= len(b) {
					return "", false
				}
				switch b[k+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					k += 2
				case 'u':
					if k+6 > len(b) {
						return "", false
					}
					for _, h := range b[k+2 : k+6] {
						if hexVal(h) < 0 {
							return "", false
						}
					}
					k += 6
				default:
					return "", false
				}
			default:
				k++
			}
		}
		if !d.fill() && d.i+k >= len(d.buf) {
			return "", false
		}
	}
}

// unquote decodes the contents of a string whose escapes are well formed, as encoding/json
// does; false for what encoding/json repairs into U+FFFD (invalid UTF-8, a lone surrogate
// escape), which the caller leaves to it.
func unquote(s []byte) (string, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch e := s[i+1]; e {
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
				r := hex4(s[i+2:])
				if utf16.IsSurrogate(r) {
					if len(s) < i+12 || s[i+6] != '\\' || s[i+7] != 'u' {
						return "", false
					}
					if r = utf16.DecodeRune(r, hex4(s[i+8:])); r == utf8.RuneError {
						return "", false
					}
					i += 6
				}
				out = utf8.AppendRune(out, r)
				i += 4
			default: // '"', '\\', '/'
				out = append(out, e)
			}
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && s[j] != '\\' && s[j] < utf8.RuneSelf {
				j++
			}
			out = append(out, s[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			out = append(out, s[i:i+size]...)
			i += size
		}
	}
	return string(out), true
}

// hex4 is the value of the four hex digits a checked \u escape has.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r = r<<4 | rune(hexVal(c))
	}
	return r
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// DecodeJSON decodes one JSON value as encoding/json decodes it into `any` with UseNumber, the
// scanner's way (encoding/json for what it declines): a CR's status is kept as JSON and decoded
// each time the run reads it (resource.Resource.Status).
func DecodeJSON(data []byte) (any, error) {
	d := newScanner(data)
	if v, ok := d.value(modeAny, 1); ok {
		if _, more := d.next(); !more {
			return v, nil
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the top-level value")
	}
	return v, nil
}
