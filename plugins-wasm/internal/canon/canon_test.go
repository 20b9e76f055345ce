package canon_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/canon"
)

func TestEqual(t *testing.T) {
	var fromJSON map[string]any
	_ = json.Unmarshal([]byte(`{"b": [1.0, {"y": true, "x": null}], "a": "s"}`), &fromJSON)
	cases := []struct {
		name string
		a, b any
		want bool
	}{
		{"key order and number spelling", fromJSON, map[string]any{"a": "s", "b": []any{1, map[string]any{"x": nil, "y": true}}}, true},
		{"number spelling in raw JSON", json.RawMessage(`{"n": [1e0, 2.50]}`), map[string]any{"n": []any{1, 2.5}}, true},
		{"list order matters", []any{1, 2}, []any{2, 1}, false},
		{"different value", map[string]any{"a": 1}, map[string]any{"a": 2}, false},
		{"missing key", map[string]any{"a": 1}, map[string]any{}, false},
		{"unencodable", func() {}, func() {}, false},
		{"json.Number and float", map[string]any{"n": json.Number("2.50")}, map[string]any{"n": 2.5}, true},
		{"int64 and float", []any{int64(3)}, []any{3.0}, true},
		{"number and string", []any{1}, []any{"1"}, false},
		{"null and missing", map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{"null and false", nil, false, false},
		{"nested list length", map[string]any{"a": []any{1}}, map[string]any{"a": []any{1, 2}}, false},
		{"a struct against a map is encoded", struct {
			A int `json:"a"`
		}{1}, map[string]any{"a": 1.0}, true},
		{"a typed map inside is encoded", map[string]any{"a": map[string]int{"x": 1}}, map[string]any{"a": map[string]any{"x": 1.0}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, canon.Equal(tc.a, tc.b)) })
	}
}

func TestJSONSortsKeys(t *testing.T) {
	got, err := canon.JSON(map[string]any{"z": 1, "a": map[string]any{"d": 2.5, "c": "x"}})
	assert.NoError(t, err)
	assert.Equal(t, `{"a":{"c":"x","d":2.5},"z":1}`, got)
}

// roundTrip is what JSON wrote before its direct path: encoding/json after a trip through any.
func roundTrip(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var plain any
	require.NoError(t, json.Unmarshal(b, &plain))
	b, err = json.Marshal(plain)
	require.NoError(t, err)
	return string(b)
}

// Plugins store canon.JSON text (a Neutron profile's metainfo) and compare it with what they
// stored in earlier runs, so the direct path must write exactly what encoding/json writes.
func TestJSONWritesWhatEncodingJSONWrites(t *testing.T) {
	values := []any{
		nil, true, false, "", 0, 1, -1, 0.5, 1e-7, 1e21, 123456789012345678, 1e20, -2.5e-10, 3.0, json.Number("1.50"),
		"plain", "quote \" backslash \\ slash /", "<script>&amp;</script>", "tab\tnl\ncr\rbs\bff\f", "\x00\x01\x1f\x7f",
		"é ü 日本", "line\u2028sep\u2029", "bad \xff utf8 \xc3", map[string]any{}, []any{},
		map[string]any{"z": 1, "a": []any{map[string]any{"y": nil, "x": "<"}, 2.25}, "é": false, "A": "upper before lower"},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		values = append(values, randomValue(r, 3))
	}
	for i, v := range values {
		got, err := canon.JSON(v)
		require.NoError(t, err)
		assert.Equal(t, roundTrip(t, v), got, "value %d: %#v", i, v)
	}
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(8); {
	case depth == 0 || k < 2:
		return []any{nil, true, r.Float64() * 1e6, float64(r.IntN(1000)), r.NormFloat64() * 1e-8, "s<&>\"\\\n" + string(rune(r.IntN(0x3000)))}[r.IntN(6)]
	case k < 5:
		m := map[string]any{}
		for range r.IntN(4) {
			m[string(rune('a'+r.IntN(26)))+string(rune(r.IntN(0x800)))] = randomValue(r, depth-1)
		}
		return m
	default:
		var l []any
		for range r.IntN(4) {
			l = append(l, randomValue(r, depth-1))
		}
		if l == nil {
			l = []any{}
		}
		return l
	}
}
