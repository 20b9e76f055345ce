package wasm

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// writeTestRecord writes raw as the module's record, as a load would.
func writeTestRecord(t *testing.T, cacheDir, path string, raw []byte) {
	t.Helper()
	digest, _, err := admission.HashModule(path)
	require.NoError(t, err)
	require.NoError(t, modulecache.Dir(cacheDir).Write(modulecache.Record, digest.String(), digest, raw))
}

// readTestRecord is the module's record, checked.
func readTestRecord(t *testing.T, cacheDir, path string) []byte {
	t.Helper()
	digest, _, err := admission.HashModule(path)
	require.NoError(t, err)
	raw, err := modulecache.Dir(cacheDir).Read(modulecache.Record, digest.String(), digest)
	require.NoError(t, err)
	return raw
}

// --config reads the metadata from the module's record, written by the first Load; the record is
// used only for those exact bytes (the cache's check ties it to the module's digest) and is
// checked like the guest's answer. A record edited in place, another module's record under this
// module's name, or one that breaks the rules is not used: the module answers, and the record is
// written anew from its answer.
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
	raw := readTestRecord(t, o.CacheDir, path)
	assert.Contains(t, string(raw), `"name":"mock"`)

	// With a record, the answer comes from it, not from the module.
	recorded := strings.Replace(string(raw), `"noun":"`, `"noun":"recorded `, 1)
	writeTestRecord(t, o.CacheDir, path, []byte(recorded))
	m, err = ReadMetadata(ctx, path, o)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(m.Noun, "recorded "), "noun %q", m.Noun)

	// The digest pin is checked on the record path too.
	pinned := o
	pinned.Digest = "sha256:" + strings.Repeat("0", 64)
	_, err = ReadMetadata(ctx, path, pinned)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "digest mismatch")

	other := guest(t, "rawmock")
	_, err = ReadMetadata(ctx, other, o)
	require.NoError(t, err)
	otherRecord, err := recordFile(o.CacheDir, other)
	require.NoError(t, err)
	editedInPlace := func() {
		writeTestRecord(t, o.CacheDir, path, raw)
		b, err := os.ReadFile(record)
		require.NoError(t, err)
		b = []byte(strings.Replace(string(b), `"grants":[`, `"grants":[{"service":"identity","methods":["POST"],"paths":["v3/users"]},`, 1))
		require.NoError(t, os.WriteFile(record, b, 0o644))
	}
	cases := map[string]struct {
		damage func()
		log    string
	}{
		"a grant added in place": {damage: editedInPlace, log: "ignoring a metadata record that is not this module's or is damaged"},
		"another module's record under this module's name": {damage: func() {
			b, err := os.ReadFile(otherRecord)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(record, b, 0o644))
		}, log: "ignoring a metadata record that is not this module's or is damaged"},
		"not a record": {damage: func() { require.NoError(t, os.WriteFile(record, []byte(`{`), 0o644)) },
			log: "ignoring a metadata record that is not this module's or is damaged"},
		"a record that breaks the rules": {damage: func() {
			writeTestRecord(t, o.CacheDir, path, []byte(`{"abi_version":1,"name":"Not A Label","env_prefix":"MOCK"}`))
		}, log: "ignoring an invalid metadata record"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			c.damage()
			o2, logs := testOptions(t)
			o2.CacheDir = o.CacheDir
			m, err = ReadMetadata(ctx, path, o2)
			require.NoError(t, err)
			assert.Equal(t, "mock", m.Name)
			assert.Contains(t, logs.String(), c.log)
			assert.Equal(t, string(raw), string(readTestRecord(t, o.CacheDir, path)), "the load rewrote the record from the guest's answer")
		})
	}

	// Without a cache there is no record: the module is loaded every time.
	noCache := o
	noCache.NoCache = true
	writeTestRecord(t, o.CacheDir, path, []byte(recorded))
	m, err = ReadMetadata(ctx, path, noCache)
	require.NoError(t, err)
	assert.False(t, strings.HasPrefix(m.Noun, "recorded "))
}

