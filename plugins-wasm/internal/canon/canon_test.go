package canon_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

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
