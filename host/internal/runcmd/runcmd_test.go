package runcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
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

func TestDryRunSendsNoWriteAndPrintsThePlan(t *testing.T) {
	w := newWorld(t)
	crs := w.file(t, "flavors.yaml", flavors)
	code, out, _ := w.run(t, "--cloud", fakecloud.AdminCloud, "--dry-run", crs)
	assert.Equal(t, 0, code, "every write was answered as OpenStack would, so each CR converges on paper")
	assert.Empty(t, flavorNames(w.cloud), "nothing was created")
	assert.Empty(t, w.cloud.ServiceProfiles(), "nothing was created")
	assert.Empty(t, w.cloud.Writes(), "no write reached the cloud")
	assert.Contains(t, out, "OpenStack requests (dry run: writes were not sent):")
	assert.Contains(t, out, "local-admin network GET v2.0/flavors?limit=100 -> 200", "each request with its query")
	assert.Contains(t, out, "syncStatus: Synced", "the would-be status")

	// The plan holds every write of the pass, not one per CR, and later reads see what earlier
	// writes planned: the second flavor finds the profile planned for the first and binds it, as
	// a real pass does, so the plan is the writes a real pass then sends.
	plan := out[strings.Index(out, "\nWrite plan:\n"):]
	assert.Contains(t, plan, "1. local-admin network POST v2.0/service_profiles (planned id 00000000-0000-4000-8000-000000000001)")
	assert.Contains(t, plan, `"driver":"neutron.services.l3_router.service_providers.single_node.SingleNodeDriver"`, "each write's body")
	assert.Regexp(t, `POST v2\.0/flavors/00000000-0000-4000-8000-00000000000\d/service_profiles`, plan,
		"a later write uses the id planned for an earlier one")
	code, _, _ = w.run(t, "--cloud", fakecloud.AdminCloud, crs)
	require.Equal(t, 0, code)
	var sent []string
	for _, r := range w.cloud.Writes() {
		sent = append(sent, r.Method+" "+regexp.MustCompile(`[0-9a-f-]{36}`).ReplaceAllString(strings.TrimPrefix(r.Path, "/"), "ID"))
	}
	var planned []string
	for _, m := range regexp.MustCompile(`\d+\. local-admin network (\w+ \S+)`).FindAllStringSubmatch(plan, -1) {
		planned = append(planned, regexp.MustCompile(`[0-9a-f-]{36}`).ReplaceAllString(m[1], "ID"))
	}
	assert.Equal(t, sent, planned, "the dry run planned exactly what the real pass sent")
}

// A dry run's reads see its planned deletes: a resource a planned DELETE removed is gone from a
// later list and a later read.
func TestDryRunReadsSeePlannedDeletes(t *testing.T) {
	world := newPlannedWorld()
	list := plugin.Request{Service: "network", Method: "GET", Path: "v2.0/widgets"}
	world.planned(plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/widgets/w1"}, nil)
	resp := world.list(list, jsonResponse(200, map[string]any{"widgets": []any{map[string]any{"id": "w1"}, map[string]any{"id": "w2"}}}))
	assert.JSONEq(t, `{"widgets": [{"id": "w2"}]}`, string(resp.Body))
	got, ok := world.read(plugin.Request{Service: "network", Method: "GET", Path: "v2.0/widgets/w1"})
	require.True(t, ok)
	assert.Equal(t, 404, got.StatusCode)
	_, ok = world.read(plugin.Request{Service: "network", Method: "GET", Path: "v2.0/widgets/w2"})
	assert.False(t, ok, "a resource nothing planned is read from the cloud")
}

func TestDryRunOfAConvergedCloudPlansNothing(t *testing.T) {
	w := newWorld(t)
	crs := w.file(t, "flavors.yaml", flavors)
	code, _, _ := w.run(t, "--cloud", fakecloud.AdminCloud, crs)
	require.Equal(t, 0, code)
	w.cloud.ResetRequests()
	code, out, _ := w.run(t, "--cloud", fakecloud.AdminCloud, "--dry-run", crs)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "Write plan:\n  (no writes: everything is converged)")
}

// Drift: a dry run plans the update with the body it would send, and the PUT's answer is the
// resource read back with the update merged in.
func TestDryRunPlansAnUpdate(t *testing.T) {
	w := newWorld(t)
	crs := w.file(t, "flavors.yaml", flavors)
	code, _, _ := w.run(t, "--cloud", fakecloud.AdminCloud, crs)
	require.Equal(t, 0, code)
	drifted := w.file(t, "drifted.yaml", strings.Replace(flavors, "name: gold\n", "name: gold\n  description: gold routers\n", 1))
	code, out, _ := w.run(t, "--cloud", fakecloud.AdminCloud, "--dry-run", drifted)
	require.Equal(t, 0, code)
	assert.Regexp(t, `1\. local-admin network PUT v2\.0/flavors/[0-9a-f-]+\n\s+\{"flavor":\{"description":"gold routers`, out)
	for _, f := range w.cloud.Flavors() {
		assert.NotContains(t, f.Description, "gold routers", "the update was not sent")
	}
}

