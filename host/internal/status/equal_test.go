package status

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// roundTrip is equalJSON by its definition: both values encoded and decoded as the API server
// would store them.
func roundTrip(a, b any) bool {
	na, errA := normalize(a)
	nb, errB := normalize(b)
	return errA == nil && errB == nil && reflect.DeepEqual(na, nb)
}

// jsonValues cover each kind of value normalizeValue and equalJSON answer without a round trip,
// and those they must leave to it.
var jsonValues = []any{"True", "", "5", "<&>\u2028", "bad \xff", true, false, int64(5), int64(-3), int64(0),
	json.Number("5"), json.Number("5.0"), json.Number("-3"), json.Number("1e3"), json.Number("-0"), json.Number(""),
	json.Number("01"), json.Number("1.5e+07"), float64(5), math.Copysign(0, -1), 1.5e7, 1e21, 1e-7, 0.1, 123456789.125,
	math.NaN(), math.Inf(1), nil, 7,
	map[string]any{"a": "b"}, map[string]any{"a": json.Number("7")}, map[string]any{"a": float64(7)},
	map[string]any{"a": 7}, map[string]any{"\xff": "k"}, map[string]any{}, map[string]any(nil),
	[]any{"x"}, []any{json.Number("1"), nil, true}, []any{float64(1), nil, true}, []any{}, []any(nil),
	[]string{"x"}, []map[string]any{{"id": 7}}, map[string]any{"n": map[string]any{"l": []any{float64(2), "s"}}},
	map[string]any{"n": map[string]any{"l": []any{json.Number("2"), "s"}}}}

// equalJSON's fast paths answer exactly as the JSON round trip they skip.
func TestEqualJSONFastPathsMatchTheRoundTrip(t *testing.T) {
	for _, a := range jsonValues {
		for _, b := range jsonValues {
			assert.Equal(t, roundTrip(a, b), equalJSON(a, b), "equalJSON(%#v, %#v)", a, b)
		}
	}
}

func TestNormalizeMatchesTheRoundTrip(t *testing.T) {
	for _, v := range jsonValues {
		want, wantErr := normalize(v)
		got, err := normalizeValue(v)
		assert.Equal(t, wantErr != nil, err != nil, "%#v", v)
		assert.Equal(t, want, got, "%#v", v)
	}
}

// FuzzNormalizeMatchesTheRoundTrip decodes documents both ways a status value reaches the host
// (numbers as float64, as a plugin's answer; as json.Number, as the binding context) and holds
// normalizeValue and equalJSON to the round trip.
func FuzzNormalizeMatchesTheRoundTrip(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,1e21,1e-7,"x",null,true,{}]}`, `"\u00e9"`, `12345678901234567890`, `[]`, `{"id":"x","n":7}`} {
		f.Add([]byte(s), []byte(`{"id":"x","n":7.0}`))
	}
	decode := func(data []byte, numbers bool) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(data))
		if numbers {
			dec.UseNumber()
		}
		var v any
		return v, dec.Decode(&v) == nil
	}
	f.Fuzz(func(t *testing.T, x, y []byte) {
		var vals []any
		for _, data := range [][]byte{x, y} {
			for _, numbers := range []bool{false, true} {
				if v, ok := decode(data, numbers); ok {
					vals = append(vals, v)
				}
			}
		}
		for _, a := range vals {
			want, wantErr := normalize(a)
			got, err := normalizeValue(a)
			require.Equal(t, wantErr != nil, err != nil)
			require.Equal(t, want, got)
			for _, b := range vals {
				require.Equal(t, roundTrip(a, b), equalJSON(a, b), "equalJSON(%#v, %#v)", a, b)
			}
		}
	})
}

func TestFloatTextIsEncodingJSONs(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 9.99e-7, 1e-7, 1.5e-9, 1e20, 1e21, -1e21,
		123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64, 5e-324, 1.7976931348623157e308, 2.5e-10} {
		want, err := json.Marshal(f)
		require.NoError(t, err)
		assert.Equal(t, string(want), floatText(f), "%v", f)
	}
}

func FuzzFloatTextIsEncodingJSONs(f *testing.F) {
	f.Add(1.5)
	f.Fuzz(func(t *testing.T, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		want, err := json.Marshal(x)
		require.NoError(t, err)
		require.Equal(t, string(want), floatText(x))
	})
}
