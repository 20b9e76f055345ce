package pdk

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The splitter must never change what a plugin sees: for every input encoding/json accepts, the
// split decode gives the same message; for one it refuses, the split decode refuses it too, or
// the only difference is a spec that is not JSON, which DecodeSpec then refuses.
func checkSameAsJSON(t *testing.T, input []byte) {
	t.Helper()
	var want, got reconcileMessage
	wantErr := json.Unmarshal(input, &want)
	gotErr := decodeReconcile(input, &got, false)
	if wantErr != nil {
		if gotErr == nil {
			assert.False(t, json.Valid(got.Spec), "accepted %q, which encoding/json refuses (%v), with a valid spec", input, wantErr)
			var v map[string]any
			assert.Error(t, got.DecodeSpec(&v))
		}
		return
	}
	require.NoError(t, gotErr, "%q", input)
	assert.Equal(t, want.ABIVersion, got.ABIVersion, "%q", input)
	assert.Equal(t, want.Object, got.Object, "%q", input)
	assert.Equal(t, string(want.Spec), string(got.Spec), "%q", input)
	assert.Equal(t, want.Status, got.Status, "%q", input)
	assert.Equal(t, want.Credentials, got.Credentials, "%q", input)
	// A plugin that declared SkipStatus gets the same message without the status.
	var skipped reconcileMessage
	require.NoError(t, decodeReconcile(input, &skipped, true), "%q", input)
	want.Status = nil
	assert.Equal(t, want.ABIVersion, skipped.ABIVersion, "%q", input)
	assert.Equal(t, want.Object, skipped.Object, "%q", input)
	assert.Equal(t, string(want.Spec), string(skipped.Spec), "%q", input)
	assert.Nil(t, skipped.Status, "%q", input)
}

func TestDecodeReconcileMatchesEncodingJSON(t *testing.T) {
	var cases []string
	raw, err := os.ReadFile("testdata/envelopes.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &cases))
	for _, c := range cases {
		checkSameAsJSON(t, []byte(c))
	}
}

// A per-group plugin's input names its credential group, and the PDK's own decoder reads it.
func TestDecodeReconcileReadsTheCredentials(t *testing.T) {
	slow := slowDecodes.Load()
	var msg reconcileMessage
	require.NoError(t, decodeReconcile([]byte(`{"abi_version":1,"object":{"kind":"K","name":"a"},"spec":{},`+
		`"credentials":{"namespace":"team-a","secret_name":"s1","cloud_name":"c1"}}`), &msg, true))
	assert.Equal(t, Credentials{Namespace: "team-a", SecretName: "s1", CloudName: "c1"}, msg.Credentials)
	assert.Equal(t, slow, slowDecodes.Load(), "without encoding/json")
}

func TestDecodeReconcileKeepsTheSpecInPlace(t *testing.T) {
	input := []byte(`{"abi_version":1,"object":{"kind":"K","name":"a","generation":2},"spec":{"x":"}]\"{"},"status":{"id":"r1"}}`)
	var msg reconcileMessage
	require.NoError(t, decodeReconcile(input, &msg, false))
	assert.Equal(t, `{"x":"}]\"{"}`, string(msg.Spec))
	assert.Equal(t, "r1", msg.Status["id"])
	assert.Equal(t, int64(2), *msg.Object.Generation)
	// A slice of the input, capped so appending to it cannot write over the status.
	assert.Equal(t, len(msg.Spec), cap(msg.Spec))
}

func TestDecodePrune(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  []string
		empty bool
	}{
		{input: `{"abi_version":1,"credentials":{"namespace":"n","secret_name":"s","cloud_name":"c"},"desired_specs":[{"name":"a"} , {"name":"b,]"}],"authoritative_empty":false}`,
			want: []string{`{"name":"a"}`, `{"name":"b,]"}`}},
		{input: `{"abi_version":1,"desired_specs":[],"authoritative_empty":true}`, want: []string{}, empty: true},
		{input: `{"abi_version":1,"desired_specs":null}`},
		{input: `{"abi_version":1,"Desired_Specs":[{"name":"x"}]}`, want: []string{`{"name":"x"}`}},
	} {
		var want, got pruneMessage
		require.NoError(t, json.Unmarshal([]byte(tc.input), &want))
		require.NoError(t, decodePrune([]byte(tc.input), &got), tc.input)
		assert.Equal(t, want.Credentials, got.Credentials)
		assert.Equal(t, tc.empty, got.AuthoritativeEmpty)
		assert.Equal(t, want.DesiredSpecs == nil, got.DesiredSpecs == nil, tc.input)
		var specs []string
		for _, s := range got.DesiredSpecs {
			specs = append(specs, string(s))
		}
		if tc.want != nil && len(tc.want) == 0 {
			assert.Empty(t, specs)
		} else {
			assert.Equal(t, tc.want, specs, tc.input)
		}
	}
}

