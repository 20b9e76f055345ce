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

	"github.com/openstack-sync/openstack-sync/host/internal/memo"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// without returns the v1 entry points minus the named exports.
func without(names ...string) []wasmtest.Func {
	var out []wasmtest.Func
	for _, f := range wasmtest.EntryPoints() {
		keep := true
		for _, n := range names {
			keep = keep && f.Name != n
		}
		if keep {
			out = append(out, f)
		}
	}
	return out
}

func writeModule(t *testing.T, m wasmtest.Module) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.wasm")
	require.NoError(t, os.WriteFile(path, m.Encode(), 0o644))
	return path
}

func TestStructurallyBadModulesAreRefusedBeforeInstantiation(t *testing.T) {
	cases := []struct {
		name   string
		module wasmtest.Module
		want   string
	}{
		{"missing reconcile export", wasmtest.Module{Memory: true, Exports: without("reconcile")},
			`does not export the required entry point "reconcile"`},
		{"entry point with the wrong type", wasmtest.Module{Memory: true, Exports: append(without("reconcile"),
			wasmtest.Func{Name: "reconcile", Params: []byte{wasmtest.I32}, Results: []byte{wasmtest.I32}})},
			`entry point "reconcile" has the wrong type: have (i32) -> (i32), want () -> (i32)`},
		{"newer ABI", wasmtest.Module{Memory: true, Exports: append(without("openstack_sync_abi_v1"),
			wasmtest.Func{Name: "openstack_sync_abi_v2"})},
			"speaks ABI version [2] but this host supports version 1"},
		{"no ABI marker", wasmtest.Module{Memory: true, Exports: without("openstack_sync_abi_v1")},
			"exports no openstack_sync_abi_v<N> marker"},
		{"unknown module import", wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
			Imports: []wasmtest.Func{{Module: "env", Name: "socket_open", Results: []byte{wasmtest.I32}}}},
			"imports env.socket_open; only wasi_snapshot_preview1 (a subset), extism:host/env and extism:host/user are allowed"},
		{"WASI outside the subset", wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
			Imports: []wasmtest.Func{{Module: "wasi_snapshot_preview1", Name: "path_open",
				Params: []byte{wasmtest.I32, wasmtest.I32}, Results: []byte{wasmtest.I32}}}},
			"imports wasi_snapshot_preview1.path_open, which is outside the allowed WASI subset"},
		{"WASI socket", wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
			Imports: []wasmtest.Func{{Module: "wasi_snapshot_preview1", Name: "sock_accept",
				Params: []byte{wasmtest.I32, wasmtest.I32, wasmtest.I32}, Results: []byte{wasmtest.I32}}}},
			"imports wasi_snapshot_preview1.sock_accept, which is outside the allowed WASI subset"},
		{"unknown user function", wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
			Imports: []wasmtest.Func{{Module: "extism:host/user", Name: "keystone_token", Results: []byte{wasmtest.I64}}}},
			"imports extism:host/user.keystone_token, which this host does not provide (it provides: block_read, block_write, input_read, openstack_request, source_request, unchanged)"},
		{"kernel import with the wrong type", wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints(),
			Imports: []wasmtest.Func{{Module: "extism:host/env", Name: "alloc", Params: []byte{wasmtest.I32}, Results: []byte{wasmtest.I32}}}},
			"imports extism:host/env.alloc with the wrong type: have (i32) -> (i32), want (i64) -> (i64)"},
		{"command module", wasmtest.Module{Memory: true, Exports: append(without("_initialize"), wasmtest.Func{Name: "_start"})},
			"is a WASI command (exports _start); build it as a reactor (Go: -buildmode=c-shared"},
		{"no memory", wasmtest.Module{Exports: wasmtest.EntryPoints()}, `does not export its memory as "memory"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _ := testOptions(t)
			path := writeModule(t, c.module)
			_, err := Load(context.Background(), path, o)
			require.Error(t, err)
			var le *LoadError
			require.ErrorAs(t, err, &le)
			assert.Contains(t, err.Error(), "wasm plugin "+path+": ")
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestAWellFormedTinyModuleGetsAsFarAsItsMetadata(t *testing.T) {
	// The tiny module passes every structural check; its metadata call returns 0 without output,
	// which the host must refuse clearly rather than load a nameless plugin.
	o, _ := testOptions(t)
	path := writeModule(t, wasmtest.Module{Memory: true, Exports: wasmtest.EntryPoints()})
	_, err := Load(context.Background(), path, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metadata is not valid JSON")
}

func TestNotWasmAndUnreadableFiles(t *testing.T) {
	o, _ := testOptions(t)
	path := filepath.Join(t.TempDir(), "junk.wasm")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\necho hi\n"), 0o644))
	_, err := Load(context.Background(), path, o)
	assert.ErrorContains(t, err, "wasm plugin "+path+": not a valid WebAssembly module")

	_, err = Load(context.Background(), filepath.Join(t.TempDir(), "absent.wasm"), o)
	assert.ErrorContains(t, err, "cannot read the module")
}

func TestDigestIsChecked(t *testing.T) {
	path := guest(t, "pdkmock")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	good := hex.EncodeToString(sum[:])
	bad := hex.EncodeToString(make([]byte, 32))

	o, _ := testOptions(t)
	o.Digest = "sha256:" + good
	loadTest(t, path, o)

	o.Digest = good
	loadTest(t, path, o)

	o.Digest = "sha256:" + bad
	_, err = Load(context.Background(), path, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "wasm plugin "+path+": digest mismatch: expected sha256:"+bad+" (configured digest), actual sha256:"+good)

	o.Digest = "md5:abc"
	_, err = Load(context.Background(), path, o)
	assert.ErrorContains(t, err, `configured digest "md5:abc" is not a sha256 digest`)

	// The chart pins the digest in <PREFIX>_PLUGIN_SHA256.
	cases := []struct {
		name      string
		env       []string
		envPrefix string
		want      string
	}{
		{"pinned under the plugin's own prefix", []string{"MOCK_PLUGIN_SHA256=" + good}, "", ""},
		{"wrong pin under the plugin's own prefix", []string{"MOCK_PLUGIN_SHA256=" + bad}, "",
			"digest mismatch: expected sha256:" + bad + " (MOCK_PLUGIN_SHA256), actual sha256:" + good},
		{"wrong pin under an overriding prefix", []string{"OTHER_PLUGIN_SHA256=" + bad, "MOCK_PLUGIN_SHA256=" + good}, "OTHER",
			"(OTHER_PLUGIN_SHA256)"},
		{"garbage pin", []string{"MOCK_PLUGIN_SHA256=yes"}, "", `MOCK_PLUGIN_SHA256 "yes" is not a sha256 digest`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, _ := testOptions(t, c.env...)
			o.EnvPrefix = c.envPrefix
			p, err := Load(context.Background(), path, o)
			if c.want == "" {
				require.NoError(t, err)
				p.Close(context.Background())
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "wasm plugin "+path+": ")
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestCompilationCache(t *testing.T) {
	path := guest(t, "pdkmock")
	dir := filepath.Join(t.TempDir(), "cache")
	o, logs := testOptions(t)
	o.CacheDir = dir
	loadTest(t, path, o)
	entries, err := filepath.Glob(filepath.Join(dir, "wazero-*", "*"))
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "the compiled module is written to the cache directory")
	assert.NotContains(t, logs.String(), "without a cache")

	notADir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notADir, nil, 0o644))
	o, logs = testOptions(t)
	o.CacheDir = notADir
	p := loadTest(t, path, o)
	assert.Contains(t, logs.String(), "compilation cache directory is not writable; compiling without a cache")
	assert.Equal(t, "mock", p.Metadata().Name, "the plugin still loads")

	// OPENSTACK_SYNC_CACHE_DIR=off: nothing is written anywhere and nothing is warned about.
	home := t.TempDir()
	o, logs = testOptions(t, CacheDirEnv+"=off", "HOME="+home, memo.MaxAgeEnv+"=1h")
	o.CacheDir, o.Memo = "", true
	p = loadTest(t, path, o)
	assert.Nil(t, p.memo, "no memo without a cache")
	ctx := context.Background()
	require.NoError(t, p.WaitForAPI(ctx, &fakeSession{}))
	require.NoError(t, p.Close(ctx))
	left, err := os.ReadDir(home)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing persists")
	assert.NotContains(t, logs.String(), "level=WARN")
}

func TestCacheDirResolution(t *testing.T) {
	env := func(kv map[string]string) Options {
		return Options{LookupEnv: func(k string) (string, bool) { v, ok := kv[k]; return v, ok }}
	}
	assert.Equal(t, "/x", Options{CacheDir: "/x"}.withDefaults().cacheDir())
	assert.Equal(t, "/env", env(map[string]string{CacheDirEnv: "/env", "XDG_CACHE_HOME": "/xdg"}).cacheDir())
	assert.Equal(t, "/xdg/openstack-sync/wazero", env(map[string]string{"XDG_CACHE_HOME": "/xdg", "HOME": "/h"}).cacheDir())
	assert.Equal(t, "/h/.cache/openstack-sync/wazero", env(map[string]string{"HOME": "/h"}).cacheDir())
	assert.Equal(t, "", env(nil).cacheDir())
}
