package plugincmd

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

func TestPushPullRoundTrip(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	scopes := guest(t, "scopes")

	code, ref, errOut := runCmd(t, "push", scopes, host+"/plugins/neutron-address-scopes:0.3.1")
	require.Equal(t, exitOK, code, errOut)
	ref = strings.TrimSpace(ref)
	assert.Regexp(t, `^`+host+`/plugins/neutron-address-scopes@sha256:[0-9a-f]{64}$`, ref)
	assert.Contains(t, errOut, "pushed "+scopes+" (neutron-address-scopes, module sha256:"+fileDigest(t, scopes)+")")

	dir := t.TempDir()
	out := filepath.Join(dir, "pulled.wasm")
	code, stdout, errOut := runCmd(t, "pull", "-o", out, "--sha256", fileDigest(t, scopes), ref)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "pulled "+ref+" to "+out+" (module sha256:"+fileDigest(t, scopes)+")\n", stdout)
	// The pulled module is the pushed one, byte for byte, and loads.
	assert.Equal(t, fileDigest(t, scopes), fileDigest(t, out))
	code, stdout, _ = runCmd(t, "verify", "--sha256", fileDigest(t, scopes), out)
	assert.Equal(t, exitOK, code, stdout)

	t.Run("default file name", func(t *testing.T) {
		t.Chdir(t.TempDir())
		code, stdout, errOut := runCmd(t, "pull", ref)
		require.Equal(t, exitOK, code, errOut)
		assert.Contains(t, stdout, " to neutron-address-scopes.wasm ")
		_, err := os.Stat("neutron-address-scopes.wasm")
		assert.NoError(t, err)
	})
	t.Run("another module digest", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.wasm")
		code, _, errOut := runCmd(t, "pull", "-o", other, "--sha256", strings.Repeat("ab", 32), ref)
		assert.Equal(t, exitFail, code)
		assert.Contains(t, errOut, "not the required sha256:"+strings.Repeat("ab", 32))
		_, err := os.Stat(other)
		assert.True(t, os.IsNotExist(err), "a refused module is not left behind")
		// A file already there (the module a running pod uses) is neither replaced nor removed.
		require.NoError(t, os.WriteFile(other, []byte("the module in use"), 0o644))
		code, _, _ = runCmd(t, "pull", "-o", other, "--sha256", strings.Repeat("ab", 32), ref)
		assert.Equal(t, exitFail, code)
		kept, err := os.ReadFile(other)
		require.NoError(t, err)
		assert.Equal(t, "the module in use", string(kept))
	})
	t.Run("a tag without --allow-tag", func(t *testing.T) {
		code, _, errOut := runCmd(t, "pull", "-o", filepath.Join(t.TempDir(), "x.wasm"), host+"/plugins/neutron-address-scopes:0.3.1")
		assert.Equal(t, exitFail, code)
		assert.Contains(t, errOut, "is not pinned by digest")
	})
	t.Run("a module the host refuses is not pushed", func(t *testing.T) {
		broken := filepath.Join(t.TempDir(), "broken.wasm")
		require.NoError(t, os.WriteFile(broken, wasmtest.Module{Memory: true}.Encode(), 0o644))
		code, stdout, errOut := runCmd(t, "push", broken, host+"/plugins/broken:1")
		assert.Equal(t, exitFail, code)
		assert.Empty(t, stdout)
		assert.Contains(t, errOut, "is refused by the host:\n  - ")
	})
	t.Run("usage", func(t *testing.T) {
		code, _, errOut := runCmd(t, "push", scopes)
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "want FILE REF")
		code, _, errOut = runCmd(t, "pull")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, "want exactly one REF")
	})
}
