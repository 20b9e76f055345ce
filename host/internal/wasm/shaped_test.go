package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// A module this node loaded before is not shaped again: its shaped bytes come from the cache,
// are the bytes the shaping makes, and a damaged copy is ignored (and written anew).
func TestTheShapedModuleIsCached(t *testing.T) {
	ctx := context.Background()
	path := guest(t, "pdkmock")
	o, logs := testOptions(t)
	o.CacheDir = filepath.Join(t.TempDir(), "cache")
	loadTest(t, path, o)
	assert.Contains(t, logs.String(), "cached_shape=false")

	digest, err := hashModule(path)
	require.NoError(t, err)
	cached, err := os.ReadFile(shapedPath(o.CacheDir, digest))
	require.NoError(t, err, "the first load caches the shaped module")
	module, err := os.ReadFile(path)
	require.NoError(t, err)
	want, err := limitStructure(path, module)
	require.NoError(t, err)
	require.Equal(t, want, cached[:len(cached)-4], "the cache holds what the shaping makes")

	o2, logs2 := testOptions(t)
	o2.CacheDir = o.CacheDir
	p := loadTest(t, path, o2)
	assert.Contains(t, logs2.String(), "cached_shape=true")
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the module from the cached shape runs")

	cached[len(cached)/2] ^= 0xff
	require.NoError(t, os.WriteFile(shapedPath(o.CacheDir, digest), cached, 0o644))
	o3, logs3 := testOptions(t)
	o3.CacheDir = o.CacheDir
	loadTest(t, path, o3)
	assert.Contains(t, logs3.String(), "ignoring a damaged cached shaped module")
	assert.Contains(t, logs3.String(), "cached_shape=false")
	again, err := os.ReadFile(shapedPath(o.CacheDir, digest))
	require.NoError(t, err)
	assert.Equal(t, want, again[:len(again)-4], "the damaged copy was written anew")
}

// The cached shape is named by shapedVersion: a shaping that writes other bytes must come with a
// new version, or hosts would take modules shaped under the old rules for theirs.
func TestShapedVersionNamesTheShaping(t *testing.T) {
	m := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(), Tables: []wasmtest.Table{{Min: 3}},
		Data: []wasmtest.Data{{Offset: 16, Bytes: []byte("ab")}, {Offset: 40, Bytes: []byte("cd")},
			{Offset: 9000, Bytes: []byte("ef")}}}
	out, err := limitStructure("m.wasm", m.Encode())
	require.NoError(t, err)
	sum := sha256.Sum256(out)
	const want = "2db5f7eb71a36c65ad2a6432c742bb1ab8689f59985dd49a21508e965548c330"
	assert.Equal(t, 1, shapedVersion)
	assert.Equal(t, want, hex.EncodeToString(sum[:]),
		"the shaping's output changed: bump shapedVersion, then update this digest and the version above")
}
