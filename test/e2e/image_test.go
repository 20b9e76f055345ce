//go:build e2e

package e2e

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestImage checks the operator image hack/build-image.sh built for this run (E2E_IMAGE_LAYOUT,
// E2E_IMAGE_DIGEST): pushed to a registry started here (go-containerregistry's) and pulled back by
// digest, its entrypoint, user and file list are the ones the chart relies on; unpacked, the
// chart's init container script and then the entrypoint run from the image's file system (chroot,
// as the image's user) against the real API server and cloud, and a CR ends Synced.
func TestImage(t *testing.T) {
	h := need(t)
	layoutDir, digest := os.Getenv("E2E_IMAGE_LAYOUT"), os.Getenv("E2E_IMAGE_DIGEST")
	if layoutDir == "" || digest == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("E2E_IMAGE_LAYOUT and E2E_IMAGE_DIGEST unset: hack/e2e.sh builds the image")
		}
		t.Skip("E2E_IMAGE_LAYOUT unset (hack/e2e.sh builds the image)")
	}
	ctx := context.Background()
	h.stopOperator()

	// Push to a local registry and pull back by digest.
	p, err := layout.FromPath(layoutDir)
	require.NoError(t, err)
	hash, err := v1.NewHash(digest)
	require.NoError(t, err)
	built, err := p.Image(hash)
	require.NoError(t, err)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/openstack-sync-operator"
	tag, err := name.ParseReference(repo+":e2e", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(tag, built))
	byDigest, err := name.ParseReference(repo+"@"+digest, name.Insecure)
	require.NoError(t, err)
	img, err := remote.Image(byDigest)
	require.NoError(t, err)
	got, err := img.Digest()
	require.NoError(t, err)
	require.Equal(t, digest, got.String(), "the registry serves the image by its digest")

	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/usr/local/bin/shell-operator"}, cfg.Config.Entrypoint)
	assert.Equal(t, []string{"start"}, cfg.Config.Cmd)
	assert.Equal(t, "65532:65532", cfg.Config.User, "an unprivileged user")
	assert.Equal(t, "amd64", cfg.Architecture)

	root := filepath.Join(h.env.WorkDir, "image-rootfs")
	files := unpack(t, img, root)
	for _, want := range []string{"usr/local/bin/shell-operator", "usr/local/bin/openstack-sync", "bin/sh", "bin/busybox",
		"usr/bin/sha256sum", "usr/bin/cut", "etc/ssl/certs/ca-certificates.crt", "etc/passwd", "plugins/SHA256SUMS",
		"hooks", "tmp", "var/cache/openstack-sync"} {
		assert.Contains(t, files, want)
	}
	var top []string
	for _, f := range files {
		if d, _, _ := strings.Cut(f, "/"); !slices.Contains(top, d) {
			top = append(top, d)
		}
	}
	assert.ElementsMatch(t, []string{"bin", "etc", "hooks", "plugins", "sbin", "tmp", "usr", "var"}, top, "nothing else at the top")
	sums := readSums(t, filepath.Join(root, "plugins/SHA256SUMS"))
	wasm, _ := filepath.Glob(filepath.Join(root, "plugins/*.wasm"))
	require.NotEmpty(t, wasm)
	for _, f := range wasm {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		sum := sha256.Sum256(body)
		assert.Equal(t, hex.EncodeToString(sum[:]), sums[filepath.Base(f)], "SHA256SUMS lists %s", filepath.Base(f))
	}

	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("running the image's file system needs root (chroot)")
		}
		t.Skip("running the image's file system needs root (chroot)")
	}
	// An operator installs the chart with the image's own plugin paths and the digests its
	// SHA256SUMS lists; the Deployment's pod spec is then run from the unpacked image.
	const ns = "openstack-sync-e2e-image"
	r := h.installReleaseValues(t, ctx, "img", ns, fmt.Sprintf(`plugins: {ironicRunbooks: true}
pluginData:
  ironicRunbooks:
    plugin: {sha256: %q}
    hook: {env: {PRUNE: false, READY_RETRIES: 3, READY_DELAY: 1}}
`, sums["ironic-runbooks.wasm"]))
	cr := renamed(h.examples.crs[runbooks.kind], "-image", "spec", "runbookName", "_IMAGE")
	clean := func() { assert.NoError(t, h.cloud.deleteRunbook(ctx, osName(cr))) }
	clean()
	t.Cleanup(clean)

	// The container runtime's part: the device nodes every container gets (old-style numbers:
	// major and minor are both below 256).
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dev"), 0o755))
	for _, dev := range []struct {
		name         string
		major, minor uint32
	}{{"null", 1, 3}, {"zero", 1, 5}, {"random", 1, 8}, {"urandom", 1, 9}} {
		require.NoError(t, syscall.Mknod(filepath.Join(root, "dev", dev.name), syscall.S_IFCHR|0o666, int(dev.major<<8|dev.minor)))
	}
	kubeconfig, err := os.ReadFile(r.kubeconfig)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(root, "tmp/kubeconfig"), kubeconfig, 0o644))
	d, err := h.kube.AppsV1().Deployments(ns).Get(ctx, r.fullname, metav1.GetOptions{})
	require.NoError(t, err)
	spec := d.Spec.Template.Spec
	port, err := freePort()
	require.NoError(t, err)
	// The kubelet's part: the downward API, the service account (here a kubeconfig file), and the
	// listen address (loopback: this pod shares the test machine's network).
	local := map[string]string{"POD_NAMESPACE": ns, "KUBECONFIG": "/tmp/kubeconfig", "KUBE_CONFIG": "/tmp/kubeconfig",
		"SHELL_OPERATOR_LISTEN_ADDRESS": "127.0.0.1", "SHELL_OPERATOR_LISTEN_PORT": strconv.Itoa(port)}
	asImageUser := &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: 65532, Gid: 65532}, Setpgid: true, Pdeathsig: syscall.SIGKILL}

	init := spec.InitContainers[0]
	initCmd := exec.Command(init.Command[0], append(init.Command[1:], init.Args...)...)
	initCmd.Env, initCmd.Dir, initCmd.SysProcAttr = imageEnv(cfg.Config.Env, init, local), "/", asImageUser
	out, err := initCmd.CombinedOutput()
	require.NoError(t, err, "the init container's script from the image:\n%s", out)
	assert.Contains(t, string(out), "verify-plugins: ok")
	require.FileExists(t, filepath.Join(root, "hooks/ironic-runbooks"), "the init container wrote the hook wrapper")

	c := spec.Containers[0]
	require.Empty(t, c.Command, "the chart runs the image's entrypoint")
	logPath := filepath.Join(h.env.WorkDir, "image-shell-operator.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	op := exec.Command(cfg.Config.Entrypoint[0], append(cfg.Config.Entrypoint[1:], cfg.Config.Cmd...)...)
	op.Env = imageEnv(cfg.Config.Env, c, local)
	op.Dir, op.Stdout, op.Stderr, op.SysProcAttr = "/", logFile, logFile, asImageUser
	require.NoError(t, op.Start())
	done := make(chan struct{})
	go func() { _ = op.Wait(); logFile.Close(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-op.Process.Pid, syscall.SIGKILL)
		<-done
		if t.Failed() {
			fmt.Fprintf(os.Stderr, "==== last lines of %s\n%s\n", logPath, tail(logPath, 80))
		}
	})

	createIn(t, ctx, h, ns, cr)
	waitSyncedIn(t, ctx, h, ns, cr.GetName(), 3*time.Minute, done)
	rb, err := h.cloud.runbook(ctx, osName(cr))
	require.NoError(t, err)
	assert.NotNil(t, rb, "the image's hook created runbook %s", osName(cr))
}

