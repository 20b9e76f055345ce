package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/admission"
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

	digest, _, err := admission.HashModule(path)
	require.NoError(t, err)
	cache := modulecache.Dir(o.CacheDir)
	shapedPath, dataPath := cache.Path(modulecache.Shaped, digest.String()), cache.Path(modulecache.Data, digest.String())
	cached, err := cache.Read(modulecache.Shaped, digest.String(), digest)
	require.NoError(t, err, "the first load caches the shaped module")
	module, err := os.ReadFile(path)
	require.NoError(t, err)
	want, err := admission.Limit(path, module)
	require.NoError(t, err)
	require.NotNil(t, want.Data, "a Go module's data is lifted out")
	require.Equal(t, want.Module, cached, "the cache holds what the shaping makes")
	data, err := cache.Read(modulecache.Data, digest.String(), digest)
	require.NoError(t, err, "and the data beside it")
	require.Equal(t, want.Data, data)

	o2, logs2 := testOptions(t)
	o2.CacheDir = o.CacheDir
	p := loadTest(t, path, o2)
	assert.Contains(t, logs2.String(), "cached_shape=true")
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the module from the cached shape runs")

	// Another module's shape and data, copied under this module's names.
	other := guest(t, "nativemock")
	loadTest(t, other, o)
	otherDigest, _, err := admission.HashModule(other)
	require.NoError(t, err)
	copyFile := func(from, to string) {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to, b, 0o644))
	}
	flip := func(file string) {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		b[len(b)/2] ^= 0xff
		require.NoError(t, os.WriteFile(file, b, 0o644))
	}
	// Bytes that pass the cache's check but are not what the shaping makes.
	forged := func(kind modulecache.Kind, body []byte) func() {
		return func() { require.NoError(t, cache.Write(kind, digest.String(), digest, body)) }
	}
	segmentOutside := append(append(binary.AppendUvarint(nil, 1), 0, 0x41), wasmtest.SLEB(1<<30)...)
	segmentOutside = append(binary.AppendUvarint(append(segmentOutside, 0x0b), 1), 'x')
	for _, c := range []struct {
		name   string
		damage func()
		log    string
	}{
		{"damaged shape", func() { flip(shapedPath) }, "ignoring a cached shaped module that is not this module's or is damaged"},
		{"damaged data", func() { flip(dataPath) }, "ignoring the cached files of the module: they are not what it makes"},
		{"another module's shape", func() {
			copyFile(cache.Path(modulecache.Shaped, otherDigest.String()), shapedPath)
		}, "ignoring a cached shaped module that is not this module's or is damaged"},
		{"another module's data", func() {
			copyFile(cache.Path(modulecache.Data, otherDigest.String()), dataPath)
		}, "ignoring the cached files of the module: they are not what it makes"},
		{"garbage with a valid checksum", forged(modulecache.Shaped, []byte("\x00asm garbage")), "ignoring the cached files of the module: they are not what it makes"},
		{"a data segment outside the memory", forged(modulecache.Data, segmentOutside), "does not fit the memory's minimum"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.damage()
			o3, logs3 := testOptions(t)
			o3.CacheDir = o.CacheDir
			p := loadTest(t, path, o3)
			assert.Contains(t, logs3.String(), c.log)
			assert.Contains(t, logs3.String(), "cached_shape=false")
			require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), "the module shaped again runs")
			again, err := cache.Read(modulecache.Shaped, digest.String(), digest)
			require.NoError(t, err)
			assert.Equal(t, want.Module, again, "the shape was written anew")
			again, err = cache.Read(modulecache.Data, digest.String(), digest)
			require.NoError(t, err)
			assert.Equal(t, want.Data, again, "the data was written anew")
			o4, logs4 := testOptions(t)
			o4.CacheDir = o.CacheDir
			loadTest(t, path, o4)
			assert.Contains(t, logs4.String(), "cached_shape=true", "and the next load uses them")
		})
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
	digest, _, err := admission.HashModule(path)
	require.NoError(t, err)
	cache := modulecache.Dir(o.CacheDir)
	dataPath := cache.Path(modulecache.Data, digest.String())
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
		damage(dataPath)
		err := p.WaitForAPI(ctx, &fakeSession{})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "cannot start an instance", name)
		assert.Contains(t, err.Error(), dataPath, name)
		assert.NoFileExists(t, cache.Path(modulecache.Shaped, digest.String()), name)
		p.Close(ctx)
		// The next load shapes the module again, and its instances start.
		o3, logs3 := testOptions(t)
		o3.CacheDir = o.CacheDir
		p = loadTest(t, path, o3)
		assert.Contains(t, logs3.String(), "cached_shape=false", name)
		require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}), name)
	}
}

// The cached shape is named by modulecache.ShapedVersion: a shaping that writes other bytes must come with a
// new version, or hosts would take modules shaped under the old rules for theirs.
func TestShapedVersionNamesTheShaping(t *testing.T) {
	m := wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(), Tables: []wasmtest.Table{{Min: 3}},
		Data: []wasmtest.Data{{Offset: 16, Bytes: []byte("ab")}, {Offset: 40, Bytes: []byte("cd")},
			{Offset: 9000, Bytes: []byte("ef")}}}
	out, err := admission.Limit("m.wasm", m.Encode())
	require.NoError(t, err)
	sum := sha256.Sum256(append(append([]byte{}, out.Module...), out.Data...))
	const want = "7c13378b3f218e401e0edffbb30a96eb69e5e8b0295ccf595d53e77d019e706b"
	assert.Equal(t, 3, modulecache.ShapedVersion)
	assert.Equal(t, want, hex.EncodeToString(sum[:]),
		"the shaping's output changed: bump modulecache.ShapedVersion, then update this digest and the version above")
}
