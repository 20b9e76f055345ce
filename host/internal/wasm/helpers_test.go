package wasm

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// guest builds (or finds cached) one of the Go test guests in testdata/guests.
func guest(tb testing.TB, name string) string {
	tb.Helper()
	return wasmtest.BuildGuest(tb, "testdata/guests", name, "../../../pdk")
}

// The shared doubles (wasmtest), under the names this package's tests use.
type (
	logBuffer   = wasmtest.LogBuffer
	fakeSession = wasmtest.Session
)

var (
	testLogger = wasmtest.Logger
	lookupIn   = wasmtest.LookupIn
	crRequest  = wasmtest.CRRequest
)

// testOptions are Options for a test: a private cache directory, the given environment and a
// captured log.
func testOptions(t testing.TB, env ...string) (Options, *logBuffer) {
	log, lb := testLogger()
	return Options{CacheDir: sharedCacheDir(t), LookupEnv: lookupIn(env), Logger: log}, lb
}

var (
	cacheDirOnce sync.Once
	cacheDir     string
)

// sharedCacheDir is one compilation cache for the whole test binary, so each guest compiles once.
func sharedCacheDir(t testing.TB) string {
	cacheDirOnce.Do(func() {
		dir, err := tempDirOutsideTest()
		require.NoError(t, err)
		cacheDir = dir
	})
	return cacheDir
}

func loadTest(t testing.TB, path string, o Options) *Plugin {
	t.Helper()
	p, err := load(context.Background(), path, o)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}
