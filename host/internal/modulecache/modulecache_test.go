package modulecache

import (
	"bufio"
	"crypto/sha256"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	testKind  = Kind{ID: 9, Dir: "test", Ext: ".bin", Version: 3, Max: 1 << 10}
	moduleA   = Digest(sha256.Sum256([]byte("module a")))
	moduleB   = Digest(sha256.Sum256([]byte("module b")))
	bodyParts = [][]byte{[]byte("hello, "), []byte("cache")}
)

// Each way of reading a file trusts it only when it is intact and of the module, kind and
// version asked for; everything else is an error the caller answers by making the file again.
func TestAFileIsTrustedOnlyWhenItIsTheModulesAndIntact(t *testing.T) {
	readers := map[string]func(d Dir, k Kind, m Digest) ([]byte, error){
		"Read": func(d Dir, k Kind, m Digest) ([]byte, error) { return d.Read(k, "key", m) },
		"Map": func(d Dir, k Kind, m Digest) ([]byte, error) {
			b, release, err := d.Map(k, "key", m)
			if err != nil {
				return nil, err
			}
			defer release()
			return append([]byte(nil), b...), nil
		},
		"Stream": func(d Dir, k Kind, m Digest) ([]byte, error) {
			var out []byte
			err := d.Stream(k, "key", m, func(r *bufio.Reader, size int64) error {
				var err error
				out, err = io.ReadAll(r)
				return err
			})
			return out, err
		},
	}
	cases := []struct {
		name   string
		damage func(b []byte) []byte
		kind   Kind
		module Digest
		want   error
	}{
		{name: "intact", kind: testKind, module: moduleA},
		{name: "another module's file", kind: testKind, module: moduleB, want: ErrForeign},
		{name: "another kind", kind: Kind{ID: 8, Dir: "test", Ext: ".bin", Version: 3}, module: moduleA, want: ErrForeign},
		{name: "a body byte changed", damage: func(b []byte) []byte { b[headerSize+1] ^= 1; return b }, kind: testKind, module: moduleA, want: ErrDamaged},
		{name: "the digest edited", damage: func(b []byte) []byte { b[20] ^= 1; return b }, kind: testKind, module: moduleA, want: ErrDamaged},
		{name: "truncated", damage: func(b []byte) []byte { return b[:len(b)-1] }, kind: testKind, module: moduleA, want: ErrDamaged},
		{name: "bytes appended", damage: func(b []byte) []byte { return append(b, 0) }, kind: testKind, module: moduleA, want: ErrDamaged},
		{name: "not a cache file", damage: func([]byte) []byte { return []byte("{\"grants\": []}") }, kind: testKind, module: moduleA, want: ErrDamaged},
		{name: "empty", damage: func([]byte) []byte { return nil }, kind: testKind, module: moduleA, want: ErrDamaged},
	}
	for name, read := range readers {
		for _, c := range cases {
			t.Run(name+"/"+c.name, func(t *testing.T) {
				d := Dir(t.TempDir())
				require.NoError(t, d.Write(testKind, "key", moduleA, bodyParts...))
				if c.damage != nil {
					b, err := os.ReadFile(d.Path(testKind, "key"))
					require.NoError(t, err)
					require.NoError(t, os.WriteFile(d.Path(testKind, "key"), c.damage(b), 0o644))
				}
				if c.kind.ID != testKind.ID {
					// Another kind under the same name: the file is read as that kind.
					c.kind.Version = testKind.Version
				}
				got, err := read(d, c.kind, c.module)
				if c.want == nil {
					require.NoError(t, err)
					assert.Equal(t, "hello, cache", string(got))
					return
				}
				require.ErrorIs(t, err, c.want)
				assert.True(t, IsUntrusted(err))
			})
		}
	}
}

// WriteFunc writes the same file as Write, and refuses a body of another length than announced.
func TestWriteFuncIsWrite(t *testing.T) {
	d := Dir(t.TempDir())
	require.NoError(t, d.WriteFunc(testKind, "key", moduleA, 12, func(w io.Writer) error {
		_, err := w.Write([]byte("hello, cache"))
		return err
	}))
	viaFunc, err := os.ReadFile(d.Path(testKind, "key"))
	require.NoError(t, err)
	require.NoError(t, d.Write(testKind, "key", moduleA, bodyParts...))
	viaWrite, err := os.ReadFile(d.Path(testKind, "key"))
	require.NoError(t, err)
	assert.Equal(t, viaWrite, viaFunc)
	err = d.WriteFunc(testKind, "key", moduleA, 3, func(w io.Writer) error { _, err := w.Write([]byte("four")); return err })
	assert.ErrorContains(t, err, "wrote 4 bytes of a 3-byte body")
	got, err := d.Read(testKind, "key", moduleA)
	require.NoError(t, err)
	assert.Equal(t, "hello, cache", string(got), "a failed write leaves the file as it was")
}

func TestAMissingFileIsMissing(t *testing.T) {
	d := Dir(t.TempDir())
	_, err := d.Read(testKind, "key", moduleA)
	assert.True(t, IsMissing(err))
	assert.False(t, IsUntrusted(err))
	_, err = d.Check(testKind, "key", moduleA)
	assert.True(t, IsMissing(err))
}

// Another version of a kind is another file name, and never read as this one.
func TestVersionsAreApart(t *testing.T) {
	d := Dir(t.TempDir())
	v4 := testKind
	v4.Version = 4
	require.NoError(t, d.Write(testKind, "key", moduleA, bodyParts...))
	assert.NotEqual(t, d.Path(testKind, "key"), d.Path(v4, "key"))
	require.NoError(t, os.Rename(d.Path(testKind, "key"), d.Path(v4, "key")))
	_, err := d.Read(v4, "key", moduleA)
	assert.ErrorIs(t, err, ErrForeign, "a v3 body renamed as v4 is foreign")
}

// Read refuses a file longer than its kind allows before reading it.
func TestReadIsBounded(t *testing.T) {
	d := Dir(t.TempDir())
	require.NoError(t, d.Write(testKind, "key", moduleA, make([]byte, testKind.Max+1)))
	_, err := d.Read(testKind, "key", moduleA)
	assert.ErrorIs(t, err, ErrDamaged)
	n, err := d.Check(testKind, "key", moduleA)
	require.NoError(t, err, "Check reads any size through a small buffer")
	assert.Equal(t, testKind.Max+1, n)
}

// A write is whole or absent: no temporary file is left, and a file being replaced reads as the
// old or the new one.
func TestWritesLeaveNothingBehind(t *testing.T) {
	d := Dir(t.TempDir())
	require.NoError(t, d.Write(testKind, "key", moduleA, []byte("one")))
	require.NoError(t, d.Write(testKind, "key", moduleA, []byte("two")))
	entries, err := os.ReadDir(string(d) + "/test")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	got, err := d.Read(testKind, "key", moduleA)
	require.NoError(t, err)
	assert.Equal(t, "two", string(got))
	d.Forget(testKind, "key")
	assert.False(t, d.Exists(testKind, "key"))
}
