package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// The test binary doubles as the host: the demo runs `<host> hook --plugin <dir>/<name>.wasm`,
// and the plugin directory's name picks how this stand-in behaves, because the demo passes the
// hook no environment of its own choosing.
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "hook" && os.Args[2] == "--plugin" {
		os.Exit(standInHook(os.Args[3], len(os.Args) > 4 && os.Args[4] == "--config"))
	}
	os.Exit(m.Run())
}

// standInHook behaves like the real host on --config and, on a run, like a well-behaved
// framework: finalizer on live CRs, a Synced status unless already current, finalizer release
// on terminating ones. Mode "loop" writes a new status every run; mode "fail" exits 1; mode
// "blind" reports a CR with a broken cloud name as Synced.
func standInHook(pluginPath string, config bool) int {
	mode := filepath.Base(filepath.Dir(pluginPath))
	name := strings.TrimSuffix(filepath.Base(pluginPath), ".wasm")
	prefix := standInPlugins[name].EnvPrefix
	if config {
		cfg := map[string]any{"configVersion": "v1"}
		if name == "openstack-probe" {
			cfg["onStartup"] = 10
		} else {
			cfg["kubernetes"] = []any{map[string]any{
				"name": name, "apiVersion": os.Getenv(prefix + "_CRD_API_VERSION"), "kind": os.Getenv(prefix + "_CRD_KIND"),
				"executeHookOnEvent": []string{"Added", "Modified", "Deleted"}, "jqFilter": ".",
				"includeSnapshotsFrom": []string{name}, "queue": name,
				"namespace": map[string]any{"nameSelector": map[string]any{"matchNames": []string{os.Getenv("POD_NAMESPACE")}}},
			}}
			cfg["schedule"] = []any{map[string]any{"name": "periodic sync", "crontab": os.Getenv(prefix + "_SYNC_CRONTAB"),
				"includeSnapshotsFrom": []string{name}, "queue": name}}
		}
		out, _ := json.MarshalIndent(cfg, "", "  ")
		fmt.Println(string(out))
		return 0
	}
	if mode == "fail" {
		fmt.Fprintln(os.Stderr, "ERROR: stand-in hook told to fail")
		return 1
	}
	if name == "openstack-probe" {
		return 0
	}
	data, err := os.ReadFile(os.Getenv("BINDING_CONTEXT_PATH"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var contexts []map[string]any
	if err := json.Unmarshal(data, &contexts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	client, err := kube.New(kube.Limit{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	group, version, _ := strings.Cut(os.Getenv(prefix+"_CRD_API_VERSION"), "/")
	plural, _, _ := strings.Cut(os.Getenv(prefix+"_CRD_RESOURCE"), ".")
	ctx := context.Background()
	code := 0
	for _, c := range contexts {
		var objs []any
		if o, ok := c["object"]; ok && c["watchEvent"] != "Deleted" {
			objs = append(objs, o)
		}
		if items, ok := c["objects"].([]any); ok {
			for _, it := range items {
				objs = append(objs, it.(map[string]any)["object"])
			}
		}
		if snaps, ok := c["snapshots"].(map[string]any); ok && c["type"] == "Schedule" {
			for _, it := range snaps[name].([]any) {
				objs = append(objs, it.(map[string]any)["object"])
			}
		}
		for _, o := range objs {
			obj := o.(map[string]any)
			meta := obj["metadata"].(map[string]any)
			t := kubeapi.Target{Group: group, Version: version, Plural: plural, Namespace: meta["namespace"].(string), Name: meta["name"].(string)}
			fins, _ := meta["finalizers"].([]any)
			if meta["deletionTimestamp"] != nil {
				if len(fins) > 0 {
					_ = client.JSONPatch(ctx, t, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`))
				}
				continue
			}
			if len(fins) == 0 {
				_ = client.JSONPatch(ctx, t, fmt.Appendf(nil, `[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, meta["resourceVersion"], resource.Finalizer))
			}
			status, _ := obj["status"].(map[string]any)
			ref, _ := obj["spec"].(map[string]any)["cloudCredentialsRef"].(map[string]any)
			want, msg, reason := "Synced", "Successfully reconciled router flavor", "Reconciled"
			if ref["cloudName"] == brokenCloud && mode != "blind" {
				want, msg, reason = "Failed", "OpenStack connection failed: no cloud "+brokenCloud, "ReconcileError"
				code = 1
			}
			current := status["syncStatus"] == want && status["message"] == msg &&
				fmt.Sprint(status["observedGeneration"]) == fmt.Sprint(meta["generation"])
			if mode == "loop" || !current {
				if mode == "loop" {
					msg = fmt.Sprintf("attempt %v", meta["resourceVersion"])
				}
				body, _ := json.Marshal(map[string]any{"status": map[string]any{
					"syncStatus": want, "observedGeneration": meta["generation"], "message": msg,
					"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": reason}},
				}})
				_ = client.MergePatchStatus(ctx, t, body)
			}
		}
	}
	return code
}

// standInPlugins is what the stand-in modules say about themselves.
var standInPlugins = map[string]plugin.Metadata{
	"openstack-probe":        {Name: "openstack-probe", EnvPrefix: "OPENSTACK_PROBE", Probe: true},
	"neutron-router-flavors": {Name: "neutron-router-flavors", EnvPrefix: "NEUTRON_ROUTER_FLAVOR"},
}

func readStandInMetadata(_ context.Context, path string) (plugin.Metadata, error) {
	m, ok := standInPlugins[strings.TrimSuffix(filepath.Base(path), ".wasm")]
	if !ok {
		return m, fmt.Errorf("not a stand-in plugin")
	}
	return m, nil
}

func runDemo(t *testing.T, mode string) (string, error) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	plugins := filepath.Join(t.TempDir(), mode)
	require.NoError(t, os.MkdirAll(plugins, 0o700))
	for _, name := range []string{"openstack-probe", "neutron-router-flavors"} {
		require.NoError(t, os.WriteFile(filepath.Join(plugins, name+".wasm"), nil, 0o600))
	}
	var out bytes.Buffer
	err = Run(context.Background(), Options{
		Host: self, ReadMetadata: readStandInMetadata, PluginsDir: plugins, ExamplesDir: "testdata/run/examples", CRDsDir: "testdata/run/crds",
	}, &out)
	return out.String(), err
}

func TestRunActs(t *testing.T) {
	out, err := runDemo(t, "good")
	require.NoError(t, err, out)
	for _, want := range []string{
		"[openstack-probe] onStartup -> exit 0",
		"[neutron-router-flavors] Synchronization neutron-router-flavors (2 objects) -> exit 0",
		"[neutron-router-flavors] Schedule periodic sync -> exit 0",
		`edited NeutronRouterFlavor demo-ns/alpha: spec.description "first" -> "first (edited by the demo)"`,
		"[neutron-router-flavors] Event Modified demo-ns/alpha (deletionTimestamp set) -> exit 0",
		"[neutron-router-flavors] Event Deleted demo-ns/alpha (deletionTimestamp set) -> exit 0",
		"NeutronRouterFlavor alpha: cleanup ran, the finalizer was released and the CR is gone",
		"every hook run exited 0",
	} {
		assert.Contains(t, out, want)
	}
	// The create act settles: the hook's own finalizer and status writes come back as events.
	create := out[strings.Index(out, "=== 1. create"):strings.Index(out, "=== 2. converge")]
	assert.Contains(t, create, "Event Modified demo-ns/alpha")
	assert.Regexp(t, `NeutronRouterFlavor\s+demo-ns/beta\s+1/1\s+Synced\s+Reconciled\s+yes\s+status,\+finalizer`, create)
	converge := out[strings.Index(out, "=== 2. converge"):strings.Index(out, "=== 3. edit")]
	assert.Contains(t, converge, "hooks wrote nothing to Kubernetes")
	edit := out[strings.Index(out, "=== 3. edit"):strings.Index(out, "=== 4. break")]
	assert.Regexp(t, `demo-ns/alpha\s+2/2\s+Synced\s+Reconciled\s+yes\s+spec,status`, edit)
	// Failing runs are expected while the cloud name is broken, and the status says why.
	broken := out[strings.Index(out, "=== 4. break"):strings.Index(out, "=== 5. repair")]
	assert.Contains(t, broken, "[neutron-router-flavors] Event Modified demo-ns/alpha -> exit 1")
	assert.Regexp(t, `demo-ns/alpha\s+3/3\s+Failed\s+ReconcileError`, broken)
	assert.Contains(t, broken, "NeutronRouterFlavor demo-ns/alpha: OpenStack connection failed: no cloud no-such-cloud")
	repair := out[strings.Index(out, "=== 5. repair"):strings.Index(out, "=== 6. source down")]
	assert.Regexp(t, `demo-ns/alpha\s+4/4\s+Synced\s+Reconciled`, repair)
}

func TestRunFailsWhenAHookFails(t *testing.T) {
	out, err := runDemo(t, "fail")
	require.Error(t, err)
	assert.Contains(t, out, "FAILED: openstack-probe: hook run (onStartup) exited 1")
	assert.Contains(t, out, "ERROR: stand-in hook told to fail", "a failing run's log is shown")
}

func TestRunFailsWhenWritesNeverSettle(t *testing.T) {
	out, err := runDemo(t, "loop")
	require.Error(t, err)
	assert.Contains(t, out, "FAILED: events still pending after 6 rounds")
	assert.Contains(t, out, "FAILED: converge: the schedule pass wrote to Kubernetes: ")
}

func TestRunFailsWhenABrokenCRIsNotReportedFailed(t *testing.T) {
	out, err := runDemo(t, "blind")
	require.Error(t, err)
	assert.Contains(t, out, `FAILED: 4. break: NeutronRouterFlavor/demo-ns/alpha is "Synced", want Failed`)
}

func TestMainExitCodes(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, Main(context.Background(), []string{"--no-such-flag"}, &out, &errOut))
	assert.Equal(t, 2, Main(context.Background(), []string{"extra"}, &out, &errOut))
	assert.Contains(t, errOut.String(), `demo: unexpected argument "extra"`)

	errOut.Reset()
	missing := filepath.Join(t.TempDir(), "none")
	self, err := os.Executable()
	require.NoError(t, err)
	assert.Equal(t, 1, Main(context.Background(), []string{"--host", self, "--crds", "testdata/run/crds", "--examples", missing}, &out, &errOut))
	assert.Contains(t, errOut.String(), "examples: no *.yaml file in "+missing)
}
