// Command release writes openstack-sync's release (make release): for each platform an archive
// of the host binary and the development binary, an archive of the PDK's source, an archive of a
// Go module proxy holding the repository's two modules at the version (so `go get
// .../pdk@VERSION` and `go install .../cmd/openstack-sync@VERSION` work from it, offline, the way
// they will from the public proxy once the modules are published), and SHA256SUMS. The same
// commit and Go version give the same bytes: builds are -trimpath, static and stripped, archives
// carry no time but the commit's and sort their entries, module zips are the go command's own
// format (golang.org/x/mod/zip) of the tracked files.
//
//	go run ./hack/release --version v0.1.0 --out bin/release [--platforms linux/amd64,linux/arm64]
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// The repository's modules: the root module (the host, the conformance kit) and the PDK.
const (
	rootModule = "github.com/openstack-sync/openstack-sync"
	pdkModule  = rootModule + "/pdk"
)

func main() {
	version := flag.String("version", "", "the release's version, a semantic version such as v0.1.0 (required)")
	out := flag.String("out", "bin/release", "the folder to write the release to; it is emptied first")
	platforms := flag.String("platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "GOOS/GOARCH pairs to build the binaries for (none: only the PDK and modules archives)")
	flag.Parse()
	if err := release(".", *version, *out, strings.Split(*platforms, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func release(repo, version, out string, platforms []string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version {
		return fmt.Errorf("--version %q: want a canonical semantic version such as v0.1.0", version)
	}
	stamp, err := commitTime(repo)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var archives []string
	for _, p := range platforms {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		goos, goarch, ok := strings.Cut(p, "/")
		if !ok {
			return fmt.Errorf("--platforms: %q is not GOOS/GOARCH", p)
		}
		name, err := binaries(repo, version, out, goos, goarch, stamp)
		if err != nil {
			return err
		}
		archives = append(archives, name)
	}
	files, err := tracked(repo)
	if err != nil {
		return err
	}
	name := "openstack-sync-pdk-" + version + ".tar.gz"
	var pdk []entry
	for _, f := range files {
		if rel, ok := strings.CutPrefix(f, "pdk/"); ok {
			pdk = append(pdk, entry{name: "openstack-sync-pdk-" + version + "/" + rel, src: filepath.Join(repo, f), mode: 0o644})
		}
	}
	if err := writeTarGz(filepath.Join(out, name), pdk, stamp); err != nil {
		return err
	}
	archives = append(archives, name)
	name, err = proxy(repo, version, out, files, stamp)
	if err != nil {
		return err
	}
	archives = append(archives, name)
	return sums(out, archives)
}

// commitTime is HEAD's commit time: the only time the archives carry.
func commitTime(repo string) (time.Time, error) {
	out, err := exec.Command("git", "-C", repo, "log", "-1", "--format=%ct").Output()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the commit time: %w", err)
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(sec, 0).UTC(), nil
}

// tracked lists the repository's files as the release ships them: tracked, or new and not
// ignored (so a release of a working tree holds what its tests tested), sorted.
func tracked(repo string) ([]string, error) {
	out, err := exec.Command("git", "-C", repo, "ls-files", "-co", "--exclude-standard").Output()
	if err != nil {
		return nil, fmt.Errorf("listing the repository's files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if st, err := os.Lstat(filepath.Join(repo, f)); err == nil && st.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files, nil
}

// binaries builds the host and the development binary for one platform and archives them.
func binaries(repo, version, out, goos, goarch string, stamp time.Time) (string, error) {
	dir, err := os.MkdirTemp("", "openstack-sync-release-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	base := "openstack-sync-" + version + "-" + goos + "-" + goarch
	var entries []entry
	for _, cmd := range []string{"openstack-sync", "openstack-sync-dev"} {
		bin := filepath.Join(dir, cmd)
		if goos == "windows" {
			bin += ".exe"
		}
		build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -X main.version="+version,
			"-o", bin, "./host/cmd/"+cmd)
		build.Dir = repo
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch, "GOFLAGS=", "GOWORK=off")
		if b, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("building %s for %s/%s: %v\n%s", cmd, goos, goarch, err, b)
		}
		entries = append(entries, entry{name: base + "/" + filepath.Base(bin), src: bin, mode: 0o755})
	}
	for _, doc := range []string{"README.md", "docs/writing-plugins.md", "docs/pdk.md"} {
		entries = append(entries, entry{name: base + "/" + doc, src: filepath.Join(repo, doc), mode: 0o644})
	}
	name := base + ".tar.gz"
	return name, writeTarGz(filepath.Join(out, name), entries, stamp)
}

// proxy writes a Go module proxy (GOPROXY=file://...) holding the root module and the PDK at
// version, and archives it.
func proxy(repo, version, out string, files []string, stamp time.Time) (string, error) {
	dir, err := os.MkdirTemp("", "openstack-sync-goproxy-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	root := "openstack-sync-modules-" + version
	var entries []entry
	// The PDK first: the root module requires it, and its go.sum names the PDK zip's hash.
	sums := map[string][]byte{}
	for _, m := range []struct{ path, subdir string }{{pdkModule, "pdk"}, {rootModule, ""}} {
		gomod, gosum, err := released(repo, m.subdir, version, sums)
		if err != nil {
			return "", err
		}
		var mf []modzip.File
		for _, f := range files {
			rel := f
			if m.subdir != "" {
				var ok bool
				if rel, ok = strings.CutPrefix(f, m.subdir+"/"); !ok {
					continue
				}
			}
			if m.subdir == "" && inNestedModule(repo, f) {
				continue
			}
			switch rel {
			case "go.mod":
				mf = append(mf, file{path: rel, data: gomod})
			case "go.sum":
				mf = append(mf, file{path: rel, data: gosum})
			default:
				mf = append(mf, file{path: rel, src: filepath.Join(repo, f)})
			}
		}
		escaped, err := module.EscapePath(m.path)
		if err != nil {
			return "", err
		}
		at := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			return "", err
		}
		var zb bytes.Buffer
		if err := modzip.Create(&zb, module.Version{Path: m.path, Version: version}, mf); err != nil {
			return "", fmt.Errorf("the module zip of %s: %w", m.path, err)
		}
		if sums[m.path], err = sumLines(m.path, version, zb.Bytes(), gomod); err != nil {
			return "", err
		}
		mod := gomod
		info, _ := json.Marshal(map[string]string{"Version": version, "Time": stamp.Format(time.RFC3339)})
		for name, body := range map[string][]byte{version + ".zip": zb.Bytes(), version + ".mod": mod,
			version + ".info": info, "list": []byte(version + "\n")} {
			if err := os.WriteFile(filepath.Join(at, name), body, 0o644); err != nil {
				return "", err
			}
			entries = append(entries, entry{name: root + "/goproxy/" + escaped + "/@v/" + name, src: filepath.Join(at, name), mode: 0o644})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	name := root + ".tar.gz"
	return name, writeTarGz(filepath.Join(out, name), entries, stamp)
}

// inNestedModule reports whether a file of the repository belongs to a module of its own (a
// folder below the root holding a go.mod), which the root module's zip leaves out.
func inNestedModule(repo, f string) bool {
	for dir := filepath.Dir(f); dir != "." && dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(repo, dir, "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// released is a module's go.mod and go.sum as its release tag holds them: the other
// openstack-sync modules it requires at the release's version, with the checkout's replace
// lines into them dropped (go install PKG@VERSION refuses a module with replace lines, and a
// module required at a version resolves through the proxy), and go.sum naming their hashes.
// sums holds the go.sum lines of the modules written before.
func released(repo, subdir, version string, sums map[string][]byte) (gomod, gosum []byte, err error) {
	path := filepath.Join(repo, subdir, "go.mod")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := modfile.Parse(path, raw, nil)
	if err != nil {
		return nil, nil, err
	}
	gosum, err = os.ReadFile(filepath.Join(repo, subdir, "go.sum"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	for _, r := range f.Require {
		if r.Mod.Path != rootModule && r.Mod.Path != pdkModule {
			continue
		}
		lines, ok := sums[r.Mod.Path]
		if !ok {
			return nil, nil, fmt.Errorf("%s requires %s, which the release writes after it", f.Module.Mod.Path, r.Mod.Path)
		}
		if err := f.AddRequire(r.Mod.Path, version); err != nil {
			return nil, nil, err
		}
		if err := f.DropReplace(r.Mod.Path, ""); err != nil {
			return nil, nil, err
		}
		gosum = append(gosum, lines...)
	}
	for _, r := range f.Replace {
		if r.Old.Path == rootModule || r.Old.Path == pdkModule {
			return nil, nil, fmt.Errorf("%s replaces %s without requiring it", f.Module.Mod.Path, r.Old.Path)
		}
	}
	f.Cleanup()
	if gomod, err = f.Format(); err != nil {
		return nil, nil, err
	}
	return gomod, sortedLines(gosum), nil
}

// sumLines are a module's go.sum lines: the hashes of its zip and of its go.mod.
func sumLines(path, version string, zipBytes, gomod []byte) ([]byte, error) {
	tmp, err := os.CreateTemp("", "openstack-sync-module-*.zip")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(zipBytes); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	zh, err := dirhash.HashZip(tmp.Name(), dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	mh, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "%s %s %s\n%s %s/go.mod %s\n", path, version, zh, path, version, mh), nil
}

// sortedLines sorts a go.sum's lines, as the go command writes them.
func sortedLines(b []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	return []byte(strings.Join(slices.Compact(lines), "\n") + "\n")
}

// file is a file of a module zip: a file of the checkout, or data written for the release.
type file struct {
	path, src string
	data      []byte
}

func (f file) Path() string { return f.path }

func (f file) Lstat() (fs.FileInfo, error) {
	if f.data != nil {
		return dataInfo{name: filepath.Base(f.path), size: int64(len(f.data))}, nil
	}
	return os.Lstat(f.src)
}

func (f file) Open() (io.ReadCloser, error) {
	if f.data != nil {
		return io.NopCloser(bytes.NewReader(f.data)), nil
	}
	return os.Open(f.src)
}

// dataInfo describes a file written for the release.
type dataInfo struct {
	name string
	size int64
}

func (d dataInfo) Name() string       { return d.name }
func (d dataInfo) Size() int64        { return d.size }
func (d dataInfo) Mode() fs.FileMode  { return 0o644 }
func (d dataInfo) ModTime() time.Time { return time.Time{} }
func (d dataInfo) IsDir() bool        { return false }
func (d dataInfo) Sys() any           { return nil }

// entry is a file of an archive.
type entry struct {
	name, src string
	mode      int64
}

// writeTarGz writes entries, in order, into a gzipped tar whose only time is stamp and whose
// owners are root, so the same inputs give the same bytes.
func writeTarGz(path string, entries []entry, stamp time.Time) error {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		body, err := os.ReadFile(e.src)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(body)), ModTime: stamp, Typeflag: tar.TypeReg,
			Uname: "root", Gname: "root", Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(body); err != nil {
			return err
		}
	}
	if err := errors.Join(tw.Close(), gz.Close()); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// sums writes SHA256SUMS, in sha256sum's format, over the archives.
func sums(out string, archives []string) error {
	slices.Sort(archives)
	var b strings.Builder
	for _, a := range archives {
		body, err := os.ReadFile(filepath.Join(out, a))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(sum[:]), a)
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(b.String()), 0o644)
}

// hostPlatform is the machine's GOOS/GOARCH.
func hostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }
