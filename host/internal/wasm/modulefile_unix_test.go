//go:build unix

package wasm

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A module file truncated while it is mapped (copied over in place during a load) is a refusal of
// the module, not a crash of the host on the fault past the file's new end.
func TestAModuleTruncatedWhileMappedIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plugin.wasm")
	require.NoError(t, os.WriteFile(path, make([]byte, 1<<20), 0o644))
	b, _, release, err := readModule(path)
	require.NoError(t, err)
	defer release()
	require.NoError(t, os.Truncate(path, 0))
	sum := 0
	err = readingMapped(path, func() error {
		for i := 0; i < len(b); i += 4096 {
			sum += int(b[i])
		}
		return nil
	})
	var le *LoadError
	require.ErrorAs(t, err, &le, "sum %d", sum)
	assert.Equal(t, "wasm plugin "+path+": cannot read the module: the file changed while it was read", err.Error())
}

// The mapping is the file: the digest is the file's, and an empty file (which cannot be mapped)
// is read instead.
func TestReadModuleMapsTheFile(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"\x00asm\x01\x00\x00\x00", ""} {
		path := filepath.Join(dir, "m.wasm")
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		b, digest, release, err := readModule(path)
		require.NoError(t, err)
		assert.Equal(t, content, string(b))
		want, err := hashModule(path)
		require.NoError(t, err)
		assert.Equal(t, want, digest)
		release()
		release() // twice is harmless
	}
}
