package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// --config reads the metadata from a record keyed by the module's digest, written by the first
// Load; the record is used only for those exact bytes and is checked like the guest's answer.
func TestMetadataRecord(t *testing.T) {
	ctx := context.Background()
	path := guest(t, "pdkmock")
	o, _ := testOptions(t)
	o.CacheDir = filepath.Join(t.TempDir(), "cache")
	record, err := recordFile(o.CacheDir, path)
	require.NoError(t, err)

	// No record yet: ReadMetadata loads the module, which writes one.
	m, err := ReadMetadata(ctx, path, o)
	require.NoError(t, err)
	assert.Equal(t, "mock", m.Name)
	raw, err := os.ReadFile(record)
	require.NoError(t, err, "loading the module writes the record")
	assert.Contains(t, string(raw), `"name":"mock"`)

	// With a record, the answer comes from it (an edit shows through), not from the module.
	edited := strings.Replace(string(raw), `"noun":"`, `"noun":"recorded `, 1)
	require.NoError(t, os.WriteFile(record, []byte(edited), 0o644))
	m, err = ReadMetadata(ctx, path, o)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(m.Noun, "recorded "), "noun %q", m.Noun)

	// The digest pin is checked on the record path too.
	pinned := o
	pinned.Digest = "sha256:" + strings.Repeat("0", 64)
	_, err = ReadMetadata(ctx, path, pinned)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "digest mismatch")

	// A record that breaks the rules is ignored: the module answers and the record is not trusted.
	for _, bad := range []string{`{`, `{"abi_version":1,"name":"Not A Label","env_prefix":"MOCK"}`,
		`{"abi_version":7,"name":"mock","env_prefix":"MOCK"}`} {
		require.NoError(t, os.WriteFile(record, []byte(bad), 0o644))
		o2, logs := testOptions(t)
		o2.CacheDir = o.CacheDir
		m, err = ReadMetadata(ctx, path, o2)
		require.NoError(t, err, bad)
		assert.Equal(t, "mock", m.Name)
		assert.False(t, strings.HasPrefix(m.Noun, "recorded "))
		assert.Contains(t, logs.String(), "ignoring an invalid metadata record", bad)
		again, err := os.ReadFile(record)
		require.NoError(t, err)
		assert.Equal(t, string(raw), string(again), "the load rewrote the record from the guest's answer")
	}

	// Without a cache there is no record: the module is loaded every time.
	noCache := o
	noCache.NoCache = true
	require.NoError(t, os.WriteFile(record, []byte(edited), 0o644))
	m, err = ReadMetadata(ctx, path, noCache)
	require.NoError(t, err)
	assert.False(t, strings.HasPrefix(m.Noun, "recorded "))
}

// A hook run loads a module this node has loaded before: its metadata comes from the record, so no
// instance is started only to ask the guest, and the compile guard's walk of every function body
// is not repeated (the compiled code is in the cache). Without a usable record the guest is asked.
func TestLoadTakesTheMetadataFromTheRecord(t *testing.T) {
	ctx := context.Background()
	path := guest(t, "pdkmock")
	o, logs := testOptions(t)
	o.CacheDir = filepath.Join(t.TempDir(), "cache")
	record, err := recordFile(o.CacheDir, path)
	require.NoError(t, err)

	first := loadTest(t, path, o)
	assert.Equal(t, uint64(1), first.nextID.Load(), "without a record the guest is asked on an instance")
	raw, err := os.ReadFile(record)
	require.NoError(t, err)
	edited := strings.Replace(string(raw), `"noun":"`, `"noun":"recorded `, 1)
	require.NoError(t, os.WriteFile(record, []byte(edited), 0o644))

	p := loadTest(t, path, o)
	assert.Zero(t, p.nextID.Load(), "no instance is started for the metadata")
	assert.True(t, strings.HasPrefix(p.Metadata().Noun, "recorded "), "noun %q", p.Metadata().Noun)
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the first call starts the first instance")
	assert.Equal(t, uint64(1), p.nextID.Load())
	after, err := os.ReadFile(record)
	require.NoError(t, err)
	assert.Equal(t, edited, string(after), "a load from the record leaves it as it is")

	require.NoError(t, os.WriteFile(record, []byte(`{"abi_version":1,"name":"Not A Label","env_prefix":"MOCK"}`), 0o644))
	p = loadTest(t, path, o)
	assert.Equal(t, uint64(1), p.nextID.Load(), "an invalid record is not used: the guest is asked")
	assert.Equal(t, "mock", p.Metadata().Name)
	assert.Contains(t, logs.String(), "ignoring an invalid metadata record")
}

// --config hashes the module through a small buffer; the digest is the one Load computes.
func TestHashModuleIsTheLoadDigest(t *testing.T) {
	path := guest(t, "pdkmock")
	_, want, release, err := readModule(path)
	require.NoError(t, err)
	release()
	got, err := hashModule(path)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = hashModule(filepath.Join(t.TempDir(), "missing.wasm"))
	var le *LoadError
	require.ErrorAs(t, err, &le)
	assert.Contains(t, err.Error(), "cannot read the module")
}

// A load returns its garbage to the operating system once loaded, so a hook run's peak RSS does
// not carry the module's decoding (docs/benchmarks.md, "Host-side costs"), and only then: each
// release costs a forced collection and the faults of a heap growing again.
func TestLoadReleasesItsGarbage(t *testing.T) {
	calls := 0
	release := releaseMemory
	releaseMemory = func() { calls++ }
	t.Cleanup(func() { releaseMemory = release })
	o, _ := testOptions(t)
	loadTest(t, guest(t, "pdkmock"), o)
	assert.Equal(t, 1, calls)
}
