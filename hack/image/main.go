// Command image turns a root file system folder into the operator's OCI image without a container
// engine (go-containerregistry), reproducibly: the same folder gives the same digest whatever the
// files' times, owners or the order the file system lists them in. hack/build-image.sh assembles
// the folder (shell-operator, the host, the plugins with SHA256SUMS, busybox and CA certificates
// from pinned Debian packages) and runs this. It is a build tool, not part of the product.
//
//	go run ./hack/image -root DIR [-o LAYOUT_DIR] [-tag REF] [-push REF] [-insecure]
//
// It prints the manifest digest. -o writes an OCI image layout (the manifest byte for byte, so the
// digest survives); -push writes the image to a registry (-insecure: plain HTTP, e.g. a registry on
// loopback).
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec is what the image runs, besides its files.
type Spec struct {
	Entrypoint []string
	Cmd        []string
	// User is uid:gid; the folders in Writable belong to it.
	User       string
	Env        []string
	WorkingDir string
	Labels     map[string]string
	// Writable are folders (image paths, e.g. /hooks) the user may write without a volume.
	Writable []string
	// Created stamps the config and the history (SOURCE_DATE_EPOCH), so a rebuild is identical.
	Created time.Time
}

// OperatorSpec is the operator image's configuration: shell-operator starts as the entrypoint, the
// way the chart's pod runs it, as an unprivileged user.
func OperatorSpec(created time.Time, version string) Spec {
	return Spec{
		Entrypoint: []string{"/usr/local/bin/shell-operator"},
		Cmd:        []string{"start"},
		User:       "65532:65532",
		Env: []string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"SHELL_OPERATOR_HOOKS_DIR=/hooks",
			"LOG_TYPE=json",
			"OPENSTACK_SYNC_CACHE_DIR=/var/cache/openstack-sync",
			"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
		},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.title":   "openstack-sync-operator",
			"org.opencontainers.image.source":  "https://github.com/openstack-sync/openstack-sync",
			"org.opencontainers.image.version": version,
		},
		Writable: []string{"/hooks", "/tmp", "/var/cache/openstack-sync"},
		Created:  created,
	}
}

// Build makes the image of root's files and spec.
func Build(root string, spec Spec) (v1.Image, error) {
	uid, gid, err := parseUser(spec.User)
	if err != nil {
		return nil, err
	}
	data, err := layerTar(root, spec.Writable, uid, gid, spec.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: "hack/build-image.sh", Comment: "the operator's files"}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Created = v1.Time{Time: spec.Created}
	cfg.Config = v1.Config{Entrypoint: spec.Entrypoint, Cmd: spec.Cmd, User: spec.User, Env: spec.Env,
		WorkingDir: spec.WorkingDir, Labels: spec.Labels}
	return mutate.ConfigFile(img, cfg)
}

func parseUser(u string) (uid, gid int, err error) {
	a, b, ok := strings.Cut(u, ":")
	if ok {
		if uid, err = strconv.Atoi(a); err == nil {
			gid, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || uid < 0 || gid < 0 {
		return 0, 0, fmt.Errorf("user %q: want numeric uid:gid", u)
	}
	return uid, gid, nil
}

// layerTar is root as one tar stream with everything that varies between builds fixed: entries in
// lexical order, times at created, owner root (the Writable folders: the user), modes reduced to
// 0755/0644 (directories and executables / other files; /tmp is 1777).
func layerTar(root string, writable []string, uid, gid int, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	own := map[string]bool{}
	for _, w := range writable {
		own[strings.Trim(w, "/")] = true
	}
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		h := &tar.Header{Name: rel, ModTime: created, Format: tar.FormatPAX}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, target, 0o777
		case info.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, rel+"/", 0o755
			if rel == "tmp" {
				h.Mode = 0o1777
			}
		case info.Mode().IsRegular():
			h.Typeflag, h.Size, h.Mode = tar.TypeReg, info.Size(), 0o644
			if info.Mode()&0o111 != 0 {
				h.Mode = 0o755
			}
		default:
			return fmt.Errorf("%s: only files, folders and symlinks belong in an image", path)
		}
		if own[rel] {
			h.Uid, h.Gid = uid, gid
		}
		seen[rel] = true
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeReg {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for w := range own {
		if !seen[w] {
			return nil, fmt.Errorf("writable folder /%s is not in %s", w, root)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	root := fs.String("root", "", "the image's root file system folder (required)")
	out := fs.String("o", "", "write the image into this OCI image layout folder (created or appended to)")
	tag := fs.String("tag", "ghcr.io/openstack-sync/openstack-sync-operator:dev", "the reference the layout records (org.opencontainers.image.ref.name)")
	push := fs.String("push", "", "also push the image to this reference (registry/repository:tag)")
	insecure := fs.Bool("insecure", false, "talk plain HTTP to the -push registry")
	version := fs.String("version", "dev", "the org.opencontainers.image.version label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *root == "" || fs.NArg() > 0 {
		return errors.New("usage: image -root DIR [-o image.tar] [-tag REF] [-push REF [-insecure]] [-version V]")
	}
	created := time.Unix(0, 0).UTC()
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		s, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds", e)
		}
		created = time.Unix(s, 0).UTC()
	}
	img, err := Build(*root, OperatorSpec(created, *version))
	if err != nil {
		return err
	}
	if *out != "" {
		p, err := layout.FromPath(*out)
		if err != nil {
			if p, err = layout.Write(*out, empty.Index); err != nil {
				return err
			}
		}
		if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": *tag})); err != nil {
			return err
		}
	}
	if *push != "" {
		var opts []name.Option
		if *insecure {
			opts = append(opts, name.Insecure)
		}
		ref, err := name.ParseReference(*push, opts...)
		if err != nil {
			return err
		}
		if err := remote.Write(ref, img); err != nil {
			return fmt.Errorf("push %s: %w", *push, err)
		}
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, d)
	return nil
}
