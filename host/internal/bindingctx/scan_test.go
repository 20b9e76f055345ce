package bindingctx

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanCases are documents the scanner must decode itself, each as encoding/json does.
var scanCases = map[string]string{
	"escapes":           `[{"a":"q\"b\\s\/\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00 <\u0026>"}]`,
	"non-ASCII":         `[{"käse":"grüße ✓ 😀"}]`,
	"encoded U+FFFD":    "[{\"a\":\"\xef\xbf\xbd\"}]",
	"invalid UTF-8":     "[{\"a\":\"x\xffy\",\"\xc3\":1}]",
	"UTF-8 surrogate":   "[{\"a\":\"\xed\xa0\x80\"}]",
	"lone surrogates":   `[{"a":"\ud800","b":"\udc00x","c":"\ud800\u0041","d":"\ud800\ud800","e":"\ud800\\u1234"}]`,
	"numbers":           `[{"a":[0,-0,1,-12,1.5,-0.25e10,1E+3,2e-7,123456789012345678901234567890,1e999]}]`,
	"literals":          `[{"a":true,"b":false,"c":null,"d":[true,false,null]}]`,
	"white space":       " \t\r\n[ \n{ \"a\" : [ 1 , { } , [ ] ] , \"b\"\t:\"c\" } \r\n, {} ]\n\t ",
	"duplicate names":   `[{"a":1,"a":2,"snapshots":{"w":[{"metadata":{"managedFields":[1],"managedFields":{},"n":1,"n":2}}]},"snapshots":3}]`,
	"managed fields":    `[{"object":{"metadata":{"managedFields":[{"k":"v\u0041\"\\","n":[1,-2.5e3,true,false,null,{}]}],"name":"x"}}}]`,
	"not a CR's fields": `[{"objects":{"metadata":{"managedFields":1}},"snapshots":[{"metadata":{"managedFields":1}}],"x":{"metadata":{"managedFields":1}}}]`,
	"shapes":            `[{"objects":[1,"s",null,[{"metadata":{"managedFields":1}}],{"object":{"object":{"metadata":{"managedFields":1}}},"metadata":null}]}]`,
	"metadata not obj":  `[{"object":{"metadata":["managedFields",{"managedFields":1}]}}]`,
	"empty":             ``,
	"blank":             " \n\t ",
	"empty list":        `[]`,
	"deep":              `[{"a":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}]`,
}

// scanDeclined are documents the scanner leaves to encoding/json: errors, so their text is
// encoding/json's, and what is too deep for it.
var scanDeclined = map[string]string{
	"not a list":          `{"binding":"b"}`,
	"item not an object":  `[{}, 3]`,
	"trailing data":       `[] []`,
	"trailing bracket":    `[] ]`,
	"truncated":           `[{"a":"b`,
	"trailing comma":      `[{"a":1,}]`,
	"list trailing comma": `[{"a":[1,]}]`,
	"missing colon":       `[{"a" 1}]`,
	"name not a string":   `[{1:2}]`,
	"leading zero":        `[{"a":01}]`,
	"bare minus":          `[{"a":-}]`,
	"dot without digits":  `[{"a":1.}]`,
	"exponent no digits":  `[{"a":1e+}]`,
	"plus sign":           `[{"a":+1}]`,
	"bad literal":         `[{"a":tru}]`,
	"literal prefix":      `[{"a":truex}]`,
	"control character":   "[{\"a\":\"x\ny\"}]",
	"bad escape":          `[{"a":"\x"}]`,
	"short unicode":       `[{"a":"\u12g4"}]`,
	"skipped bad escape":  `[{"object":{"metadata":{"managedFields":["\q"]}}}]`,
	"skipped truncated":   `[{"object":{"metadata":{"managedFields":[{"a":1}`,
	"skipped bad number":  `[{"object":{"metadata":{"managedFields":[01]}}}]`,
	"skipped control":     "[{\"object\":{\"metadata\":{\"managedFields\":[\"\t\"]}}}]",
	"byte order mark":     "\xef\xbb\xbf[]",
	"too deep":            `[{"a":` + strings.Repeat("[", maxScanDepth+10) + strings.Repeat("]", maxScanDepth+10) + `}]`,
}

// indexReader indexes a document read through r with a buffer of size bytes, its CRs read again
// from src.
func indexReader(r io.Reader, src source, size int) (*Document, bool) {
	d := &indexer{scanner{r: r, buf: make([]byte, 0, size), keys: map[string]string{}}}
	contexts, ok := d.index()
	if !ok {
		return nil, false
	}
	return newDocument(contexts, src, nil), true
}

