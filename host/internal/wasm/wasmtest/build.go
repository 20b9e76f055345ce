// Package wasmtest gives tests real guest modules: Go plugins built from source with the standard
// toolchain (cached across runs, keyed by their sources and the Go version), and tiny modules
// encoded byte by byte for the structural cases no Go compiler would produce.
package wasmtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"
)

var buildMu sync.Mutex

// BuildGuest builds the Go main package dir (inside the module rooted at moduleDir) as a wasip1
// c-shared module and returns the .wasm path. Builds are cached under the user cache directory,
// keyed by every file of moduleDir and of each extra source directory, so an unchanged guest is
// not rebuilt and a changed pdk is.
func BuildGuest(tb testing.TB, moduleDir, pkg string, extraSources ...string) string {
	tb.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	moduleDir, err := filepath.Abs(moduleDir)
	if err != nil {
		tb.Fatal(err)
	}
	key, err := sourceKey(append([]string{moduleDir}, extraSources...))
	if err != nil {
		tb.Fatalf("hashing guest sources: %v", err)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	out := filepath.Join(base, "openstack-sync-test", "guests", key, filepath.Base(pkg)+".wasm")
	if _, err := os.Stat(out); err == nil {
		return out
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		tb.Fatal(err)
	}
	tmp := out + ".tmp"
	goTool, err := exec.LookPath("go")
	if err != nil {
		tb.Fatalf("building guest %s: the go command is not on PATH: %v", pkg, err)
	}
	cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-trimpath", "-o", tmp, "./"+pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building guest %s in %s: %v\n%s", pkg, moduleDir, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		tb.Fatal(err)
	}
	pruneStale(filepath.Dir(filepath.Dir(out)), filepath.Base(filepath.Dir(out)))
	return out
}

// pruneStale removes guest builds of other source versions not used for a week, so the cache
// does not grow by a few MB with every edit of a guest or of the pdk.
func pruneStale(dir, keep string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || e.Name() == keep || time.Since(info.ModTime()) < 7*24*time.Hour {
			continue
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

func sourceKey(dirs []string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version())
	for _, dir := range dirs {
		var files []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (filepath.Ext(p) == ".go" || filepath.Base(p) == "go.mod" || filepath.Base(p) == "go.sum") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s %d\n", f, len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
