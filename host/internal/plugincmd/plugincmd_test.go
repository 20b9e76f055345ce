package plugincmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// guest builds one of testdata/guests (cached across runs).
func guest(t *testing.T, name string) string {
	t.Helper()
	return wasmtest.BuildGuest(t, "testdata/guests", name, "../../../pdk")
}

// TestMain shares one compilation cache between the tests: each compiles the same few modules.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "plugincmd-cache-")
	if err != nil {
		panic(err)
	}
	os.Setenv(wasm.CacheDirEnv, dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestInspectShowsWhatTheModuleDeclares(t *testing.T) {
	path := guest(t, "scopes")
	code, out, errOut := runCmd(t, "inspect", path)
	require.Equal(t, exitOK, code, errOut)
	for _, want := range []string{
		"name:         neutron-address-scopes",
		"noun:         address scope",
		"version:      0.3.1",
		"description:  Neutron address scopes from AddressScope CRs",
		"source:       https://example.org/scopes-plugin",
		"env prefix:   NEUTRON_ADDRESS_SCOPE",
		"binding:      neutron-address-scopes",
		"abi version:  1",
		"lifecycle:    false",
		"delete:       none (a deleted CR's resource goes only through the prune, if any)",
		"prune:        true, over every credential group (it spares every live CR's spec)",
		"cleanup:      PRUNE=true: FINALIZED_PRUNE; PRUNE=false: BEST_EFFORT_PRUNE",
		"network GET,POST,DELETE v2.0/address-scopes v2.0/address-scopes/*",
		"sha256:       sha256:" + fileDigest(t, path),
		"extism:host/env.alloc (i64) -> (i64)",
		"openstack_sync_abi_v1 () -> ()",
		"memory memory",
	} {
		assert.Contains(t, out, want)
	}
}

// A lifecycle plugin that deletes per CR says so, and that it has no set prune: what `prune:
// false` alone made look like no cleanup at all.
func TestInspectShowsTheLifecycleAndPerCRDelete(t *testing.T) {
	code, out, errOut := runCmd(t, "inspect", guest(t, "projects"))
	require.Equal(t, exitOK, code, errOut)
	for _, want := range []string{
		"lifecycle:    true (status.id, status.resource, the Available and Progressing conditions)",
		"delete:       per CR (each CR being deleted goes to the plugin's delete; its finalizer waits for that delete)",
		"prune:        false",
		"cleanup:      PRUNE=true: FINALIZED_PRUNE; PRUNE=false: NONE",
	} {
		assert.Contains(t, out, want)
	}
	code, out, errOut = runCmd(t, "inspect", "--json", guest(t, "projects"))
	require.Equal(t, exitOK, code, errOut)
	var info wasm.Info
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	assert.True(t, info.Lifecycle)
	assert.True(t, info.HasDelete)
	assert.False(t, info.HasPrune)
	assert.Equal(t, "all", info.PruneScope)
}

func TestInspectJSON(t *testing.T) {
	path := guest(t, "scopes")
	code, out, errOut := runCmd(t, "inspect", "--json", path)
	require.Equal(t, exitOK, code, errOut)
	var info wasm.Info
	require.NoError(t, json.Unmarshal([]byte(out), &info))
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int(st.Size()), info.Size)
	assert.Equal(t, fileDigest(t, path), info.SHA256)
	assert.Equal(t, "neutron-address-scopes", info.Name)
	assert.Equal(t, "0.3.1", info.Version)
	assert.Equal(t, "https://example.org/scopes-plugin", info.Source)
	assert.Equal(t, "FINALIZED_PRUNE", info.Cleanup.WhenPrune)
	assert.Equal(t, []grant.Grant{{Service: "network", Methods: []string{"GET", "POST", "DELETE"},
		Paths: []string{"v2.0/address-scopes", "v2.0/address-scopes/*"}}}, info.Grants)
	assert.Contains(t, info.Exports, wasm.Function{Name: "reconcile", Type: "() -> (i32)"})
	assert.Contains(t, info.Imports, wasm.Function{Module: "extism:host/env", Name: "alloc", Type: "(i64) -> (i64)"})
}

