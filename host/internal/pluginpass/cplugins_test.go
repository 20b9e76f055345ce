package pluginpass

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cPluginsDir holds the C plugins of plugins-c/, built by hack/build-c-plugins.sh when clang is
// installed (hack/c-toolchain.sh; CI always installs it).
var cPluginsDir string

func buildCPlugins() error {
	if _, err := exec.LookPath("clang"); err != nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "openstack-sync-test-c-plugins-")
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(repoRoot(), "hack", "build-c-plugins.sh"), dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return err
	}
	cPluginsDir = dir
	return nil
}

// pluginFile is the compiled module of a plugin: a Go plugin of plugins-wasm/ or a C plugin of
// plugins-c/. Without clang a C plugin's scenarios skip, except in CI, where they must run.
func pluginFile(t *testing.T, name string) string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(repoRoot(), "plugins-c", name)); err != nil {
		return filepath.Join(pluginsDir, name+".wasm")
	}
	if cPluginsDir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("C plugin %s: clang is not installed (hack/c-toolchain.sh); CI must run it", name)
		}
		t.Skipf("C plugin %s: clang is not installed (run hack/c-toolchain.sh)", name)
	}
	return filepath.Join(cPluginsDir, name+".wasm")
}
