package buildcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forbidden are packages that, under wasip1, link path_open or path_filestat_get (mime tables,
// time zone files, executables, sockets): a module importing them fails to load in the host.
var forbidden = []string{"net/http", "mime", "time/tzdata", "os/exec", "net", "crypto/x509"}

func TestPluginsLinkNoFileAccess(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	plugins := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "internal" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, e.Name(), "main.go")); err != nil {
			continue
		}
		plugins++
		t.Run(e.Name(), func(t *testing.T) {
			cmd := exec.Command("go", "list", "-deps", "./"+e.Name())
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			deps := map[string]bool{}
			for _, d := range strings.Fields(string(out)) {
				deps[d] = true
			}
			for _, f := range forbidden {
				assert.Falsef(t, deps[f], "plugin %s links %s, which imports WASI file access the host refuses", e.Name(), f)
			}
		})
	}
	// Every folder with a main.go is a plugin (hack/build-plugins.sh builds the same set), so no
	// count is kept by hand; zero would mean the walk found nothing and checked nothing.
	assert.NotZero(t, plugins, "no plugin directory was found under %s", root)
}
