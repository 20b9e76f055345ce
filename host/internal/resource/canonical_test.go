package resource

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
)

var canonicalCases = []string{
	`{"b":1,"a":[true,false,null,"x"],"c":{"z":{},"y":[]}}`,
	`{"html":"<a href=\"x\">&amp;</a>","ctl":"\u0000\u0001\b\f\n\r\t\u001f\u007f","sep":"\u2028\u2029","emoji":"😀 grüße"}`,
	`{"n":[0,-0,1.5,-2.5e10,1E+3,2e-7,123456789012345678901234567890,1e999]}`,
	"{\"bad\":\"x\xffy\xc3\",\"\xed\xa0\x80\":1}",
	`{"keys":{"B":1,"a":2,"ä":3,"A":4,"":5,"a\u0000":6}}`,
	`[]`, `{}`, `"s"`, `null`,
}

// decodeNumbers decodes as a binding context is (numbers kept as json.Number).
func decodeNumbers(t testing.TB, data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}

func TestCanonicalIsMarshal(t *testing.T) {
	for _, doc := range canonicalCases {
		v, ok := decodeNumbers(t, []byte(doc))
		require.True(t, ok, doc)
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := appendJSON(nil, v)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), doc)
	}
	for _, n := range []json.Number{"", " 1", "01", "1.", "-", "+1", "1e", "0x10", `"1"`, "true", "1 "} {
		_, want := json.Marshal(n)
		_, got := appendJSON(nil, n)
		assert.Equal(t, want != nil, got != nil, "json.Number %q", n)
	}
	got, err := appendJSON(nil, map[string]any{"f": 1.5, "i": 3, "m": map[string]int{"b": 1, "a": 2}})
	require.NoError(t, err)
	assert.Equal(t, `{"f":1.5,"i":3,"m":{"a":2,"b":1}}`, string(got), "other types are json.Marshal's")
}

// FuzzCanonicalIsMarshal: whatever a binding context decodes to is written byte for byte as
// json.Marshal writes it.
func FuzzCanonicalIsMarshal(f *testing.F) {
	for _, doc := range canonicalCases {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, ok := decodeNumbers(t, data)
		if !ok {
			return
		}
		want, wantErr := json.Marshal(v)
		got, err := appendJSON(nil, v)
		require.Equal(t, wantErr == nil, err == nil)
		require.Equal(t, string(want), string(got))
		if err == nil {
			// A status is kept as these bytes and decoded again (Resource.Status): nothing is lost.
			back, err := bindingctx.DecodeJSON(got)
			require.NoError(t, err)
			require.Equal(t, v, back)
		}
	})
}

func TestWithKeys(t *testing.T) {
	keys := []string{"runbookName", "name"}
	for spec, want := range map[string]string{
		`{"extra":{"a":"}"},"runbookName":"CUSTOM_X","steps":[{"args":{"x":[1,{"y":"a\"b"}]}}]}`: `{"runbookName":"CUSTOM_X"}`,
		`{"name":"n","runbookName":"r"}`: `{"name":"n","runbookName":"r"}`,
		`{"other":1}`:                    `{}`,
		`{}`:                             `{}`,
		// Not the compact form Parse writes: decoded and written again.
		`{ "runbookName" : "r", "x": 1 }`: `{"runbookName":"r"}`,
		`{"run\u0062ookName":"r"}`:        `{"runbookName":"r"}`,
	} {
		got, err := WithKeys(json.RawMessage(spec), keys)
		require.NoError(t, err, spec)
		assert.Equal(t, want, string(got), spec)
	}
	_, err := WithKeys(json.RawMessage(`[1]`), keys)
	assert.EqualError(t, err, "the spec is a list, not an object")
}

// FuzzWithKeys: the compact path reads past members exactly as decoding and writing again does
// (it declines member names with escapes, which the other path reads).
func FuzzWithKeys(f *testing.F) {
	for _, doc := range canonicalCases {
		f.Add([]byte(doc), "b")
	}
	f.Add([]byte(`{"a":"x\"}","b":{"c":[1,"]"]}}`), "a")
	f.Fuzz(func(t *testing.T, data []byte, key string) {
		v, ok := decodeNumbers(t, data)
		m, isMap := v.(map[string]any)
		if !ok || !isMap {
			return
		}
		spec, err := appendJSON(nil, v)
		if err != nil {
			return
		}
		kept := map[string]any{}
		if x, ok := m[key]; ok {
			kept[key] = x
		}
		want, err := appendJSON(nil, kept)
		require.NoError(t, err)
		got, err := WithKeys(spec, []string{key})
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
		if fast, ok := withKeysCompact(spec, []string{key}); ok {
			require.Equal(t, string(want), string(fast))
		}
	})
}
