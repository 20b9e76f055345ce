package conformance_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/conformance"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var pluginsDir, cPluginsDir string

func TestMain(m *testing.M) {
	var err error
	if pluginsDir, err = wasmtest.Plugins(repoRoot()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := exec.LookPath("clang"); err == nil {
		cPluginsDir, err = os.MkdirTemp("", "openstack-sync-conformance-c-")
		if err == nil {
			cmd := exec.Command(filepath.Join(repoRoot(), "hack", "build-c-plugins.sh"), cPluginsDir)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			err = cmd.Run()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "building the C plugins:", err)
			os.Exit(1)
		}
	}
	os.Setenv(wasm.CacheDirEnv, filepath.Join(os.TempDir(), "openstack-sync-test-wazero"))
	code := m.Run()
	if cPluginsDir != "" {
		os.RemoveAll(cPluginsDir)
	}
	os.Exit(code)
}

// crdFor finds the CRD of a plugin in crds/ by the repository's naming rule: its plural is the
// plugin's name without dashes.
func crdFor(t *testing.T, name string) (apiVersion, kind string) {
	files, err := filepath.Glob(filepath.Join(repoRoot(), "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd struct {
			Spec struct {
				Group string
				Names struct{ Kind, Plural string }
				// The served version is the first.
				Versions []struct{ Name string }
			}
		}
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if crd.Spec.Names.Plural == strings.ReplaceAll(name, "-", "") && len(crd.Spec.Versions) > 0 {
			return crd.Spec.Group + "/" + crd.Spec.Versions[0].Name, crd.Spec.Names.Kind
		}
	}
	t.Fatalf("no CRD in crds/ has the plural %q of plugin %s", strings.ReplaceAll(name, "-", ""), name)
	return "", ""
}

// TestFirstPartyPlugins runs the kit over every plugin of the repository: each Go plugin of
// plugins-wasm/ and each C plugin of plugins-c/ (CI installs clang; elsewhere without it the C
// plugins are skipped). A plugin that reconciles CRs needs testdata/<name>.yaml.
func TestFirstPartyPlugins(t *testing.T) {
	var modules []string
	for _, dir := range []string{pluginsDir, cPluginsDir} {
		if dir == "" {
			continue
		}
		found, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
		if err != nil {
			t.Fatal(err)
		}
		modules = append(modules, found...)
	}
	if cPluginsDir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("clang is not installed (hack/c-toolchain.sh); CI must check the C plugins")
		}
		t.Log("clang is not installed: the C plugins are not checked (run hack/c-toolchain.sh)")
	}
	if len(modules) < 4 {
		t.Fatalf("found %d compiled plugins, want at least the four of plugins-wasm/: %v", len(modules), modules)
	}
	for _, module := range modules {
		name := strings.TrimSuffix(filepath.Base(module), ".wasm")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			suite := conformance.Suite{}
			fixture := filepath.Join("testdata", name+".yaml")
			if _, err := os.Stat(fixture); err == nil {
				if suite, err = conformance.Load(fixture); err != nil {
					t.Fatal(err)
				}
				suite.APIVersion, suite.Kind = crdFor(t, name)
			}
			suite.Plugin = module
			suite.Run(t)
		})
	}
}
