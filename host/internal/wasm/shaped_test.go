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

// A module this node loaded before is not shaped again: its shaped bytes and its lifted data come
// from the cache, are the bytes the shaping makes, and a damaged copy of either is ignored (and
// both are written anew).
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
	require.NotNil(t, want.data, "a Go module's data is lifted out")
	require.Equal(t, want.module, cached[:len(cached)-4], "the cache holds what the shaping makes")
	data, err := os.ReadFile(dataPath(o.CacheDir, digest))
	require.NoError(t, err, "and the data beside it")
	require.Equal(t, want.data, data[:len(data)-4])

	o2, logs2 := testOptions(t)
	o2.CacheDir = o.CacheDir
	p := loadTest(t, path, o2)
	assert.Contains(t, logs2.String(), "cached_shape=true")
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the module from the cached shape runs")

	for _, c := range []struct{ file, log string }{
		{shapedPath(o.CacheDir, digest), "ignoring a damaged cached shaped module"},
		{dataPath(o.CacheDir, digest), "ignoring the cached data of the shaped module"},
	} {
		b, err := os.ReadFile(c.file)
		require.NoError(t, err)
		b[len(b)/2] ^= 0xff
		require.NoError(t, os.WriteFile(c.file, b, 0o644))
		o3, logs3 := testOptions(t)
		o3.CacheDir = o.CacheDir
		p := loadTest(t, path, o3)
		assert.Contains(t, logs3.String(), c.log)
		assert.Contains(t, logs3.String(), "cached_shape=false")
		require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the module shaped again runs")
		again, err := os.ReadFile(shapedPath(o.CacheDir, digest))
		require.NoError(t, err)
		assert.Equal(t, want.module, again[:len(again)-4], "the damaged copy was written anew")
		again, err = os.ReadFile(dataPath(o.CacheDir, digest))
		require.NoError(t, err)
		assert.Equal(t, want.data, again[:len(again)-4], "the damaged copy was written anew")
	}
}

// The lifted data is read by every instance as it starts: one that finds it damaged or gone fails
// to start, naming the file, and takes the cached shape with it so that the next run shapes the
// module again; it never starts a guest on memory without its data.
func TestAnInstanceWithoutItsDataDoesNotStart(t *testing.T) {
	ctx := context.Background()
	path := guest(t, "pdkmock")
	o, _ := testOptions(t)
	o.CacheDir = filepath.Join(t.TempDir(), "cache")
	o.PoolSize = 1
	loadTest(t, path, o)
	digest, err := hashModule(path)
	require.NoError(t, err)
	for name, damage := range map[string]func(file string){
		"removed": func(file string) { require.NoError(t, os.Remove(file)) },
		"damaged": func(file string) {
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			b[len(b)/3] ^= 0xff
			require.NoError(t, os.WriteFile(file, b, 0o644))
		},
	} {
		o2, _ := testOptions(t)
		o2.CacheDir = o.CacheDir
		o2.PoolSize = 1
		p := loadTest(t, path, o2)
		damage(dataPath(o.CacheDir, digest))
		err := p.WaitForAPI(ctx, &fakeSession{})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "cannot start an instance", name)
		assert.Contains(t, err.Error(), dataPath(o.CacheDir, digest), name)
		assert.NoFileExists(t, shapedPath(o.CacheDir, digest), name)
		p.Close(ctx)
		// The next load shapes the module again, and its instances start.
		o3, logs3 := testOptions(t)
		o3.CacheDir = o.CacheDir
		p = loadTest(t, path, o3)
		assert.Contains(t, logs3.String(), "cached_shape=false", name)
		require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), name)
	}
}

// The cached shape is named by shapedVersion: a shaping that writes other bytes must come with a
// new version, or hosts would take modules shaped under the old rules for theirs.
func TestShapedVersionNamesTheShaping(t *testing.T) {
	m := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(), Tables: []wasmtest.Table{{Min: 3}},
		Data: []wasmtest.Data{{Offset: 16, Bytes: []byte("ab")}, {Offset: 40, Bytes: []byte("cd")},
			{Offset: 9000, Bytes: []byte("ef")}}}
	out, err := limitStructure("m.wasm", m.Encode())
	require.NoError(t, err)
	sum := sha256.Sum256(append(append([]byte{}, out.module...), out.data...))
	const want = "7c13378b3f218e401e0edffbb30a96eb69e5e8b0295ccf595d53e77d019e706b"
	assert.Equal(t, 2, shapedVersion)
	assert.Equal(t, want, hex.EncodeToString(sum[:]),
		"the shaping's output changed: bump shapedVersion, then update this digest and the version above")
}
