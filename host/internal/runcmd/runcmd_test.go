package runcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

var pluginsDir string

// TestMain builds the repository's plugins and shares one compilation cache between the tests.
func TestMain(m *testing.M) {
	var err error
	if pluginsDir, err = wasmtest.Plugins(repoRoot()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv(wasm.CacheDirEnv, filepath.Join(os.TempDir(), "openstack-sync-test-wazero"))
	os.Exit(m.Run())
}

type world struct {
	cloud  *fakecloud.Cloud
	clouds string
	dir    string
}

func newWorld(t *testing.T) world {
	t.Helper()
	c := fakecloud.New(fakecloud.Options{})
	t.Cleanup(c.Close)
	dir := t.TempDir()
	clouds := filepath.Join(dir, "clouds.yaml")
	require.NoError(t, os.WriteFile(clouds, []byte(c.CloudsYAML()), 0o600))
	return world{cloud: c, clouds: clouds, dir: dir}
}

func (w world) file(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(w.dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

func (w world) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--plugin", filepath.Join(pluginsDir, "neutron-router-flavors.wasm"), "--clouds", w.clouds}, args...)
	code := Main(context.Background(), full, &out, &errOut)
	t.Logf("run %v exited %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// Two flavors in one file, no cloudCredentialsRef: --cloud names the cloud of clouds.yaml.
const flavors = `apiVersion: neutron.openstack-sync.io/v1alpha1
kind: NeutronRouterFlavor
metadata: {name: gold, namespace: openstack}
spec:
  name: gold
  service_profiles: [{driver: neutron.services.l3_router.service_providers.single_node.SingleNodeDriver}]
---
apiVersion: neutron.openstack-sync.io/v1alpha1
kind: NeutronRouterFlavor
metadata: {name: silver}
spec:
  name: silver
  service_profiles: [{driver: neutron.services.l3_router.service_providers.single_node.SingleNodeDriver}]
`

func flavorNames(c *fakecloud.Cloud) []string {
	var names []string
	for _, f := range c.Flavors() {
		names = append(names, f.Name)
	}
	return names
}

func TestRunReconcilesCRsFromFiles(t *testing.T) {
	w := newWorld(t)
	crs := w.file(t, "flavors.yaml", flavors)
	code, out, _ := w.run(t, "--cloud", fakecloud.AdminCloud, crs)
	require.Equal(t, 0, code)
	assert.ElementsMatch(t, []string{"gold", "silver"}, flavorNames(w.cloud))
	assert.Contains(t, out, "NeutronRouterFlavor openstack/gold\n  status:\n")
	assert.Contains(t, out, "NeutronRouterFlavor default/silver\n  status:\n", "a CR without a namespace gets --namespace's")
	assert.Contains(t, out, "syncStatus: Synced")
	assert.Contains(t, out, "local-admin network POST v2.0/flavors -> 201")

	// A second pass converges: reads only.
	code, out, _ = w.run(t, "--cloud", fakecloud.AdminCloud, crs)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, " POST ")
	assert.NotContains(t, out, " PUT ")
}

func TestDryRunSendsNoWrite(t *testing.T) {
	w := newWorld(t)
	crs := w.file(t, "flavors.yaml", flavors)
	code, out, _ := w.run(t, "--cloud", fakecloud.AdminCloud, "--dry-run", crs)
	assert.Equal(t, 1, code, "a CR whose write was not sent is not converged")
	assert.Empty(t, flavorNames(w.cloud), "nothing was created")
	assert.Contains(t, out, "OpenStack requests (dry run: writes were not sent):")
	assert.Contains(t, out, "local-admin network GET v2.0/flavors")
	assert.Contains(t, out, "\nWrite plan:\n  local-admin network POST v2.0/")
	assert.Contains(t, out, "dry run: the write was recorded, not sent")
}

func TestDeletedCRsArePrunedAndReleased(t *testing.T) {
	w := newWorld(t)
	gold := w.file(t, "gold.yaml", flavors[:bytes.Index([]byte(flavors), []byte("---"))])
	code, _, _ := w.run(t, "--cloud", fakecloud.AdminCloud, "--prune", gold)
	require.Equal(t, 0, code)
	require.Equal(t, []string{"gold"}, flavorNames(w.cloud))

	code, out, _ := w.run(t, "--cloud", fakecloud.AdminCloud, "--prune", "--deleted", gold)
	require.Equal(t, 0, code)
	assert.Empty(t, flavorNames(w.cloud), "the deleted CR's flavor was pruned")
	assert.Contains(t, out, "NeutronRouterFlavor openstack/gold (deleted)")
	assert.Contains(t, out, "finalizers: []", "the finalizer was released after the prune")
	assert.Contains(t, out, "network DELETE v2.0/flavors/")
}

func TestUsageAndBadInput(t *testing.T) {
	w := newWorld(t)
	mixed := w.file(t, "mixed.yaml", flavors+"---\napiVersion: x.io/v1\nkind: Other\nmetadata: {name: o}\nspec: {}\n")
	nameless := w.file(t, "nameless.yaml", "apiVersion: x.io/v1\nkind: Other\nmetadata: {}\nspec: {}\n")
	noCloud := w.file(t, "nocloud.yaml", "apiVersion: x.io/v1\nkind: Other\nmetadata: {name: a}\nspec: {}\n")
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--cloud", "c"}, 2, "name at least one CR file"},
		{[]string{"--cloud", "c", "--set", "NOEQUALS", mixed}, 2, `--set "NOEQUALS" is not KEY=VALUE`},
		{[]string{"--cloud", "c", mixed}, 1, "one run reconciles one kind"},
		{[]string{"--cloud", "c", nameless}, 1, "nameless.yaml document 1: metadata.name is missing"},
		{[]string{noCloud}, 1, "spec.cloudCredentialsRef.cloudName is missing; pass --cloud"},
		{[]string{"--cloud", "c", filepath.Join(w.dir, "missing.yaml")}, 1, "no such file or directory"},
	}
	for _, c := range cases {
		code, _, errOut := w.run(t, c.args...)
		assert.Equal(t, c.code, code, c.args)
		assert.Contains(t, errOut, c.want, c.args)
	}
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, Main(context.Background(), []string{"x.yaml"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "--plugin is required")
}
