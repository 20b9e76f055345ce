// Package canon compares JSON-shaped values the way OpenStack stores them: key order, number
// spelling and Go types do not matter, only the JSON value does.
package canon

import (
	"bytes"
	"encoding/json"
)

// JSON renders v as compact JSON with object keys sorted at every depth.
func JSON(v any) (string, error) {
	norm, err := Normalize(v)
	if err != nil {
		return "", err
	}
	// encoding/json sorts map keys, and Normalize turned every object into a map.
	b, err := json.Marshal(norm)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Normalize turns v into plain JSON values (map[string]any, []any, json.Number, string, bool,
// nil), so that two spellings of one JSON value become deeply equal.
func Normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return normalizeNumbers(out), nil
}

// normalizeNumbers makes 1, 1.0 and 1e0 one value: JSON does not tell them apart and neither do
// the services.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return f
		}
	}
	return v
}

// Equal reports whether a and b are the same JSON value. Values that cannot be encoded are never
// equal to anything.
func Equal(a, b any) bool {
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
