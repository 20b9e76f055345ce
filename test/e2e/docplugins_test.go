//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/test/docplugins"
)

// docPlugin is a plugin the documentation shows, built, with how to edit its CR.
type docPlugin struct {
	name, wasm, kind string
	spec             func(name string) map[string]any
	edit             func(spec map[string]any)
	// cloud is the clouds.yaml entry it runs as; default the admin's.
	cloud string
}

// TestDocPluginsOnRealOpenStack runs the plugins the pages show against the real Keystone,
// Neutron and Ironic: pdk.md's address scopes and Keystone projects as written, and the plugins
// writing-plugins.md makes with `plugin new neutron-address-scopes` and `plugin new --service
// baremetal --collection runbooks|deploy-templates` (deploy templates as the system-scoped admin). Each is created, converged,
// edited and deleted by `openstack-sync run --state` with the real cloud's clouds.yaml, as the
// pages' "prove it on real OpenStack" step does; whatever it made is gone at the end.
func TestDocPluginsOnRealOpenStack(t *testing.T) {
	h := need(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	work := t.TempDir()
	var plugins []docPlugin
	pages, err := docplugins.Extract(root, "docs/pdk.md")
	require.NoError(t, err)
	for _, p := range pages {
		kind, _, _ := p.CR("x")
		switch p.Name {
		case "neutron-address-scopes":
			plugins = append(plugins, docPlugin{name: "pdk.md " + p.Name, wasm: buildPage(t, p, root, work), kind: kind,
				spec: func(n string) map[string]any { _, s, _ := p.CR(n); return s }, edit: renameResource})
		case "keystone-projects":
			plugins = append(plugins, docPlugin{name: "pdk.md " + p.Name, wasm: buildPage(t, p, root, work), kind: kind,
				spec: func(n string) map[string]any { _, s, _ := p.CR(n); return s },
				edit: func(s map[string]any) { s["resource"].(map[string]any)["description"] = "edited" }})
		}
	}
	require.Len(t, plugins, 2, "docs/pdk.md's plugins for real resources")
	plugins = append(plugins, docPlugin{name: "writing-plugins.md plugin new neutron-address-scopes",
		wasm: buildScaffold(t, h.env.HostBinary, root, work, "neutron-address-scopes"), kind: "NeutronAddressScope",
		spec: func(n string) map[string]any {
			return map[string]any{"resource": map[string]any{"name": n, "ip_version": 4}}
		}, edit: renameResource})
	// Ironic's names are custom traits; the edit changes the steps (a JSON Patch).
	ironicSpec := func(orderKey string) func(string) map[string]any {
		return func(n string) map[string]any {
			return map[string]any{"resource": map[string]any{"name": "CUSTOM_" + strings.ToUpper(strings.ReplaceAll(n, "-", "_")),
				"steps": []any{map[string]any{"interface": "bios", "step": "apply_configuration", "args": map[string]any{"settings": []any{}}, orderKey: 1}}}}
		}
	}
	editSteps := func(orderKey string) func(map[string]any) {
		return func(s map[string]any) {
			s["resource"].(map[string]any)["steps"] = []any{map[string]any{"interface": "deploy", "step": "erase_devices", "args": map[string]any{}, orderKey: 2}}
		}
	}
	plugins = append(plugins,
		docPlugin{name: "writing-plugins.md plugin new ironic-runbooks", wasm: buildScaffold(t, h.env.HostBinary, root, work, "ironic-runbooks"),
			kind: "IronicRunbook", spec: ironicSpec("order"), edit: editSteps("order")},
		docPlugin{name: "writing-plugins.md plugin new ironic-deploy-templates", kind: "IronicDeployTemplate",
			wasm: buildScaffold(t, h.env.HostBinary, root, work, "ironic-deploy-templates"), cloud: h.env.SystemCloud,
			spec: ironicSpec("priority"), edit: editSteps("priority")})

	var b [4]byte
	_, _ = rand.Read(b[:])
	for i, p := range plugins {
		t.Run(p.name, func(t *testing.T) {
			name := "e2e-doc-" + hex.EncodeToString(b[:]) + "-" + string(rune('a'+i))
			cloud := p.cloud
			if cloud == "" {
				cloud = h.env.Cloud
			}
			dir := t.TempDir()
			state := filepath.Join(dir, "state.json")
			spec := p.spec(name)
			cr := writeCR(t, dir, "cr.yaml", p.kind, name, spec)
			run := func(args ...string) string {
				t.Helper()
				full := append([]string{"run", "--plugin", p.wasm, "--clouds", h.env.CloudsYAML, "--cloud", cloud,
					"--state", state}, args...)
				out, err := exec.Command(h.env.HostBinary, full...).CombinedOutput()
				require.NoError(t, err, "openstack-sync %s:\n%s", strings.Join(full, " "), out)
				return string(out)
			}
			deleted := false
			t.Cleanup(func() {
				if !deleted {
					_, _ = exec.Command(h.env.HostBinary, "run", "--plugin", p.wasm, "--clouds", h.env.CloudsYAML, "--cloud",
						cloud, "--state", state, "--prune", "--deleted", cr).CombinedOutput()
				}
			})

			out := run(cr)
			assert.Regexp(t, ` (POST) \S+ -> 201`, out, "created")
			assert.Contains(t, out, "syncStatus: Synced")
			out = run(cr)
			assert.NotRegexp(t, ` (POST|PUT|PATCH|DELETE) `, out, "a converged CR writes nothing on the real cloud")
			assert.Contains(t, out, "syncStatus: Synced")

			p.edit(spec)
			edited := writeCR(t, dir, "edited.yaml", p.kind, name, spec)
			out = run(edited)
			assert.Regexp(t, ` (PUT|PATCH) \S+ -> 200`, out, "the edit updates the resource in place")
			assert.NotContains(t, out, " POST ", "the edit makes no second resource")
			assert.Contains(t, out, "syncStatus: Synced")

			out = run("--prune", "--deleted", edited)
			deleted = true
			assert.Regexp(t, `openstack: deleted \S+`, out)
			assert.Regexp(t, regexp.MustCompile(` DELETE \S+ -> 204`), out)
		})
	}
}

func renameResource(s map[string]any) {
	r := s["resource"].(map[string]any)
	r["name"] = r["name"].(string) + "-renamed"
}

func writeCR(t *testing.T, dir, file, kind, name string, spec map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(map[string]any{"apiVersion": "example.org/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "e2e-docs"}, "spec": spec})
	require.NoError(t, err)
	path := filepath.Join(dir, file)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// buildPage builds a page's plugin, as written, into a module of its own.
func buildPage(t *testing.T, p docplugins.Plugin, root, work string) string {
	dir := filepath.Join(work, p.Name)
	require.NoError(t, p.Write(dir, root))
	return buildModule(t, dir, p.Name)
}

// buildScaffold writes a plugin as writing-plugins.md's first step makes it and builds it.
func buildScaffold(t *testing.T, host, root, work, name string) string {
	dir := filepath.Join(work, "scaffold", name)
	cmd := exec.Command(host, "plugin", "new", "--dir", dir, "--pdk", filepath.Join(root, "pdk"), "--host-module", root, name)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return buildModule(t, dir, name)
}

func buildModule(t *testing.T, dir, name string) string {
	t.Helper()
	wasm := filepath.Join(dir, name+".wasm")
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-buildmode=c-shared", "-trimpath", "-o", wasm, "."}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		if args[0] == "build" {
			cmd.Env = append(cmd.Env, "GOOS=wasip1", "GOARCH=wasm")
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s in %s:\n%s", strings.Join(args, " "), dir, out)
	}
	return wasm
}
