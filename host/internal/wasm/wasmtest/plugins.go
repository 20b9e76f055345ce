package wasmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Plugins returns the directory of the repository's compiled plugins: $OPENSTACK_SYNC_PLUGINS_DIR
// (make plugins' bin/plugins) when set, else hack/build-plugins.sh's build into a temporary
// directory kept across runs (it skips plugins whose inputs did not change). A lock file
// serialises the build, since go test runs several test packages that need it at once. The
// directory is one per checkout: two worktrees sharing it would load each other's builds.
func Plugins(repoRoot string) (string, error) {
	if dir := os.Getenv("OPENSTACK_SYNC_PLUGINS_DIR"); dir != "" {
		return dir, nil
	}
	sum := sha256.Sum256([]byte(repoRoot))
	dir := filepath.Join(os.TempDir(), "openstack-sync-test-plugins-"+hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(repoRoot, "hack", "build-plugins.sh"), dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the plugins: %w", err)
	}
	return dir, nil
}
