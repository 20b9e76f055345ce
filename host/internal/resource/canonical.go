package resource

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
)

// scratch is the buffer canonical encodes into before it keeps an exact copy: a run keeps every
// CR's spec and status, and append's spare capacity was a third of their memory.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// canonical is v as json.Marshal writes it, in a slice of its own length.
func canonical(v any) (json.RawMessage, error) {
	buf := scratch.Get().(*[]byte)
	defer scratch.Put(buf)
	out, err := appendJSON((*buf)[:0], v)
	*buf = out[:0]
	if err != nil {
		return nil, err
	}
	return json.RawMessage(slices.Clone(out)), nil
}

// appendJSON appends v as json.Marshal writes it (keys sorted, HTML-safe escapes, invalid UTF-8
// as U+FFFD), without its reflection: a CR's spec is kept as these bytes from the moment it is
// read (Resource.Spec), and at 20,000 CRs json.Marshal's walk of every decoded spec was a
// noticeable share of a converged pass. Values of the types a binding context decodes to (maps,
// lists, strings, json.Number, bool, nil) are written here; anything else goes to json.Marshal.
// FuzzCanonicalIsMarshal holds the two equal.
func appendJSON(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return appendString(dst, x), nil
	case json.Number:
		if !validNumber(string(x)) {
			break // encoding/json's own answer, error included
		}
		return append(dst, x...), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendJSON(dst, x[k]); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendJSON(dst, e); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// validNumber reports whether s is a JSON number, as encoding/json checks a json.Number.
func validNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

const hexDigits = "0123456789abcdef"

// appendString writes s quoted as encoding/json does with HTML escaping on.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// WithKeys is the JSON object spec (as Resource.Spec holds it) with only its top-level members
// named in keys: what a plugin that reads no more of a desired spec in its prune is handed
// (plugin.Metadata.PruneKeys). Members are read past, not decoded; a spec that is not the compact
// JSON Parse writes is decoded and written again instead, with the same result.
func WithKeys(spec json.RawMessage, keys []string) (json.RawMessage, error) {
	if out, ok := withKeysCompact(spec, keys); ok {
		return out, nil
	}
	v, err := bindingctx.DecodeJSON(spec)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the spec is %s, not an object", kindOf(v))
	}
	kept := make(map[string]any, len(keys))
	for _, k := range keys {
		if x, ok := m[k]; ok {
			kept[k] = x
		}
	}
	return canonical(kept)
}

// withKeysCompact is WithKeys over compact JSON whose member names need no unescaping; false for
// anything else.
func withKeysCompact(spec []byte, keys []string) (json.RawMessage, bool) {
	if len(spec) < 2 || spec[0] != '{' {
		return nil, false
	}
	out := []byte{'{'}
	i := 1
	if spec[i] == '}' {
		return json.RawMessage(append(out, '}')), i+1 == len(spec)
	}
	for {
		if i >= len(spec) || spec[i] != '"' {
			return nil, false
		}
		end := i + 1
		for end < len(spec) && spec[end] != '"' && spec[end] != '\\' {
			end++
		}
		if end >= len(spec) || spec[end] != '"' || end+1 >= len(spec) || spec[end+1] != ':' {
			return nil, false
		}
		name := spec[i+1 : end]
		valueEnd, ok := skipCompact(spec, end+2)
		if !ok {
			return nil, false
		}
		if slices.Contains(keys, string(name)) {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, spec[i:valueEnd]...)
		}
		if valueEnd >= len(spec) {
			return nil, false
		}
		switch spec[valueEnd] {
		case ',':
			i = valueEnd + 1
		case '}':
			return json.RawMessage(append(out, '}')), valueEnd+1 == len(spec)
		default:
			return nil, false
		}
	}
}

// skipCompact returns where the compact JSON value starting at i ends; false on anything it does
// not expect (whitespace included).
func skipCompact(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(b) {
				return 0, false
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, true
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		case ' ', '\t', '\n', '\r':
			return 0, false
		default:
			i++
		}
	}
	return i, depth == 0
}
