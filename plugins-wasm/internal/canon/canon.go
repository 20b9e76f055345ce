// Package canon compares JSON-shaped values the way OpenStack stores them: key order, number
// spelling and Go types do not matter, only the JSON value does.
package canon

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// JSON renders v as compact JSON with object keys sorted at every depth and every number in one
// spelling, so two spellings of one JSON value render the same. The text is exactly what
// encoding/json writes for the value decoded into any (plugins store it, e.g. as a Neutron
// profile's metainfo, and compare it with what they stored before).
func JSON(v any) (string, error) {
	// Plain decoded JSON (the common case: a CR's free-form field) is written directly: in wasm
	// a JSON round trip costs tens of microseconds per value.
	if b, ok := appendPlain(nil, v); ok {
		return string(b), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	// Decoding into any turns every object (struct or map) into a map, which encoding/json writes
	// with sorted keys, and every number into a float64, which makes 1, 1.0 and 1e0 one value: JSON
	// does not tell them apart and neither do the services.
	var plain any
	if err := json.Unmarshal(b, &plain); err != nil {
		return "", err
	}
	if b, err = json.Marshal(plain); err != nil {
		return "", err
	}
	return string(b), nil
}

// appendPlain writes v as encoding/json writes it after a round trip through any; ok is false
// when v holds anything but plain JSON values (the caller then takes the encoding path).
func appendPlain(b []byte, v any) ([]byte, bool) {
	if f, isNum := number(v); isNum {
		return appendFloat(b, f)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		return appendString(b, x), true
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendPlain(b, e); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendPlain(b, x[k]); !ok {
				return nil, false
			}
		}
		return append(b, '}'), true
	}
	return nil, false
}

// appendFloat formats f as encoding/json does for a float64; NaN and infinities are not JSON.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hex = "0123456789abcdef"

// appendString quotes s as encoding/json does: HTML-safe (<, >, & escaped), U+2028 and U+2029
// escaped, invalid UTF-8 replaced by U+FFFD (the character, as a round trip leaves it).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\uFFFD"...) // written as the character: the text after a round trip
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Equal reports whether a and b are the same JSON value. Values that cannot be encoded are never
// equal to anything. Plain decoded JSON (maps, slices, strings, numbers, booleans, nil) is
// compared by walking it, without encoding: in wasm, where the plugins run, a JSON round trip
// costs tens of microseconds per value; anything else takes the encoding path.
func Equal(a, b any) bool {
	if eq, ok := plainEqual(a, b); ok {
		return eq
	}
	ja, err := JSON(a)
	if err != nil {
		return false
	}
	jb, err := JSON(b)
	if err != nil {
		return false
	}
	return ja == jb
}

// plainEqual compares a and b when both are plain JSON values; ok is false when either holds
// something else (a struct, a json.RawMessage, ...), which the caller then encodes.
func plainEqual(a, b any) (eq, ok bool) {
	if fa, isNum := number(a); isNum {
		fb, isNum := number(b)
		if !isNum {
			_, known := plainKind(b)
			return false, known
		}
		return fa == fb, true
	}
	switch x := a.(type) {
	case nil:
		_, known := plainKind(b)
		return b == nil, known
	case string:
		y, same := b.(string)
		if !same {
			_, known := plainKind(b)
			return false, known
		}
		return x == y, true
	case bool:
		y, same := b.(bool)
		if !same {
			_, known := plainKind(b)
			return false, known
		}
		return x == y, true
	case map[string]any:
		y, same := b.(map[string]any)
		if !same {
			_, known := plainKind(b)
			return false, known
		}
		if len(x) != len(y) {
			return false, true
		}
		for k, va := range x {
			vb, present := y[k]
			if !present {
				return false, true
			}
			if eq, ok := plainEqual(va, vb); !ok || !eq {
				return eq, ok
			}
		}
		return true, true
	case []any:
		y, same := b.([]any)
		if !same {
			_, known := plainKind(b)
			return false, known
		}
		if len(x) != len(y) {
			return false, true
		}
		for i := range x {
			if eq, ok := plainEqual(x[i], y[i]); !ok || !eq {
				return eq, ok
			}
		}
		return true, true
	}
	return false, false
}

// plainKind reports whether v is a plain JSON value at its top level.
func plainKind(v any) (string, bool) {
	if _, ok := number(v); ok {
		return "number", true
	}
	switch v.(type) {
	case nil:
		return "null", true
	case string:
		return "string", true
	case bool:
		return "bool", true
	case map[string]any:
		return "object", true
	case []any:
		return "array", true
	}
	return "", false
}

// number reads the numeric types decoded JSON and Go literals use, as JSON sees them: one value
// whatever the spelling.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