func TestVerify(t *testing.T) {
	scopes := guest(t, "scopes")
	dir := t.TempDir()
	// Refused for three reasons at once: verify names them all, not only the first.
	broken := filepath.Join(dir, "broken.wasm")
	require.NoError(t, os.WriteFile(broken, wasmtest.Module{
		Exports: []wasmtest.Func{{Name: "metadata", Results: []byte{wasmtest.I32}}},
		Imports: []wasmtest.Func{{Module: "wasi_snapshot_preview1", Name: "sock_accept",
			Params: []byte{wasmtest.I32, wasmtest.I32, wasmtest.I32}, Results: []byte{wasmtest.I32}}},
	}.Encode(), 0o644))
	grants := filepath.Join(dir, "grants.json")
	require.NoError(t, os.WriteFile(grants, []byte(`[{"service":"network","methods":["GET"],"paths":["v2.0/address-scopes"]}]`), 0o644))
	badGrants := filepath.Join(dir, "bad-grants.json")
	require.NoError(t, os.WriteFile(badGrants, []byte(`[{"service":"network"}]`), 0o644))

	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"a good plugin", []string{scopes}, exitOK,
			[]string{scopes + ": ok (neutron-address-scopes, 0.3.1, sha256:" + fileDigest(t, scopes) + ")"}},
		{"the pinned digest", []string{"--sha256", "sha256:" + fileDigest(t, scopes), scopes}, exitOK, []string{": ok ("}},
		{"another digest", []string{"--sha256", "sha256:" + fileDigest(t, broken), scopes}, exitFail,
			[]string{scopes + ": refused", "digest mismatch"}},
		{"operator grants", []string{"--grants", grants, scopes}, exitOK, []string{": ok ("}},
		{"every structural problem", []string{broken}, exitFail, []string{
			broken + ": refused",
			"  - imports wasi_snapshot_preview1.sock_accept, which is outside the allowed WASI subset (sockets:",
			"  - exports no openstack_sync_abi_v<N> marker, so it is not an openstack-sync plugin: a plugin exports a function named openstack_sync_abi_v1",
			`  - does not export the required entry point "reconcile"`,
			`  - does not export its memory as "memory"`,
		}},
		{"one bad of two", []string{scopes, broken}, exitFail, []string{scopes + ": ok", broken + ": refused"}},
		{"a missing file", []string{filepath.Join(dir, "missing.wasm")}, exitFail, []string{"cannot read the module"}},
	}
	// A pin or grants the shell happens to hold for the plugin's prefix are not the operator's:
	// verify checks only what its flags say.
	t.Setenv("NEUTRON_ADDRESS_SCOPE_PLUGIN_SHA256", strings.Repeat("0", 64))
	t.Setenv("NEUTRON_ADDRESS_SCOPE_GRANTS", "[]")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, append([]string{"verify"}, c.args...)...)
			assert.Equal(t, c.code, code, out+errOut)
			for _, w := range c.want {
				assert.Contains(t, out, w)
			}
		})
	}
	t.Run("malformed operator grants", func(t *testing.T) {
		code, _, errOut := runCmd(t, "verify", "--grants", badGrants, scopes)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "--grants "+badGrants)
	})
}

func TestNetHTTPIsNamedAsTheLikelyCause(t *testing.T) {
	code, out, _ := runCmd(t, "verify", guest(t, "nethttp"))
	assert.Equal(t, exitFail, code)
	assert.Contains(t, out, "which is outside the allowed WASI subset (file system: something in the plugin opens files, in Go usually net/http")
}

func TestUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "usage: openstack-sync plugin <command>"},
		{[]string{"frob"}, exitUsage, `unknown command "frob"`},
		{[]string{"inspect"}, exitUsage, "want exactly one FILE"},
		{[]string{"inspect", "a", "b"}, exitUsage, "want exactly one FILE"},
		{[]string{"verify"}, exitUsage, "want at least one FILE"},
		{[]string{"verify", "--nope", "x"}, exitUsage, "flag provided but not defined: -nope"},
	}
	for _, c := range cases {
		code, _, errOut := runCmd(t, c.args...)
		assert.Equal(t, c.code, code, c.args)
		assert.Contains(t, errOut, c.want, c.args)
	}
}

func TestNew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "scopes")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, Main(context.Background(), []string{"new", "--dir", dir, "--group", "net.example.com", "neutron-address-scopes"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "wrote "+dir+":\n  Makefile\n")
	crd, err := os.ReadFile(filepath.Join(dir, "crd.yaml"))
	require.NoError(t, err)
	assert.Contains(t, string(crd), "name: neutronaddressscopes.net.example.com")

	out.Reset()
	errOut.Reset()
	assert.Equal(t, 1, Main(context.Background(), []string{"new", "--dir", dir, "neutron-address-scopes"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "is not empty")
	errOut.Reset()
	assert.Equal(t, 2, Main(context.Background(), []string{"new"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "want exactly one NAME")
}

// The second inspect of a module reads its metadata from the record the first one wrote, without
// running guest code: a record written anew for the same module is what it shows, and a record
// edited in place (its checksum no longer holds) is not trusted.
func TestInspectReadsTheRecordWithoutRunningTheModule(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(wasm.CacheDirEnv, cache)
	path := guest(t, "scopes")
	code, out, errOut := runCmd(t, "inspect", path)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "metadata:     read by running the module's metadata entry point in the sandbox")

	records, err := filepath.Glob(filepath.Join(cache, "metadata", "*.json"))
	require.NoError(t, err)
	require.Len(t, records, 1)
	module, err := os.ReadFile(path)
	require.NoError(t, err)
	digest := modulecache.Digest(sha256.Sum256(module))
	raw, err := modulecache.Dir(cache).Read(modulecache.Record, digest.String(), digest)
	require.NoError(t, err)
	require.NoError(t, modulecache.Dir(cache).Write(modulecache.Record, digest.String(), digest,
		bytes.Replace(raw, []byte(`"0.3.1"`), []byte(`"9.9.9-from-record"`), 1)))

	code, out, errOut = runCmd(t, "inspect", path)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "metadata:     from the record of an earlier load (no guest code run)")
	assert.Contains(t, out, "version:      9.9.9-from-record", "the record answered, not the module")
	assert.Contains(t, out, "openstack_sync_abi_v1 () -> ()", "imports and exports come from the compiled module")

	// A record edited in place, or one that breaks the metadata rules, is not trusted: the module
	// answers.
	edited, err := os.ReadFile(records[0])
	require.NoError(t, err)
	for _, bad := range [][]byte{bytes.Replace(edited, []byte(`"9.9.9-from-record"`), []byte(`"9.9.9-edited-in-it"`), 1),
		[]byte(`{"abi_version": 1}`)} {
		require.NoError(t, os.WriteFile(records[0], bad, 0o644))
		code, out, _ = runCmd(t, "inspect", path)
		require.Equal(t, exitOK, code)
		assert.Contains(t, out, "version:      0.3.1")
		require.NoError(t, modulecache.Dir(cache).Write(modulecache.Record, digest.String(), digest, []byte(`{"abi_version": 1}`)))
	}
}