// imageEnv is what a container of the image sees: the image's environment, overridden by the
// container's (the test machine's PATH and HOME stay out: they mean nothing in the image).
func imageEnv(image []string, c corev1.Container, local map[string]string) []string {
	env := slices.Clone(image)
	for _, kv := range containerEnv(c, local) {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return env
}

// unpack writes the image's flattened file system under root, owners included, and lists it.
func unpack(t *testing.T, img v1.Image, root string) []string {
	t.Helper()
	require.NoError(t, os.RemoveAll(root))
	require.NoError(t, os.MkdirAll(root, 0o755))
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		hd, err := tr.Next()
		if err == io.EOF {
			return names
		}
		require.NoError(t, err)
		rel := strings.TrimSuffix(filepath.Clean(hd.Name), "/")
		require.False(t, strings.HasPrefix(rel, ".."), "entry %s escapes the root", hd.Name)
		names = append(names, rel)
		path := filepath.Join(root, rel)
		switch hd.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(path, 0o755))
		case tar.TypeSymlink:
			require.NoError(t, os.Symlink(hd.Linkname, path))
			continue
		case tar.TypeReg:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
			require.NoError(t, err)
			_, err = io.Copy(f, tr)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		default:
			t.Fatalf("unexpected entry type %c for %s", hd.Typeflag, hd.Name)
		}
		require.NoError(t, os.Chmod(path, hd.FileInfo().Mode()))
		if os.Geteuid() == 0 {
			require.NoError(t, os.Lchown(path, hd.Uid, hd.Gid))
		}
	}
}

func readSums(t *testing.T, path string) map[string]string {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		require.True(t, ok, "SHA256SUMS line %q", sc.Text())
		out[file] = sum
	}
	return out
}
