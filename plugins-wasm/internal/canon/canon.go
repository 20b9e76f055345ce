// Package canon compares JSON-shaped values the way OpenStack stores them: key order, number
// spelling and Go types do not matter, only the JSON value does.
package canon

import "encoding/json"

// JSON renders v as compact JSON with object keys sorted at every depth and every number in one
// spelling, so two spellings of one JSON value render the same.
func JSON(v any) (string, error) {
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
