package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build compiles the Go main package in dir as a plugin, the way docs/writing-plugins.md builds a
// release (wasip1, c-shared, -trimpath, no VCS stamp, stripped), and returns the .wasm path in a
// temporary directory of the test.
func Build(t testing.TB, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("conformance: the go command is not on PATH: %v", err)
	}
	out := filepath.Join(t.TempDir(), "plugin.wasm")
	cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("conformance: building the plugin in %s: %v\n%s", dir, err, b)
	}
	return out
}
