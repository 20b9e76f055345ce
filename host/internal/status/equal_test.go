package status

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
)

// equalJSON's fast paths answer exactly as the JSON round trip they skip.
func TestEqualJSONFastPathsMatchTheRoundTrip(t *testing.T) {
	roundTrip := func(a, b any) bool {
		na, errA := normalize(a)
		nb, errB := normalize(b)
		return errA == nil && errB == nil && reflect.DeepEqual(na, nb)
	}
	values := []any{"True", "", "5", true, false, int64(5), int64(-3), int64(0), json.Number("5"), json.Number("5.0"),
		json.Number("-3"), json.Number("1e3"), float64(5), nil, map[string]any{"a": "b"}, []any{"x"}}
	for _, a := range values {
		for _, b := range values {
			assert.Equal(t, roundTrip(a, b), equalJSON(a, b), "equalJSON(%#v, %#v)", a, b)
		}
	}
}
