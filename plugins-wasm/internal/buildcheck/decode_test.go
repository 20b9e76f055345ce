package buildcheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowDecode is a direct call of encoding/json's decoder. In the sandbox it costs several of the
// host's termination checks per input byte; the PDK's decoders (experimental.DecodeJSON, DecodeSpec,
// every ServiceClient answer) give the same results for the JSON plugins see at a fraction of it
// (docs/benchmarks.md, "Guest-side fixes").
var slowDecode = regexp.MustCompile(`\bjson\.(Unmarshal|NewDecoder)\(`)

// allowedSlowDecode are the files that may call it, each for a reason that is not a hot path.
var allowedSlowDecode = map[string]string{
	"internal/canon/canon.go": "canonical JSON of values that are not plain Go values (structs), after the plain writer declined",
}

// TestPluginsDecodeThroughThePDK keeps encoding/json's decoder off the plugins' and the
// lifecycle's code: a call that slips in (as the router flavors' metainfo and the lifecycle's
// spec fields did) puts a per-CR or per-list decode back on the slow path.
func TestPluginsDecodeThroughThePDK(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	checked := 0
	for _, dir := range []string{root, filepath.Join(root, "..", "pdk", "lifecycle")} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			checked++
			if _, ok := allowedSlowDecode[filepath.ToSlash(rel)]; ok {
				return nil
			}
			for i, line := range strings.Split(string(src), "\n") {
				assert.False(t, slowDecode.MatchString(line), "%s:%d decodes with encoding/json; use experimental.DecodeJSON (pdk/experimental): %s",
					rel, i+1, strings.TrimSpace(line))
			}
			return nil
		})
		require.NoError(t, err)
	}
	assert.Greater(t, checked, 10, "the walk found the plugins' sources")
}
