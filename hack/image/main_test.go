package main

import (
	"archive/tar"
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureRoot writes a small root file system; stamp sets every file's times, mode the files'
// permission bits beyond the executable bit.
func fixtureRoot(t *testing.T, stamp time.Time, mode os.FileMode) string {
	root := t.TempDir()
	files := map[string]bool{ // path -> executable
		"usr/local/bin/shell-operator": true, "usr/local/bin/openstack-sync": true, "bin/busybox": true,
		"plugins/a.wasm": false, "plugins/SHA256SUMS": false, "etc/passwd": false,
	}
	for p, exe := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o700))
		m := mode &^ 0o111
		if exe {
			m |= 0o100
		}
		require.NoError(t, os.WriteFile(full, []byte(p), m))
		require.NoError(t, os.Chmod(full, m))
	}
	for _, d := range []string{"hooks", "tmp", "var/cache/openstack-sync"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o700))
	}
	require.NoError(t, os.Symlink("busybox", filepath.Join(root, "bin/sh")))
	require.NoError(t, filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode()&os.ModeSymlink == 0 {
			err = os.Chtimes(p, stamp, stamp)
		}
		return err
	}))
	return root
}

// entries lists the image's files as "mode uid:gid name[ -> target]".
func entries(t *testing.T, img v1.Image) []string {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		e := h.FileInfo().Mode().String() + " " + strconv.Itoa(h.Uid) + ":" + strconv.Itoa(h.Gid) + " " + h.Name
		if h.Linkname != "" {
			e += " -> " + h.Linkname
		}
		assert.True(t, h.ModTime.Equal(time.Unix(42, 0)), "%s has time %s", h.Name, h.ModTime)
		out = append(out, e)
	}
}

// TestReproducible: the digest depends on the files' contents, names and executable bits only;
// times, permission noise and build order do not change it.
func TestReproducible(t *testing.T) {
	spec := OperatorSpec(time.Unix(42, 0).UTC(), "dev")
	a, err := Build(fixtureRoot(t, time.Unix(1e9, 0), 0o600), spec)
	require.NoError(t, err)
	b, err := Build(fixtureRoot(t, time.Now(), 0o664), spec)
	require.NoError(t, err)
	da, err := a.Digest()
	require.NoError(t, err)
	db, err := b.Digest()
	require.NoError(t, err)
	assert.Equal(t, da, db)

	other := fixtureRoot(t, time.Now(), 0o600)
	require.NoError(t, os.WriteFile(filepath.Join(other, "plugins/a.wasm"), []byte("changed"), 0o644))
	c, err := Build(other, spec)
	require.NoError(t, err)
	dc, err := c.Digest()
	require.NoError(t, err)
	assert.NotEqual(t, da, dc, "a changed file changes the digest")
}

func TestImageContents(t *testing.T) {
	img, err := Build(fixtureRoot(t, time.Now(), 0o600), OperatorSpec(time.Unix(42, 0).UTC(), "1.2.3"))
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/usr/local/bin/shell-operator"}, cfg.Config.Entrypoint)
	assert.Equal(t, []string{"start"}, cfg.Config.Cmd)
	assert.Equal(t, "65532:65532", cfg.Config.User)
	assert.Contains(t, cfg.Config.Env, "SHELL_OPERATOR_HOOKS_DIR=/hooks")
	assert.Equal(t, "1.2.3", cfg.Config.Labels["org.opencontainers.image.version"])
	assert.Equal(t, "linux", cfg.OS)
	assert.Equal(t, []string{
		"drwxr-xr-x 0:0 bin",
		"-rwxr-xr-x 0:0 bin/busybox",
		"Lrwxrwxrwx 0:0 bin/sh -> busybox",
		"drwxr-xr-x 0:0 etc",
		"-rw-r--r-- 0:0 etc/passwd",
		"drwxr-xr-x 65532:65532 hooks",
		"drwxr-xr-x 0:0 plugins",
		"-rw-r--r-- 0:0 plugins/SHA256SUMS",
		"-rw-r--r-- 0:0 plugins/a.wasm",
		"dtrwxrwxrwx 65532:65532 tmp",
		"drwxr-xr-x 0:0 usr",
		"drwxr-xr-x 0:0 usr/local",
		"drwxr-xr-x 0:0 usr/local/bin",
		"-rwxr-xr-x 0:0 usr/local/bin/openstack-sync",
		"-rwxr-xr-x 0:0 usr/local/bin/shell-operator",
		"drwxr-xr-x 0:0 var",
		"drwxr-xr-x 0:0 var/cache",
		"drwxr-xr-x 65532:65532 var/cache/openstack-sync",
	}, entries(t, img))
}

// TestPushAndLayout: the command writes an OCI layout and pushes to a registry (go-containerregistry's
// own, on loopback); both hold the digest it prints.
func TestPushAndLayout(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	out := filepath.Join(t.TempDir(), "layout")
	var stdout bytes.Buffer
	t.Setenv("SOURCE_DATE_EPOCH", "42")
	require.NoError(t, run([]string{"-root", fixtureRoot(t, time.Now(), 0o600), "-o", out, "-tag", "example.invalid/oso:dev",
		"-push", host + "/openstack-sync-operator:dev", "-insecure"}, &stdout))
	digest := strings.TrimSpace(stdout.String())
	require.True(t, strings.HasPrefix(digest, "sha256:"), digest)

	ref, err := name.ParseReference(host+"/openstack-sync-operator@"+digest, name.Insecure)
	require.NoError(t, err)
	pulled, err := remote.Image(ref)
	require.NoError(t, err)
	d, err := pulled.Digest()
	require.NoError(t, err)
	assert.Equal(t, digest, d.String())
	cfg, err := pulled.ConfigFile()
	require.NoError(t, err)
	assert.True(t, cfg.Created.Equal(time.Unix(42, 0)), "SOURCE_DATE_EPOCH stamps the config: %s", cfg.Created)

	p, err := layout.FromPath(out)
	require.NoError(t, err)
	h, err := v1.NewHash(digest)
	require.NoError(t, err)
	fromLayout, err := p.Image(h)
	require.NoError(t, err)
	d, err = fromLayout.Digest()
	require.NoError(t, err)
	assert.Equal(t, digest, d.String())
}

func TestErrors(t *testing.T) {
	root := fixtureRoot(t, time.Now(), 0o600)
	require.NoError(t, os.Remove(filepath.Join(root, "hooks")))
	_, err := Build(root, OperatorSpec(time.Unix(0, 0), "dev"))
	assert.ErrorContains(t, err, "writable folder /hooks is not in")
	spec := OperatorSpec(time.Unix(0, 0), "dev")
	spec.User = "nonroot"
	_, err = Build(fixtureRoot(t, time.Now(), 0o600), spec)
	assert.EqualError(t, err, `user "nonroot": want numeric uid:gid`)
	assert.ErrorContains(t, run(nil, io.Discard), "usage: image -root DIR")
}
