package compat

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// sum256 is crypto/sha256's Sum256 at every length around the block and padding boundaries, and
// for group names as Group hashes them.
func TestSum256IsSHA256(t *testing.T) {
	for n := range 300 {
		b := []byte(strings.Repeat("abcdefghij/,", 30)[:n])
		require.Equal(t, sha256.Sum256(b), sum256(b), "%d bytes", n)
	}
	long := []byte("a-namespace/" + strings.Repeat("s", 253) + "/cloud")
	require.Equal(t, sha256.Sum256(long), sum256(long))
}

func FuzzSum256(f *testing.F) {
	f.Add([]byte("metal/clouds,a/prod"))
	f.Fuzz(func(t *testing.T, b []byte) {
		require.Equal(t, sha256.Sum256(b), sum256(b))
	})
}
