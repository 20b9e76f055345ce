package pdk

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type plainInner struct {
	Name  string         `json:"name"`
	Count int            `json:"count,omitempty"`
	Args  map[string]any `json:"args"`
}

// plainTarget has a field of every kind decodeTypedPlain takes and of several it leaves to
// encoding/json, so the differential test covers both sides.
type plainTarget struct {
	S      string         `json:"s"`
	B      bool           `json:"b"`
	I      int            `json:"i"`
	I8     int8           `json:"i8"`
	U      uint16         `json:"u"`
	F      float64        `json:"f"`
	P      *string        `json:"p"`
	L      []string       `json:"l"`
	A      []any          `json:"a"`
	M      map[string]any `json:"m"`
	MI     map[string]int `json:"mi"`
	Any    any            `json:"any"`
	Inner  plainInner     `json:"inner"`
	Inners []plainInner   `json:"inners"`
	PInner *plainInner    `json:"pinner"`
	Dash   string         `json:"-"`
	//lint:ignore SA5008 the odd tags encoding/json accepts are what this test compares
	DashName string `json:"-,"`
	Untagged string
	Renamed  string `json:"renamedField"`
	//lint:ignore SA5008 the odd tags encoding/json accepts are what this test compares
	Bad      string            `json:"a\"b"`
	NamedMap map[plainKey]bool `json:"named"`
}

type plainKey string

type plainWithString struct {
	N int `json:"n,string"`
}

type plainWithCustom struct {
	T   time.Time       `json:"t"`
	Raw json.RawMessage `json:"raw"`
	Bs  []byte          `json:"bs"`
	F32 float32         `json:"f32"`
}

type plainEmbedded struct {
	plainInner
	X string `json:"x"`
}

// Embedded structs: promoted fields (plainEmbedded, plainEmbedDeep, plainEmbedExported) take the
// fast path; a conflict, a pointer or a named embedding is encoding/json's.
type plainEmbedConflict struct {
	plainInner
	Name string `json:"name"`
}

type plainEmbedPtr struct {
	*plainInner
	X string `json:"x"`
}

type plainEmbedTagged struct {
	plainInner `json:"inner"`
	X          string `json:"x"`
}

type plainEmbedDeep struct {
	plainEmbedded
	Y int `json:"y"`
}

type PlainExported struct {
	Z string `json:"z"`
}

type plainEmbedExported struct {
	PlainExported
	W bool `json:"w"`
}

type plainCase struct {
	Name string `json:"name"`
	NAME string `json:"NAME"`
}

// checkTyped decodes input into a fresh T both ways (strict: as DecodeSpec does) and, whenever
// decodeTypedPlain takes the input, wants exactly encoding/json's answer.
func checkTyped[T any](t *testing.T, input []byte, strict bool) {
	t.Helper()
	var got T
	if !decodeTypedPlain(input, &got, strict) {
		var untouched T
		assert.Equal(t, untouched, got, "a declined decode must leave the value alone")
		return
	}
	var want T
	var err error
	if strict {
		dec := json.NewDecoder(bytes.NewReader(input))
		dec.DisallowUnknownFields()
		err = dec.Decode(&want)
	} else {
		err = json.Unmarshal(input, &want)
	}
	require.NoError(t, err, "decodeTypedPlain took %q, which encoding/json refuses", input)
	assert.Equal(t, want, got, "%q", input)
}

func checkAllTyped(t *testing.T, input []byte) {
	t.Helper()
	for _, strict := range []bool{false, true} {
		checkTyped[plainTarget](t, input, strict)
		checkTyped[plainInner](t, input, strict)
		checkTyped[plainWithString](t, input, strict)
		checkTyped[plainWithCustom](t, input, strict)
		checkTyped[plainEmbedded](t, input, strict)
		checkTyped[plainCase](t, input, strict)
		checkTyped[plainEmbedConflict](t, input, strict)
		checkTyped[plainEmbedPtr](t, input, strict)
		checkTyped[plainEmbedTagged](t, input, strict)
		checkTyped[plainEmbedDeep](t, input, strict)
		checkTyped[plainEmbedExported](t, input, strict)
		checkTyped[[]plainInner](t, input, strict)
		checkTyped[map[string]plainInner](t, input, strict)
		checkTyped[any](t, input, strict)
		checkTyped[*plainInner](t, input, strict)
		checkTyped[[]json.RawMessage](t, input, strict)
		checkTyped[json.RawMessage](t, input, strict)
	}
}