// A hook run loads a module this node has loaded before: its metadata comes from the record, so no
// instance is started only to ask the guest, and the compile guard's walk of every function body
// is not repeated (the compiled code is in the cache). The first instance the run starts asks the
// guest all the same, before any call: a record that differs from the module's own answer (a grant
// added to it, with its checksum made anew) is removed and every call of the run fails, so no
// request goes out under grants the module never declared. Without a usable record the guest is
// asked at load.
func TestLoadTakesTheMetadataFromTheRecord(t *testing.T) {
	ctx := context.Background()
	path := guest(t, "pdkmock")
	o, logs := testOptions(t)
	o.CacheDir = filepath.Join(t.TempDir(), "cache")

	first := loadTest(t, path, o)
	assert.Equal(t, uint64(1), first.nextID.Load(), "without a record the guest is asked on an instance")
	raw := readTestRecord(t, o.CacheDir, path)

	p := loadTest(t, path, o)
	assert.Zero(t, p.nextID.Load(), "no instance is started for the metadata")
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the first call starts the first instance, which agrees")
	assert.Equal(t, uint64(1), p.nextID.Load())
	assert.False(t, p.unverified.Load())

	widened := strings.Replace(string(raw), `"grants":[`, `"grants":[{"service":"identity","methods":["POST"],"paths":["v3/users"]},`, 1)
	require.NotEqual(t, string(raw), widened)
	writeTestRecord(t, o.CacheDir, path, []byte(widened))
	p = loadTest(t, path, o)
	session := &fakeSession{}
	_, err := p.Reconcile(ctx, session, nil, crRequest("a", map[string]any{"action": "requests", "count": 1}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the cached metadata record differs from the module's own metadata")
	assert.Empty(t, session.Requests(), "no request went out")
	assert.Contains(t, logs.String(), "the cached metadata record differs from the module's own answer")
	record, err := recordFile(o.CacheDir, path)
	require.NoError(t, err)
	assert.NoFileExists(t, record, "the record is removed")

	p = loadTest(t, path, o)
	assert.Equal(t, uint64(1), p.nextID.Load(), "the next load asks the guest")
	assert.Equal(t, string(raw), string(readTestRecord(t, o.CacheDir, path)))

	writeTestRecord(t, o.CacheDir, path, []byte(`{"abi_version":1,"name":"Not A Label","env_prefix":"MOCK"}`))
	p = loadTest(t, path, o)
	assert.Equal(t, uint64(1), p.nextID.Load(), "an invalid record is not used: the guest is asked")
	assert.Equal(t, "mock", p.Metadata().Name)
	assert.Contains(t, logs.String(), "ignoring an invalid metadata record")
}

// The bytes the pin is checked against are the bytes compiled: a load that shapes the module
// reads it once into its own memory and hashes that copy, so a file changed between the digest
// and the read is refused; and a file larger than the host loads is refused before it is read.
func TestTheCompiledBytesAreTheHashedBytes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.wasm")
	a := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints()}.Encode()
	require.NoError(t, os.WriteFile(path, a, 0o644))
	digest, size, err := admission.HashModule(path)
	require.NoError(t, err)
	assert.Equal(t, int64(len(a)), size)
	assert.Equal(t, sha256.Sum256(a), [32]byte(digest))
	got, err := admission.ReadModule(path, digest)
	require.NoError(t, err)
	assert.Equal(t, a, got)

	b := append([]byte{}, a...)
	b[len(b)-1] ^= 1 // same size, other bytes: a file rewritten in place
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err = admission.ReadModule(path, digest)
	require.Error(t, err)
	assert.Equal(t, "wasm plugin "+path+": the module file changed while it was loaded; load it again once it is written", err.Error())

	require.NoError(t, os.Truncate(path, admission.MaxModuleBytes+1))
	for _, read := range []func() error{
		func() error { _, _, err := admission.HashModule(path); return err },
		func() error { _, err := admission.ReadModule(path, digest); return err },
		func() error { _, err := Load(context.Background(), path, Options{NoCache: true}); return err },
	} {
		err := read()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is 16777217 bytes; the host loads modules of at most 16777216 bytes (16 MiB)")
	}
	_, _, err = admission.HashModule(filepath.Join(dir, "missing.wasm"))
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
