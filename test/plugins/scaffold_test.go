package plugins

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generated is a plugin `openstack-sync plugin new` writes for the CRD checks, and a field its
// spec.resource fixes at creation, with another value.
type generated struct {
	args         []string
	name, plural string
	fixed        string
	fixedValue   any
}

var generatedPlugins = []generated{
	{args: []string{"keystone-projects"}, name: "keystone-projects", plural: "keystoneprojects", fixed: "domain_id", fixedValue: "other"},
	{args: []string{"--ownership", "none", "keystone-domains"}, name: "keystone-domains", plural: "keystonedomains"},
	{args: []string{"neutron-address-scopes"}, name: "neutron-address-scopes", plural: "neutronaddressscopes", fixed: "ip_version", fixedValue: 6},
	{args: []string{"neutron-networks"}, name: "neutron-networks", plural: "neutronnetworks", fixed: "project_id", fixedValue: "other"},
	{args: []string{"--path", "v2.0/widgets", "neutron-widgets"}, name: "neutron-widgets", plural: "neutronwidgets"},
	{args: []string{"--service", "baremetal", "--collection", "runbooks", "ironic-runbooks"}, name: "ironic-runbooks",
		plural: "ironicrunbooks", fixed: "disable_ramdisk", fixedValue: true},
	{args: []string{"ironic-deploy-templates"}, name: "ironic-deploy-templates", plural: "ironicdeploytemplates"},
}

// checkGeneratedCRDs runs the CRDs `plugin new` writes through a real API server: each is
// accepted, its examples (managed and imported) are accepted, each of its examples/invalid/
// files is refused with the words of its "# expect:" line, a field fixed at creation cannot be
// changed on a stored CR, and a lifecycle status as the host writes it round-trips unchanged.
func checkGeneratedCRDs(t *testing.T, a *apiserver) {
	bin := filepath.Join(t.TempDir(), "openstack-sync")
	build := exec.Command("go", "build", "-o", bin, "./host/cmd/openstack-sync")
	build.Dir = repoPath()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	work := t.TempDir()
	for _, g := range generatedPlugins {
		t.Run(g.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"plugin", "new"}, g.args...)...)
			cmd.Dir = work
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			dir := filepath.Join(work, g.name)
			a.must("apply", "-f", filepath.Join(dir, "crd.yaml"))
			a.must("wait", "--for", "condition=established", "--timeout=60s", "crd/"+g.plural+".example.org")
			a.must("apply", "-f", filepath.Join(dir, "example.yaml"), "-f", filepath.Join(dir, "example-import.yaml"))

			invalid, err := filepath.Glob(filepath.Join(dir, "examples", "invalid", "*.yaml"))
			require.NoError(t, err)
			require.NotEmpty(t, invalid)
			for _, f := range invalid {
				raw, err := os.ReadFile(f)
				require.NoError(t, err)
				first, _, _ := strings.Cut(string(raw), "\n")
				expect, ok := strings.CutPrefix(first, "# expect: ")
				require.True(t, ok, "%s: no # expect: line", f)
				out, err := a.run("apply", "-f", f)
				require.Error(t, err, "the API server accepted %s: %s", f, out)
				assert.Contains(t, out, expect, filepath.Base(f))
			}

			if g.fixed != "" {
				patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"resource": map[string]any{g.fixed: g.fixedValue}}})
				out, err := a.run("patch", g.plural+".example.org", "blue", "-n", "default", "--type=merge", "-p", string(patch))
				require.Error(t, err, "a change of %s was accepted: %s", g.fixed, out)
				assert.Contains(t, out, g.fixed+" is fixed at creation")
			}

			status := map[string]any{"syncStatus": "Synced", "lastSyncTime": "2026-12-03T10:40:00Z", "message": "done",
				"observedGeneration": int64(1), "id": "0b7c3f0e-0000-4000-8000-000000000003",
				"resource": map[string]any{"name": "blue"},
				"conditions": []any{
					map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled", "message": "done",
						"observedGeneration": int64(1), "lastTransitionTime": "2026-12-03T10:40:00Z"},
					map[string]any{"type": "Available", "status": "True", "reason": "Success",
						"message": "The OpenStack resource is available", "observedGeneration": int64(1),
						"lastTransitionTime": "2026-12-03T10:40:00Z"},
					map[string]any{"type": "Progressing", "status": "False", "reason": "Success",
						"message": "The OpenStack resource is up to date", "observedGeneration": int64(1),
						"lastTransitionTime": "2026-12-03T10:40:00Z"},
				}}
			patch, err := json.Marshal(map[string]any{"status": status})
			require.NoError(t, err)
			a.must("patch", g.plural+".example.org", "blue", "-n", "default", "--subresource=status", "--type=merge", "-p", string(patch))
			var got struct {
				Status map[string]any `json:"status"`
			}
			require.NoError(t, json.Unmarshal([]byte(a.must("get", g.plural+".example.org", "blue", "-n", "default", "-o", "json")), &got))
			want, _ := json.Marshal(status)
			have, _ := json.Marshal(got.Status)
			assert.JSONEq(t, string(want), string(have), "every lifecycle status field survives the API server")
		})
	}
}
