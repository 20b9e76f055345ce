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
