package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckFindsEveryKindOfStaleReference(t *testing.T) {
	got, err := check("testdata/repo")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"README.md:3: make target \"gone\" does not exist",
		"README.md:3: link docs/two.md does not exist",
		"README.md:6: flag --missing is defined by no openstack-sync command",
		"README.md:7: path host/cmd/other/main.go does not exist",
		"README.md:9: test TestTool: host/cmd/tool declares no such test",
		"README.md:9: test TestGone: host/internal/tool declares no such test",
		"README.md:9: test TestX: no package nowhere",
		"docs/guide.md:3: link ../NOPE.md does not exist",
		"docs/guide.md:7: path hack/gone.sh does not exist",
	}, got)
}

func TestRepoPath(t *testing.T) {
	tops := map[string]bool{"host": true, "docs": true, "bin": true, "Makefile": true}
	tests := []struct {
		tok, want string
		ok        bool
	}{
		{"host/internal/wasm", "host/internal/wasm", true},
		{"./host/internal/wasm/", "host/internal/wasm", true},
		{"(host/internal/wasm),", "host/internal/wasm", true},
		{"host/internal/<name>/x", "host/internal", true},
		{"host/*.go", "", false},
		{"bin/openstack-sync", "", false},
		{"Makefile", "", false},
		{"github.com/x/y", "", false},
		{"/usr/local/bin/openstack-sync", "", false},
		{"vendor/x", "", false},
	}
	for _, tt := range tests {
		got, ok := repoPath(tt.tok, tops)
		assert.Equal(t, tt.ok, ok, tt.tok)
		assert.Equal(t, tt.want, got, tt.tok)
	}
}

// The repository's own documentation is clean: the check make lint runs.
func TestTheRepositorysDocsAreCurrent(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(root, "Makefile")); err != nil {
		t.Fatalf("not in the repository: %v", err)
	}
	got, err := check(root)
	require.NoError(t, err)
	assert.Empty(t, got)
}
