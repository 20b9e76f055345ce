package plugins

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// k8sBin finds the folder hack/k8s-tools.sh builds (kube-apiserver, etcd, kubectl): $K8S_BIN, else
// its default cache under GOPATH.
func k8sBin(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("K8S_BIN")}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		matches, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "openstack-sync-tools", "*", "bin"))
		candidates = append(candidates, matches...)
	}
	for _, dir := range candidates {
		if dir == "" {
			continue
		}
		ok := true
		for _, tool := range []string{"kube-apiserver", "etcd", "kubectl"} {
			if _, err := os.Stat(filepath.Join(dir, tool)); err != nil {
				ok = false
			}
		}
		if ok {
			return dir
		}
	}
	// The real-parts checks may skip only when the parts are absent, and never on CI.
	if os.Getenv("CI") == "true" {
		t.Fatal("no kube-apiserver, etcd and kubectl and CI=true: run hack/k8s-tools.sh (or set K8S_BIN) first")
	}
	t.Skip("no kube-apiserver, etcd and kubectl: run hack/k8s-tools.sh (or set K8S_BIN) for the admission checks")
	return ""
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

type apiserver struct {
	t          *testing.T
	kubectl    string
	kubeconfig string
}

func startAPIServer(t *testing.T) *apiserver {
	bin := k8sBin(t)
	state := filepath.Join(t.TempDir(), "kube")
	up := exec.Command(repoPath("hack", "kube-up.sh"), state)
	up.Env = append(os.Environ(), "K8S_BIN="+bin, "ETCD_PORT="+freePort(t), "ETCD_PEER_PORT="+freePort(t), "KUBE_API_PORT="+freePort(t))
	out, err := up.CombinedOutput()
	t.Cleanup(func() { _ = exec.Command(repoPath("hack", "kube-down.sh"), state).Run() })
	require.NoError(t, err, "hack/kube-up.sh: %s", out)
	return &apiserver{t: t, kubectl: filepath.Join(bin, "kubectl"), kubeconfig: filepath.Join(state, "kubeconfig")}
}

func (a *apiserver) run(args ...string) (string, error) {
	cmd := exec.Command(a.kubectl, append([]string{"--kubeconfig", a.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (a *apiserver) must(args ...string) string {
	a.t.Helper()
	out, err := a.run(args...)
	require.NoError(a.t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

// TestAdmission runs the CRDs and examples through a real API server: every example is accepted,
// every examples/invalid/ file is refused with the message its "# expect:" line names, and a full
// status as the host writes it round-trips unchanged (nothing pruned, so "status is current" holds).
func TestAdmission(t *testing.T) {
	a := startAPIServer(t)
	// First, while the API server has no CRD: a plugin author's release without the first-party ones.
	t.Run("chart without the first-party CRDs", func(t *testing.T) { checkChartWithoutFirstPartyCRDs(t, a) })
	a.must("apply", "-f", repoPath("crds"))
	a.must("wait", "--for", "condition=established", "--timeout=60s", "crd", "--all")
	a.must("create", "namespace", "openstack")
	a.must("apply", "-f", repoPath("examples"))
	a.must("apply", "-f", repoPath("examples", "lifecycle"))

	for _, ex := range invalidExamples(t) {
		t.Run(filepath.Base(ex.path), func(t *testing.T) {
			out, err := a.run("apply", "-f", ex.path)
			require.Error(t, err, "the API server accepted %s: %s", ex.path, out)
			assert.Contains(t, out, ex.expect)
		})
	}

	status := map[string]any{
		"syncStatus": "Failed", "lastSyncTime": "2026-11-29T10:40:00Z", "message": "a stable message", "observedGeneration": int64(1),
		"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "ImmutableFieldChanged",
			"message": "a stable message", "observedGeneration": int64(1), "lastTransitionTime": "2026-11-29T10:40:00Z"}},
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	require.NoError(t, err)
	for _, c := range wantCRDs(t) {
		name := strings.TrimSpace(a.must("get", c.short, "-n", "openstack", "-o", "jsonpath={.items[0].metadata.name}"))
		t.Run("status of "+c.kind, func(t *testing.T) {
			a.must("patch", c.short, name, "-n", "openstack", "--subresource=status", "--type=merge", "-p", string(patch))
			var got struct {
				Status map[string]any `json:"status"`
			}
			require.NoError(t, json.Unmarshal([]byte(a.must("get", c.short, name, "-n", "openstack", "-o", "json")), &got))
			want, err := json.Marshal(status)
			require.NoError(t, err)
			have, err := json.Marshal(got.Status)
			require.NoError(t, err)
			assert.JSONEq(t, string(want), string(have))
			cols := a.must("get", c.short, name, "-n", "openstack")
			assert.Contains(t, cols, "ImmutableFieldChanged", "the printer columns show the reason")
		})
	}

	// A plugin's extra status (the subnet pools' prefixes and their Nautobot links) survives too.
	prefixes := map[string]any{"status": map[string]any{"prefixes": []any{map[string]any{"id": "2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87",
		"cidr": "10.0.0.0/24", "url": "https://nautobot.example.com/ipam/prefixes/2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87/"}}}}
	raw, err := json.Marshal(prefixes)
	require.NoError(t, err)
	a.must("patch", "nsp", "public-ip-pool", "-n", "openstack", "--subresource=status", "--type=merge", "-p", string(raw))
	var pool struct {
		Status map[string]any `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.must("get", "nsp", "public-ip-pool", "-n", "openstack", "-o", "json")), &pool))
	assert.Equal(t, prefixes["status"].(map[string]any)["prefixes"], pool.Status["prefixes"], "status.prefixes is declared")

	// A lifecycle plugin's status (status.id, status.resource, Available and Progressing) is
	// declared too: were any of it pruned, the host would find it stale and re-patch every run.
	lifecycleStatus := map[string]any{
		"syncStatus": "Progressing", "lastSyncTime": "2026-11-29T10:40:00Z", "message": "waiting", "observedGeneration": int64(1),
		"id": "0b7c3f0e-0000-4000-8000-000000000003",
		"resource": map[string]any{"name": "provider-vlans", "network_type": "vlan", "physical_network": "physnet1",
			"minimum": int64(200), "maximum": int64(299), "shared": true},
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "False", "reason": "Progressing", "message": "waiting",
				"observedGeneration": int64(1), "lastTransitionTime": "2026-11-29T10:40:00Z"},
			map[string]any{"type": "Available", "status": "True", "reason": "Success", "message": "The OpenStack resource is available",
				"observedGeneration": int64(1), "lastTransitionTime": "2026-11-29T10:40:00Z"},
			map[string]any{"type": "Progressing", "status": "True", "reason": "Progressing", "message": "waiting",
				"observedGeneration": int64(1), "lastTransitionTime": "2026-11-29T10:40:00Z"},
		},
	}
	patch, err = json.Marshal(map[string]any{"status": lifecycleStatus})
	require.NoError(t, err)
	a.must("patch", "nsr", "provider-vlans-observed", "-n", "openstack", "--subresource=status", "--type=merge", "-p", string(patch))
	var got struct {
		Status map[string]any `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(a.must("get", "nsr", "provider-vlans-observed", "-n", "openstack", "-o", "json")), &got))
	want, err := json.Marshal(lifecycleStatus)
	require.NoError(t, err)
	have, err := json.Marshal(got.Status)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(have), "every lifecycle status field survives the API server")

	t.Run("generated", func(t *testing.T) { checkGeneratedCRDs(t, a) })
}
