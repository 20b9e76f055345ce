package plugins

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkChartWithoutFirstPartyCRDs installs the chart the way a plugin author's page says, into an
// API server that has none of the first-party CRDs yet: `helm install --skip-crds` with only the
// author's plugin enabled and its CRD given in the values. No first-party CRD is installed, and the
// release notes name the kind the plugin reconciles, and how to get its CRs.
func checkChartWithoutFirstPartyCRDs(t *testing.T, a *apiserver) {
	helm := filepath.Join(filepath.Dir(a.kubectl), "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no helm beside kubectl (%s): hack/k8s-tools.sh builds both", helm)
	}
	dir := t.TempDir()
	values := filepath.Join(dir, "values.yaml")
	require.NoError(t, os.WriteFile(values, []byte(`plugins:
  widgets: true
pluginData:
  widgets:
    plugin:
      source: oci://registry.example/team/neutron-widgets@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
      sha256: "5555555555555555555555555555555555555555555555555555555555555555"
    hook:
      envPrefix: NEUTRON_WIDGET
`), 0o644))
	a.must("create", "namespace", "widgets")
	cmd := exec.Command(helm, "install", "widgets", repoPath("charts", "openstack-sync-operator"), "--namespace", "widgets",
		"--skip-crds", "--values", values, "--set-file", "pluginData.widgets.hook.crdYAML="+filepath.Join("testdata", "widgets-crd.yaml"))
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "KUBECONFIG="+a.kubeconfig, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "helm install:\n%s", out)
	notes := string(out)
	assert.Contains(t, notes, "widgets: NeutronWidget (neutronwidgets.example.org); its CRD comes from the values: apply it yourself")
	assert.Contains(t, notes, "kubectl get neutronwidgets.example.org -n widgets")
	assert.NotContains(t, notes, "ironicrunbooks", "the notes name no kind the release does not reconcile")

	crds := a.must("get", "crd", "-o", "name")
	assert.Empty(t, strings.TrimSpace(crds), "helm install --skip-crds installs none of the first-party CRDs")
}