func TestEmbeddedCloud(t *testing.T) {
	var started *fakecloud.Cloud
	var asked []string
	embedded := func(collections []string, _ []byte) (Embedded, error) {
		asked = collections
		started = fakecloud.New(fakecloud.Options{})
		return Embedded{CloudsYAML: []byte(started.CloudsYAML()), Cloud: fakecloud.AdminCloud, Save: started.Save, Stop: started.Close}, nil
	}
	w := newWorld(t)
	crs := w.file(t, "flavors.yaml", flavors)
	var out, errOut bytes.Buffer
	code := MainWith(context.Background(), []string{"--plugin", filepath.Join(pluginsDir, "neutron-router-flavors.wasm"),
		"--embedded-cloud", "--collection", "network:v2.0/things:thing", crs}, &out, &errOut, embedded)
	t.Log(out.String(), errOut.String())
	require.Equal(t, 0, code)
	assert.Equal(t, []string{"network:v2.0/things:thing"}, asked)
	assert.Len(t, started.Flavors(), 2, "the CRs went to the embedded cloud")
	assert.Empty(t, w.cloud.Flavors())
	assert.Contains(t, out.String(), "local-admin network POST v2.0/flavors -> 201", "--cloud defaults to the embedded cloud's admin")
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
		{[]string{"--embedded-cloud", mixed}, 2, "--embedded-cloud is only in openstack-sync-dev"},
		{[]string{"--collection", "network:v2.0/x:x", mixed}, 2, "--collection needs --embedded-cloud"},
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
	errOut.Reset()
	assert.Equal(t, 2, Main(context.Background(), []string{"--plugin", "p.wasm", "x.yaml"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "--clouds (or, in openstack-sync-dev, --embedded-cloud) is required")
}

// devEmbedded is the development binary's --embedded-cloud: a cloud restored from what the last
// run saved.
func devEmbedded(t *testing.T) EmbeddedCloud {
	return func(_ []string, saved []byte) (Embedded, error) {
		c := fakecloud.New(fakecloud.Options{})
		t.Cleanup(c.Close)
		if saved != nil {
			if err := c.Restore(saved); err != nil {
				return Embedded{}, err
			}
		}
		return Embedded{CloudsYAML: []byte(c.CloudsYAML()), Cloud: fakecloud.AdminCloud, Save: c.Save, Stop: func() {}}, nil
	}
}

func (w world) runEmbedded(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	full := append([]string{"--plugin", filepath.Join(pluginsDir, "neutron-router-flavors.wasm"), "--embedded-cloud"}, args...)
	code := MainWith(context.Background(), full, &out, &errOut, devEmbedded(t))
	t.Logf("run %v exited %d\nstdout:\n%s\nstderr:\n%s", args, code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

var idLine = regexp.MustCompile(`\n    id: (\S+)\n`)

// With --state, create, edit and delete are three runs against the embedded cloud: each run
// finds the cloud and the CR's status the last one left.
func TestStateCarriesCreateEditDelete(t *testing.T) {
	w := newWorld(t)
	gold := flavors[:strings.Index(flavors, "---")]
	crs := w.file(t, "gold.yaml", gold)
	state := filepath.Join(w.dir, "state.json")

	code, out, _ := w.runEmbedded(t, "--state", state, crs)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "local-admin network POST v2.0/flavors -> 201")
	id := idLine.FindStringSubmatch(out)[1]

	code, out, _ = w.runEmbedded(t, "--state", state, crs)
	require.Equal(t, 0, code)
	assert.NotContains(t, out, " POST ", "the second run finds what the first made")
	assert.Equal(t, id, idLine.FindStringSubmatch(out)[1])

	edited := w.file(t, "gold.yaml", strings.Replace(gold, "name: gold\n", "name: gold\n  description: gold routers\n", 1))
	code, out, _ = w.runEmbedded(t, "--state", state, "--dry-run", edited)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "(dry run: "+state+" left as it was)")
	code, out, _ = w.runEmbedded(t, "--state", state, edited)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "local-admin network PUT v2.0/flavors/"+id+" -> 200", "the edit updates the flavor the CR is bound to")

	code, out, _ = w.runEmbedded(t, "--state", state, "--prune", "--deleted", edited)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "openstack: deleted v2.0/flavors/"+id)
	saved, err := os.ReadFile(state)
	require.NoError(t, err)
	assert.NotContains(t, string(saved), "openstack/gold", "a CR whose delete is done leaves the state")

	code, out, _ = w.runEmbedded(t, "--state", state, "--prune", "--deleted", edited)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "openstack: nothing to delete (the CR names no resource in status.id, and none was found for it)")
}

func TestStateAndStatusInTheFile(t *testing.T) {
	w := newWorld(t)
	crs := w.file(t, "gold.yaml", flavors[:strings.Index(flavors, "---")])
	state := filepath.Join(w.dir, "state.json")
	require.Equal(t, 0, first(w.runEmbedded(t, "--state", state, crs)))

	// A status in the file wins over the kept one.
	withStatus := w.file(t, "with-status.yaml", flavors[:strings.Index(flavors, "---")]+"status: {id: from-the-file}\n")
	_, out, _ := w.runEmbedded(t, "--state", state, "--dry-run", withStatus)
	assert.Contains(t, out, "GET v2.0/flavors/from-the-file")

	code, _, errOut := w.run(t, "--cloud", fakecloud.AdminCloud, "--state", state, crs)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "holds an embedded cloud; run it with --embedded-cloud, or give --clouds another file")
	real := filepath.Join(w.dir, "real.json")
	require.Equal(t, 0, first(w.run(t, "--cloud", fakecloud.AdminCloud, "--state", real, crs)))
	code, _, errOut = w.runEmbedded(t, "--state", real, crs)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "was written by a run against a real cloud; give --embedded-cloud another file")
	require.NoError(t, os.WriteFile(real, []byte("not json"), 0o644))
	code, _, errOut = w.run(t, "--cloud", fakecloud.AdminCloud, "--state", real, crs)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not a state file this command wrote")
}

func first(code int, _, _ string) int { return code }
