package wasm

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
)

// buildNative builds a test guest natively the way hack/build-native-plugins.sh builds plugins.
func buildNative(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "guests"))
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

// The native limit of the benchmark runs the same plugin code behind the same host-side rules:
// the metadata it declares, its group cache, its requests (inside its grants) and its errors.
func TestNativeBuildBehavesLikeTheModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin natively")
	}
	ctx := context.Background()
	o, logs := testOptions(t, "MOCK_GREETING=hello")
	wasmPlugin := loadTest(t, guest(t, "nativemock"), o)
	np, err := LoadNative(ctx, buildNative(t, "nativemock"), o)
	require.NoError(t, err)
	defer np.Close(ctx)
	assert.Equal(t, wasmPlugin.Metadata(), np.Metadata())
	assert.Equal(t, wasmPlugin.CleanupPolicy(true), np.CleanupPolicy(true))

	cache, err := np.NewCache(ctx)
	require.NoError(t, err)
	s := &fakeSession{}
	res, err := np.Reconcile(ctx, s, cache, crRequest("a", map[string]any{"name": "a"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, res.Notes)
	res, err = np.Reconcile(ctx, s, cache, crRequest("b", map[string]any{"name": "b"}))
	require.NoError(t, err)
	assert.EqualValues(t, 2, res.ExtraStatus["group_call"], "the group cache lives across the group's CRs")
	assert.Len(t, s.Requests(), 2, "requests reach the session")
	assert.Contains(t, logs.String(), "reconciling b", "guest log lines reach the host's log")
	res, err = np.Reconcile(ctx, s, cache, crRequest("c", map[string]any{"action": "config", "name": "GREETING"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"hello"}, res.Notes, "config_get reads <PREFIX>_KEY")

	_, err = np.Reconcile(ctx, s, cache, crRequest("d", map[string]any{"action": "outside-grant"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "DELETE network v2.0/networks/x", "the grant is enforced by the host, not by the sandbox")
	assert.Len(t, s.Requests(), 2, "a refused request never reaches the session")
	_, err = np.Reconcile(ctx, s, cache, crRequest("e", map[string]any{"action": "fail"}))
	require.Error(t, err)
	assert.Equal(t, "MockFailure", plugin.Reason(err))
	require.NoError(t, cache.Close(ctx))
}

// OPENSTACK_SYNC_NATIVE_CPUPROFILE gives each native plugin process a CPU profile of its own, the
// guest's code seen by Go's profiler (docs/benchmarks.md, "Profiling a hook run").
func TestNativePluginWritesItsCPUProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin natively")
	}
	ctx := context.Background()
	prefix := filepath.Join(t.TempDir(), "guest")
	o, _ := testOptions(t, NativeCPUProfileEnv+"="+prefix)
	np, err := LoadNative(ctx, buildNative(t, "nativemock"), o)
	require.NoError(t, err)
	cache, err := np.NewCache(ctx)
	require.NoError(t, err)
	_, err = np.Reconcile(ctx, &fakeSession{}, cache, crRequest("a", map[string]any{"name": "a"}))
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
