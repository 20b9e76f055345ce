package main

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testVersion = "v0.0.0-test"

// TestReleaseIsReproducibleAndFetchable builds the release of this checkout twice, for this
// machine's platform: the same bytes both times, the archives hold what a third party needs, and
// the modules archive is a Go module proxy from which `go get .../pdk@VERSION` and `go install
// .../cmd/openstack-sync@VERSION` work offline, as they will from the public proxy once published.
func TestReleaseIsReproducibleAndFetchable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release twice")
	}
	repo := filepath.Join("..", "..")
	a, b := t.TempDir(), t.TempDir()
	require.NoError(t, release(repo, testVersion, a, []string{hostPlatform()}))
	require.NoError(t, release(repo, testVersion, b, []string{hostPlatform()}))
	sumsA, err := os.ReadFile(filepath.Join(a, "SHA256SUMS"))
	require.NoError(t, err)
	sumsB, err := os.ReadFile(filepath.Join(b, "SHA256SUMS"))
	require.NoError(t, err)
	assert.Equal(t, string(sumsA), string(sumsB), "two builds of one commit differ")
	platform := strings.ReplaceAll(hostPlatform(), "/", "-")
	for _, want := range []string{"openstack-sync-" + testVersion + "-" + platform + ".tar.gz", "openstack-sync-pdk-" + testVersion + ".tar.gz",
		"openstack-sync-modules-" + testVersion + ".tar.gz"} {
		assert.Contains(t, string(sumsA), "  "+want+"\n")
	}

	bin := untar(t, filepath.Join(a, "openstack-sync-"+testVersion+"-"+platform+".tar.gz"))
	dir := filepath.Join(bin, "openstack-sync-"+testVersion+"-"+platform)
	out, err := exec.Command(filepath.Join(dir, "openstack-sync"), "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "openstack-sync "+testVersion+"\n", string(out))
	_, err = os.Stat(filepath.Join(dir, "openstack-sync-dev"))
	assert.NoError(t, err, "the development binary is in the archive")
	pdk := untar(t, filepath.Join(a, "openstack-sync-pdk-"+testVersion+".tar.gz"))
	_, err = os.Stat(filepath.Join(pdk, "openstack-sync-pdk-"+testVersion, "go.mod"))
	assert.NoError(t, err, "the PDK's source is in its archive")

	modules := untar(t, filepath.Join(a, "openstack-sync-modules-"+testVersion+".tar.gz"))
	gomodcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	// A module cache of the test's own, so the modules at testVersion never reach the machine's;
	// third-party modules come from the machine's cache as from a proxy, without network.
	env := append(os.Environ(), "GOFLAGS=-mod=mod -modcacherw", "GOMODCACHE="+filepath.Join(t.TempDir(), "gomodcache"),
		"GOWORK=off", "GOSUMDB=off", "CGO_ENABLED=0",
		"GOPROXY=file://"+filepath.Join(modules, "openstack-sync-modules-"+testVersion, "goproxy")+
			",file://"+filepath.Join(strings.TrimSpace(string(gomodcache)), "cache", "download"))
	// The host's module requires the PDK's at the release's version, with no replace line: go
	// install PKG@VERSION refuses a module with one, and a replace does not apply to a dependency.
	hostMod, err := os.ReadFile(filepath.Join(modules, "openstack-sync-modules-"+testVersion, "goproxy",
		"github.com", "openstack-sync", "openstack-sync", "@v", testVersion+".mod"))
	require.NoError(t, err)
	assert.Contains(t, string(hostMod), "\tgithub.com/openstack-sync/openstack-sync/pdk "+testVersion+"\n")
	assert.NotContains(t, string(hostMod), "replace")
	mod := t.TempDir()
	gobin := t.TempDir()
	for _, args := range [][]string{
		{"mod", "init", "example.org/p"},
		{"get", "github.com/openstack-sync/openstack-sync/pdk@" + testVersion},
		{"get", "github.com/openstack-sync/openstack-sync@" + testVersion}, // the kit, as a plugin new module requires it
		{"install", "-trimpath", "github.com/openstack-sync/openstack-sync/host/cmd/openstack-sync@" + testVersion},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = mod, append(env, "GOBIN="+gobin)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	}
	out, err = exec.Command(filepath.Join(gobin, "openstack-sync"), "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "openstack-sync "+testVersion+"\n", string(out), "go install names the version it fetched")

	assert.ErrorContains(t, release(repo, "0.1", t.TempDir(), nil), `--version "0.1": want a canonical semantic version`)
}

// untar unpacks a .tar.gz into a new folder and returns it.
func untar(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	dir := t.TempDir()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return dir
		}
		require.NoError(t, err)
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		require.NoError(t, os.MkdirAll(filepath.Dir(target), 0o755))
		body, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(target, body, os.FileMode(h.Mode)))
	}
}
