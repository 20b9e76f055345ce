package outsidebuild

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildFlags is the build command of docs/writing-plugins.md, without its output file.
var buildFlags = []string{"build", "-buildmode=c-shared", "-trimpath", "-buildvcs=false", `-ldflags=-s -w`}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// checkout lays the third party's module out under dir as its own repository would be: the
// plugin at the top, the PDK checked out inside it (until the PDK can be fetched with go get),
// and returns the module directory.
func checkout(t *testing.T, dir, replace string) string {
	t.Helper()
	mod := filepath.Join(dir, "neutron-address-scopes")
	require.NoError(t, os.MkdirAll(mod, 0o755))
	// The plugin is the third party's plugin the plugin command's tests use.
	guests := filepath.Join(repoRoot(), "host", "internal", "plugincmd", "testdata", "guests")
	for _, f := range []string{filepath.Join("scopes", "main.go"), "go.sum"} {
		b, err := os.ReadFile(filepath.Join(guests, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(mod, filepath.Base(f)), b, 0o644))
	}
	gomod, err := os.ReadFile(filepath.Join("testdata", "scopes", "go.mod.in"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), bytes.ReplaceAll(gomod, []byte("PDK"), []byte(replace)), 0o644))
	require.NoError(t, os.CopyFS(filepath.Join(mod, "third_party", "pdk"), os.DirFS(filepath.Join(repoRoot(), "pdk"))))
	return mod
}

func build(t *testing.T, mod string) []byte {
	t.Helper()
	out := filepath.Join(mod, "plugin.wasm")
	cmd := exec.Command("go", append(buildFlags, "-o", out, ".")...)
	cmd.Dir = mod
	// GOWORK=off: a go.work of the machine running the test must not join the build.
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "building in %s:\n%s", mod, b)
	wasm, err := os.ReadFile(out)
	require.NoError(t, err)
	return wasm
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestTwoCheckoutsGiveOneDigest builds the same plugin in two directories of different names
// and depths: with the documented relative replace the modules are identical and hold neither
// directory, nor the Go module cache, nor the home directory.
func TestTwoCheckoutsGiveOneDigest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin twice")
	}
	a := checkout(t, filepath.Join(t.TempDir(), "alice", "src", "plugins"), "./third_party/pdk")
	b := checkout(t, filepath.Join(t.TempDir(), "ci-runner-7"), "./third_party/pdk")
	wa, wb := build(t, a), build(t, b)
	assert.Equal(t, digest(wa), digest(wb), "the same sources built in two places differ")
	home, _ := os.UserHomeDir()
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	for _, leak := range []string{a, b, filepath.Dir(t.TempDir()), repoRoot(), home, strings.TrimSpace(string(modcache))} {
		if leak == "" || leak == "/" {
			continue
		}
		assert.False(t, bytes.Contains(wa, []byte(leak)), "the module embeds the local path %s", leak)
	}
}

// TestAbsoluteReplaceLeaksThePath is the pitfall docs/writing-plugins.md warns about: an
// absolute replace path is recorded in the module's build information, so it names the
// builder's directory and two checkouts give two digests. -trimpath does not remove it.
func TestAbsoluteReplaceLeaksThePath(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin")
	}
	dir := filepath.Join(t.TempDir(), "bob")
	mod := checkout(t, dir, filepath.Join(dir, "neutron-address-scopes", "third_party", "pdk"))
	w := build(t, mod)
	assert.True(t, bytes.Contains(w, []byte(dir)), "an absolute replace path is expected in the build information")
}
