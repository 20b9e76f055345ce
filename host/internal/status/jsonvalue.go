package status

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Comparing a plugin's status values (status.resource, extra keys) with what the CR's status
// holds went through a JSON round trip per value, and per leaf again in equalJSON: for the
// lifecycle plugins that was the host's largest cost per converged CR (docs/benchmarks.md,
// "Host-side costs"). The values on both sides are almost always decoded JSON already: the
// status as the binding context holds it (json.Number, valid UTF-8) and a plugin's answer as
// encoding/json decodes it (float64). For those, the round trip is computed here without encoding
// anything; every other value still takes it. TestNormalizeMatchesTheRoundTrip and
// FuzzNormalizeMatchesTheRoundTrip hold the two equal.

// normalizeValue is normalize(v): v as the API server would store it, decoded with numbers as
// json.Number.
func normalizeValue(v any) (any, error) {
	if n, ok := plainNormal(v); ok {
		return n, nil
	}
	return normalize(v)
}

// plainNormal is normalize(v) for plain decoded JSON (nil, bool, valid UTF-8 strings, finite
// float64, valid json.Number, and non-nil map[string]any and []any of them), false for anything
// else.
func plainNormal(v any) (any, bool) {
	switch x := v.(type) {
	case nil, bool:
		return x, true
	case string:
		return x, utf8.ValidString(x)
	case json.Number:
		return x, validNumber(string(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, false
		}
		return json.Number(floatText(x)), true
	case map[string]any:
		if x == nil {
			return nil, false
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			n, ok := plainNormal(e)
			if !ok || !utf8.ValidString(k) {
				return nil, false
			}
			out[k] = n
		}
		return out, true
	case []any:
		if x == nil {
			return nil, false
		}
		out := make([]any, len(x))
		for i, e := range x {
			n, ok := plainNormal(e)
			if !ok {
				return nil, false
			}
			out[i] = n
		}
		return out, true
	}
	return nil, false
}

// isNormal reports a value normalize returns unchanged: plain decoded JSON with numbers as
// json.Number, as the binding context holds a status.
func isNormal(v any) bool {
	switch x := v.(type) {
	case nil, bool:
		return true
	case string:
		return utf8.ValidString(x)
	case json.Number:
		return validNumber(string(x))
	case map[string]any:
		if x == nil {
			return false
		}
		for k, e := range x {
			if !utf8.ValidString(k) || !isNormal(e) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isNormal(e) {
				return false
			}
		}
		return true
	}
	return false
}

// equalNormal is equalJSON for two normal values: normalize leaves them as they are.
func equalNormal(a, b any) (equal, ok bool) {
	if !isNormal(a) || !isNormal(b) {
		return false, false
	}
	return reflect.DeepEqual(a, b), true
}

// validNumber is encoding/json's check of a json.Number's text (JSON's number grammar), which
// it refuses to encode otherwise.
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}

// floatText is the text encoding/json writes for a finite float64 (its floatEncoder: as ES6
// converts a number to a string, exponents unpadded).
func floatText(f float64) string {
	var buf [32]byte
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	if format == 'e' {
		// e-09 is written e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return string(b)
}