func TestScanMatchesEncodingJSON(t *testing.T) {
	cases := map[string]string{}
	for name, doc := range scanCases {
		cases[name] = doc
	}
	for _, path := range fixtures(t) {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		cases[path] = string(raw)
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			want := referenceView(t, []byte(doc))
			got, ok := indexReader(strings.NewReader(doc), strings.NewReader(doc), 64<<10)
			require.True(t, ok, "the index declined a document encoding/json reads")
			assert.Equal(t, want, view(t, got))
			streamed, ok := indexReader(iotest.OneByteReader(strings.NewReader(doc)), strings.NewReader(doc), 1)
			require.True(t, ok, "read a byte at a time")
			assert.Equal(t, want, view(t, streamed))
			parsed, err := Parse([]byte(doc))
			require.NoError(t, err)
			assert.Equal(t, want, view(t, parsed))
		})
	}
	for name, doc := range scanDeclined {
		t.Run("declined/"+name, func(t *testing.T) {
			_, ok := indexReader(strings.NewReader(doc), strings.NewReader(doc), 64<<10)
			assert.False(t, ok)
			_, ok = indexReader(iotest.OneByteReader(strings.NewReader(doc)), strings.NewReader(doc), 1)
			assert.False(t, ok)
			assertParseIsEncodingJSONs(t, []byte(doc))
		})
	}
}

func TestScanDeclinesOnAReadError(t *testing.T) {
	_, ok := indexReader(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader(`[{"a":1}]`))), strings.NewReader(`[{"a":1}]`), 1)
	assert.False(t, ok, "the second read fails")
}

// Read hands what the index declines to encoding/json from the file's start.
func TestReadFallsBackToEncodingJSON(t *testing.T) {
	for name, doc := range scanDeclined {
		path := filepath.Join(t.TempDir(), "ctx.json")
		require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
		_, wantErr := decodeGeneric(strings.NewReader(doc))
		got, err := Read(path)
		assert.Equal(t, errorText(wantErr), errorText(err), name)
		if wantErr == nil {
			require.NoError(t, err)
			assert.Equal(t, referenceView(t, []byte(doc)), view(t, got), name)
		}
	}
}

// assertParseIsEncodingJSONs checks Parse against the reference decoding, error text included.
func assertParseIsEncodingJSONs(t *testing.T, data []byte) {
	t.Helper()
	_, wantErr := decodeGeneric(bytes.NewReader(data))
	got, err := Parse(data)
	require.Equal(t, errorText(wantErr), errorText(err))
	if wantErr == nil {
		require.Equal(t, referenceView(t, data), view(t, got))
	}
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzScanMatchesEncodingJSON: whatever the index reads, streamed or from memory, reads as
// encoding/json's decoding of the document does (every member the planner reads, every CR), and
// it reads only what that reads without error.
func FuzzScanMatchesEncodingJSON(f *testing.F) {
	for _, doc := range scanCases {
		f.Add([]byte(doc))
	}
	for _, doc := range scanDeclined {
		f.Add([]byte(doc))
	}
	for _, path := range fixtures(f) {
		if raw, err := os.ReadFile(path); err == nil {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, wantErr := decodeGeneric(bytes.NewReader(data))
		got, ok := indexReader(bytes.NewReader(data), bytes.NewReader(data), 64<<10)
		if ok {
			require.NoError(t, wantErr, "the index read a document encoding/json refuses")
			require.Equal(t, referenceView(t, data), view(t, got))
		}
		streamed, sok := indexReader(iotest.OneByteReader(bytes.NewReader(data)), bytes.NewReader(data), 1)
		require.Equal(t, ok, sok, "streamed and in memory agree")
		if sok {
			require.Equal(t, view(t, got), view(t, streamed))
		}
		assertParseIsEncodingJSONs(t, data)
	})
}

// BenchmarkScanString is the cost of a string with escapes, as kubectl's last-applied annotation
// has them.
func BenchmarkScanString(b *testing.B) {
	ann, err := json.Marshal(map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat(`{"apiVersion":"v1","kind":"X"}`, 30)})
	require.NoError(b, err)
	doc := []byte(`[{"object":{"metadata":{"annotations":` + string(ann) + `}}}]`)
	for b.Loop() {
		d, err := Parse(doc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.Contexts[0].Object(); err != nil {
			b.Fatal(err)
		}
	}
}