func TestDecodeSpecsOneByOne(t *testing.T) {
	r := PruneRequest{DesiredSpecs: []json.RawMessage{json.RawMessage(`{"name":"a"}`), nil, json.RawMessage(`{"name":"c"}`)}}
	var out []struct{ Name string }
	require.NoError(t, r.DecodeSpecs(&out))
	assert.Equal(t, []struct{ Name string }{{"a"}, {""}, {"c"}}, out)

	r.DesiredSpecs = []json.RawMessage{json.RawMessage(`{"name":1}`)}
	assert.ErrorContains(t, r.DecodeSpecs(&out), "desired specs: [0]: ")
	assert.ErrorContains(t, r.DecodeSpecs(out), "needs a non-nil pointer to a slice")

	r.DesiredSpecs = nil
	require.NoError(t, r.DecodeSpecs(&out))
	assert.NotNil(t, out)
	assert.Empty(t, out)
}

func FuzzDecodeReconcile(f *testing.F) {
	var cases []string
	raw, err := os.ReadFile("testdata/envelopes.json")
	require.NoError(f, err)
	require.NoError(f, json.Unmarshal(raw, &cases))
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, input []byte) { checkSameAsJSON(t, input) })
}

// decodePlain either gives exactly what encoding/json gives an `any`, or declines.
func checkPlain(t *testing.T, input []byte) {
	t.Helper()
	got, ok := decodePlain(input)
	// skip takes exactly what value takes, without building it.
	d := plainDecoder{b: input}
	skipped := d.skip(0)
	d.space()
	assert.Equal(t, ok, skipped && d.i == len(input), "skip and decodePlain disagree on %q", input)
	if !ok {
		return
	}
	var want any
	require.NoError(t, json.Unmarshal(input, &want), "decodePlain accepted %q", input)
	assert.Equal(t, want, got, "%q", input)
}

func TestDecodePlainMatchesEncodingJSON(t *testing.T) {
	var cases []string
	raw, err := os.ReadFile("testdata/plain-values.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &cases))
	for _, c := range cases {
		checkPlain(t, []byte(c))
	}
	// The status the host writes for a converged CR takes the fast path.
	_, ok := decodePlain([]byte(`{"syncStatus":"Synced","observedGeneration":3,"lastSyncTime":"2026-12-01T01:00:00Z",` +
		`"conditions":[{"type":"Ready","status":"True","reason":"Synced","message":"Successfully reconciled","observedGeneration":3}]}`))
	assert.True(t, ok)
	// Escapes and UTF-8 are plain too: Go's encoder writes "&" in a page's next link as \u0026,
	// Python's every non-ASCII character as an escape.
	for in, want := range map[string]any{
		`{"next":"http://ironic/v1/runbooks?detail=True\u0026marker=a1"}`: map[string]any{"next": "http://ironic/v1/runbooks?detail=True&marker=a1"},
		`"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n"`:                         "café 😀 \"q\" \\ / \n",
		`["日本"]`: []any{"日本"},
	} {
		got, ok := decodePlain([]byte(in))
		assert.True(t, ok, "%s", in)
		assert.Equal(t, want, got, "%s", in)
	}
	// What encoding/json repairs (invalid UTF-8, a lone surrogate) is left to it.
	for _, in := range []string{"\"\xff\"", "\"\xed\xa0\x80\"", "\"\xc3\"", `"\ud83d"`, `"\ud83d\u0041"`} {
		_, ok := decodePlain([]byte(in))
		assert.False(t, ok, "%q", in)
		checkPlain(t, []byte(in))
		checkAllTyped(t, []byte(in))
	}
}

func FuzzDecodePlain(f *testing.F) {
	var cases []string
	raw, err := os.ReadFile("testdata/plain-values.json")
	require.NoError(f, err)
	require.NoError(f, json.Unmarshal(raw, &cases))
	for _, c := range cases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, input []byte) { checkPlain(t, input) })
}