func typedCases(t testing.TB) []string {
	var cases []string
	raw, err := os.ReadFile("testdata/plain-typed.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &cases))
	return cases
}

func TestDecodeTypedPlainMatchesEncodingJSON(t *testing.T) {
	for _, c := range typedCases(t) {
		checkAllTyped(t, []byte(c))
	}
	// The fast path does take the plain forms specs and OpenStack answers have.
	var v plainTarget
	require.True(t, decodeTypedPlain([]byte(`{"s":"x","i":-3,"l":["a"],"m":{"k":[1,true,null]},"inners":[{"name":"n","args":{}}],"pinner":{"name":"p"}}`), &v, true))
	assert.Equal(t, "p", v.PInner.Name)
	// So does a list page whose next link a Go service wrote (its "&" escaped).
	var page struct {
		Items []plainInner `json:"things"`
		Next  string       `json:"next"`
	}
	require.True(t, decodeTypedPlain([]byte(`{"things":[{"name":"caf\u00e9"}],"next":"http://x/v1/things?limit=1\u0026marker=a"}`), &page, false))
	assert.Equal(t, "http://x/v1/things?limit=1&marker=a", page.Next)
	assert.Equal(t, "café", page.Items[0].Name)
	// Embedded structs' promoted fields (the lifecycle's shared spec fields) take it too.
	var deep plainEmbedDeep
	require.True(t, decodeTypedPlain([]byte(`{"name":"n","count":2,"args":{"a":1},"x":"q","y":3}`), &deep, true))
	assert.Equal(t, plainEmbedDeep{plainEmbedded: plainEmbedded{plainInner: plainInner{Name: "n", Count: 2, Args: map[string]any{"a": 1.0}}, X: "q"}, Y: 3}, deep)
	var exported plainEmbedExported
	require.True(t, decodeTypedPlain([]byte(`{"Z":"z","w":true}`), &exported, true))
	assert.Equal(t, "z", exported.Z)
	// json.RawMessage is kept as its text, a copy of it, on the fast path.
	input := []byte(`{"raw": {"a" : [1, "\u0026"]} ,"f32":null}`)
	var custom plainWithCustom
	require.True(t, decodeTypedPlain(input, &custom, true))
	assert.Equal(t, `{"a" : [1, "\u0026"]}`, string(custom.Raw))
	input[8] = 'X'
	assert.Equal(t, `{"a" : [1, "\u0026"]}`, string(custom.Raw))
	var items []json.RawMessage
	require.NoError(t, decodeJSON([]byte(`[null, 1 ,"s"]`), &items, false))
	assert.Equal(t, []json.RawMessage{json.RawMessage("null"), json.RawMessage("1"), json.RawMessage(`"s"`)}, items)
	// A non-zero target is left to encoding/json, which merges into it.
	v = plainTarget{S: "keep"}
	assert.False(t, decodeTypedPlain([]byte(`{"i":1}`), &v, false))
}

func TestDecodeJSONErrorsAreEncodingJSONs(t *testing.T) {
	var v plainInner
	err := decodeJSON([]byte(`{"name":"a","extra":1}`), &v, true)
	assert.EqualError(t, err, `json: unknown field "extra"`)
	err = decodeJSON([]byte(`{"count":1.5}`), &plainInner{}, false)
	var te *json.UnmarshalTypeError
	assert.ErrorAs(t, err, &te)
}

func FuzzDecodeTypedPlain(f *testing.F) {
	for _, c := range typedCases(f) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, input []byte) { checkAllTyped(t, input) })
}
