package nativeplugin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// guests is the wasm host's test guests' module: nativemock builds both as a module and natively.
const guests = "../wasm/testdata/guests"

// buildNative builds a test guest natively the way hack/build-native-plugins.sh builds plugins.
func buildNative(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a plugin natively")
	}
	dir, err := filepath.Abs(guests)
	require.NoError(t, err)
	tmpl, err := filepath.Abs(filepath.Join("..", "..", "..", "hack", "native-main.go.in"))
	require.NoError(t, err)
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	require.NoError(t, os.WriteFile(overlay, fmt.Appendf(nil, `{"Replace":{%q:%q}}`,
		filepath.Join(dir, name, "zz_native_main.go"), tmpl), 0o644))
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-tags", "openstack_sync_native", "-overlay", overlay, "-o", out, "./"+name)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// options are wasm.Options for a test: a private cache directory, the given environment and a
// captured log.
func options(t *testing.T, env ...string) (wasm.Options, *wasmtest.LogBuffer) {
	log, logs := wasmtest.Logger()
	return wasm.Options{CacheDir: t.TempDir(), LookupEnv: wasmtest.LookupIn(env), Logger: log}, logs
}

// The native limit of the benchmark runs the same plugin code behind the same host-side rules:
// the metadata it declares, its group cache, its requests (inside its grants) and its errors.
func TestNativeBuildBehavesLikeTheModule(t *testing.T) {
	ctx := context.Background()
	exe := buildNative(t, "nativemock")
	o, logs := options(t, "MOCK_GREETING=hello")
	wasmPlugin, err := wasm.Load(ctx, wasmtest.BuildGuest(t, guests, "nativemock", "../../../pdk"), o)
	require.NoError(t, err)
	defer wasmPlugin.Close(ctx)
	np, err := Load(ctx, exe, o)
	require.NoError(t, err)
	defer np.Close(ctx)
	assert.Equal(t, wasmPlugin.Metadata(), np.Metadata())
	assert.Equal(t, wasmPlugin.CleanupPolicy(true), np.CleanupPolicy(true))

	cache, err := np.NewCache(ctx)
	require.NoError(t, err)
	s := &wasmtest.Session{}
	res, err := np.Reconcile(ctx, s, cache, wasmtest.CRRequest("a", map[string]any{"name": "a"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, res.Notes)
	res, err = np.Reconcile(ctx, s, cache, wasmtest.CRRequest("b", map[string]any{"name": "b"}))
	require.NoError(t, err)
	assert.EqualValues(t, 2, res.ExtraStatus["group_call"], "the group cache lives across the group's CRs")
	assert.Len(t, s.Requests(), 2, "requests reach the session")
	assert.Contains(t, logs.String(), "reconciling b", "guest log lines reach the host's log")
	res, err = np.Reconcile(ctx, s, cache, wasmtest.CRRequest("c", map[string]any{"action": "config", "name": "GREETING"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"hello"}, res.Notes, "config_get reads <PREFIX>_KEY")

	_, err = np.Reconcile(ctx, s, cache, wasmtest.CRRequest("d", map[string]any{"action": "outside-grant"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DELETE network v2.0/networks/x", "the grant is enforced by the host, not by the sandbox")
	assert.Len(t, s.Requests(), 2, "a refused request never reaches the session")
	_, err = np.Reconcile(ctx, s, cache, wasmtest.CRRequest("e", map[string]any{"action": "fail"}))
	require.Error(t, err)
	assert.Equal(t, "MockFailure", plugin.Reason(err))
	require.NoError(t, cache.Close(ctx))
}

// The convergence memo works through the native build as through the module (the wasm host's
// TestTheConvergenceMemo), so the benchmark's native limit does the same work.
func TestTheConvergenceMemo(t *testing.T) {
	exe := buildNative(t, "nativemock")
	dir := t.TempDir()
	wasmtest.ConvergenceMemo(t, dir, func(env []string) (plugin.Plugin, *wasmtest.LogBuffer) {
		o, logs := options(t, env...)
		o.CacheDir, o.Memo = dir, true
		o.Environ = func() []string { return env }
		p, err := Load(context.Background(), exe, o)
		require.NoError(t, err)
		return p, logs
	})
}

// OPENSTACK_SYNC_NATIVE_CPUPROFILE gives each native plugin process a CPU profile of its own, the
// guest's code seen by Go's profiler (docs/benchmarks.md, "Profiling a hook run").
func TestNativePluginWritesItsCPUProfile(t *testing.T) {
	ctx := context.Background()
	exe := buildNative(t, "nativemock")
	prefix := filepath.Join(t.TempDir(), "guest")
	o, _ := options(t, CPUProfileEnv+"="+prefix)
	np, err := Load(ctx, exe, o)
	require.NoError(t, err)
	cache, err := np.NewCache(ctx)
	require.NoError(t, err)
	_, err = np.Reconcile(ctx, &wasmtest.Session{}, cache, wasmtest.CRRequest("a", map[string]any{"name": "a"}))
	require.NoError(t, err)
	require.NoError(t, cache.Close(ctx))
	require.NoError(t, np.Close(ctx))
	profiles, err := filepath.Glob(prefix + ".*.pprof")
	require.NoError(t, err)
	require.NotEmpty(t, profiles, "every plugin process writes its profile when it exits")
	for _, p := range profiles {
		info, err := os.Stat(p)
		require.NoError(t, err)
		assert.Positive(t, info.Size(), p)
	}
}

// sourceSession is a credential group's session that answers source requests, recording them.
type sourceSession struct {
	wasmtest.Session
	sent []plugin.SourceRequest
}

func (s *sourceSession) DoSource(_ context.Context, req plugin.SourceRequest) (*plugin.Response, error) {
	s.sent = append(s.sent, req)
	return &plugin.Response{StatusCode: 200, Body: []byte(`{"name": "from the source"}`)}, nil
}

// A native build reads a source outside OpenStack as the module does (docs/abi.md section 8),
// through the same host rules, so the benchmark's native row runs plugins that read one
// (neutron-subnet-pools reads Nautobot).
func TestNativeBuildReadsASourceLikeTheModule(t *testing.T) {
	ctx := context.Background()
	exe := buildNative(t, "nativemock")
	o, _ := options(t)
	wasmPlugin, err := wasm.Load(ctx, wasmtest.BuildGuest(t, guests, "nativemock", "../../../pdk"), o)
	require.NoError(t, err)
	defer wasmPlugin.Close(ctx)
	np, err := Load(ctx, exe, o)
	require.NoError(t, err)
	defer np.Close(ctx)
	for name, p := range map[string]plugin.Plugin{"module": wasmPlugin, "native": np} {
		t.Run(name, func(t *testing.T) {
			cache, err := p.NewCache(ctx)
			require.NoError(t, err)
			defer cache.Close(ctx)
			s := &sourceSession{}
			res, err := p.Reconcile(ctx, s, cache, wasmtest.CRRequest("a", map[string]any{"action": "source", "name": "https://inventory.example"}))
			require.NoError(t, err)
			assert.Equal(t, []string{"source says from the source"}, res.Notes)
			require.Len(t, s.sent, 1)
			assert.Equal(t, "inventory", s.sent[0].Source)
			assert.Equal(t, "https://inventory.example", s.sent[0].URL)
			assert.Equal(t, "GET", s.sent[0].Method)
			assert.Equal(t, "api/things/a/", s.sent[0].Path)
			assert.Equal(t, &plugin.SecretKeyRef{Name: "mock", Key: "token"}, s.sent[0].Secret)
		})
	}
}
