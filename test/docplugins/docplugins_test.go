package docplugins

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/conformance"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// pages are the pages whose plugins are checked, and how many each shows.
var pages = map[string]int{"docs/pdk.md": 3}

// TestPagesPluginsPassTheKit builds each plugin of the pages, as written, and runs the
// conformance kit on it: converge, memo, cleanup (a resource made by hand under the CR's own
// name is never adopted nor deleted), grants and bad specs.
func TestPagesPluginsPassTheKit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the pages' plugins and runs them in the host runtime")
	}
	for doc, want := range pages {
		plugins, err := Extract(repoRoot(), doc)
		require.NoError(t, err)
		require.Len(t, plugins, want, "%s: the plugins this test knows of", doc)
		for _, p := range plugins {
			t.Run(p.Name, func(t *testing.T) {
				dir := t.TempDir()
				require.NoError(t, p.Write(dir, repoRoot()))
				tidy := exec.Command("go", "mod", "tidy")
				tidy.Dir = dir
				tidy.Env = append(tidy.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
				out, err := tidy.CombinedOutput()
				require.NoError(t, err, "%s:%d: %s", p.Doc, p.Line, out)
				suite := suiteOf(t, p)
				suite.Plugin = conformance.Build(t, dir)
				report := suite.Check(context.Background())
				require.True(t, report.OK(), "%s:%d, the %s plugin, fails the conformance kit:\n%v", p.Doc, p.Line, p.Name, report.Problems())
			})
		}
	}
}

// suiteOf is the kit's suite for a plugin of the pages: two CRs, and a resource made by hand
// under the first CR's own name, which the plugin must leave alone.
func suiteOf(t *testing.T, p Plugin) conformance.Suite {
	kind, blue, ok := p.CR("blue")
	require.True(t, ok, "no CRs for %s: add them to Plugin.CR", p.Name)
	_, green, _ := p.CR("green")
	s := conformance.Suite{APIVersion: "example.org/v1alpha1", Kind: kind,
		CRs: []conformance.CR{{Name: "blue", Spec: blue}, {Name: "green", Spec: green}}}
	switch p.Name {
	case "neutron-widgets":
		s.Collections = []conformance.Collection{{Path: "v2.0/widgets", Key: "widget", Attributes: []string{"name", "description"}}}
		s.Unowned = []conformance.Request{{Service: "network", Path: "v2.0/widgets", Body: map[string]any{"widget": map[string]any{"name": "by-hand"}}}}
	case "neutron-address-scopes":
		s.Unowned = []conformance.Request{{Service: "network", Path: "v2.0/address-scopes",
			Body: map[string]any{"address_scope": map[string]any{"name": "blue", "ip_version": 4}}}}
	case "keystone-projects":
		s.Unowned = []conformance.Request{{Service: "identity", Path: "v3/projects",
			Body: map[string]any{"project": map[string]any{"name": "made-by-hand"}}}}
	}
	return s
}
