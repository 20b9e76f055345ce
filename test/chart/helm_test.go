package chart_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// chartDir is the chart under test, relative to this package.
const chartDir = "../../charts/openstack-sync-operator"

// findHelm returns the helm binary: $HELM, then PATH, then the cache hack/k8s-tools.sh fills. The
// chart tier may skip only when helm is absent, and never on CI.
func findHelm(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		if _, err := os.Stat(h); err != nil {
			t.Fatalf("HELM=%s: %v", h, err)
		}
		return h
	}
	if h, err := exec.LookPath("helm"); err == nil {
		return h
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		matches, _ := filepath.Glob(filepath.Join(string(bytes.TrimSpace(gopath)), "openstack-sync-tools", "*", "bin", "helm"))
		if len(matches) > 0 {
			return matches[len(matches)-1]
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("helm not found (HELM, PATH, tools cache) and CI=true: run hack/k8s-tools.sh first")
	}
	t.Skip("helm not found: set HELM or run hack/k8s-tools.sh")
	return ""
}

// helm runs one helm command with its state folders in a temporary directory, so a user's
// repositories and plugins cannot change the result.
func helm(t *testing.T, bin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// kubeVersion pins .Capabilities.KubeVersion, so a helm built without version ldflags renders the
// same as the one hack/k8s-tools.sh builds.
const kubeVersion = "1.34.4"

// template renders the chart as release "oso" in namespace "openstack" with the given values files.
func template(t *testing.T, bin string, valuesFiles ...string) (string, string, error) {
	t.Helper()
	args := []string{"template", "oso", chartDir, "--namespace", "openstack", "--kube-version", kubeVersion}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	return helm(t, bin, args...)
}
