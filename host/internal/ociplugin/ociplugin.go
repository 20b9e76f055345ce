// Package ociplugin stores a plugin module in an OCI registry as an artifact and fetches it back
// by digest, so a plugin ships like an image: one wasm layer, its metadata as annotations.
//
// The artifact is an OCI image manifest (schema 2) with artifactType ArtifactType, the empty
// config (application/vnd.oci.empty.v1+json, "{}") and one layer of media type LayerMediaType
// holding the module's bytes, as the OCI 1.1 artifact guidance describes. Nothing in it depends
// on the time or the machine, so the same module always gives the same manifest digest.
package ociplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of the artifact.
const (
	// LayerMediaType is the wasm module layer, as the CNCF wasm OCI artifact layout names it.
	LayerMediaType types.MediaType = "application/vnd.wasm.content.layer.v1+wasm"
	// ArtifactType marks a manifest as an openstack-sync plugin.
	ArtifactType = "application/vnd.openstack-sync.plugin.v1"
	emptyConfig  = types.MediaType("application/vnd.oci.empty.v1+json")
)

// MaxModuleBytes bounds what pull downloads: the host loads no larger module (host/internal/wasm,
// 16 MiB), and a registry must not be able to fill the cache volume.
const MaxModuleBytes = 16 << 20

// Bounds on a registry's answers, so that a stalling, looping or oversized registry ends a pull
// (and the chart's init container, which runs it) with an error instead of holding it for ever.
const (
	// DefaultTimeout bounds a whole pull or push (Options.Timeout).
	DefaultTimeout = 5 * time.Minute
	// responseHeaderTimeout bounds the wait for a response's headers.
	responseHeaderTimeout = 30 * time.Second
	// maxRedirects is net/http's own limit, which go-containerregistry's redirect check drops.
	maxRedirects = 10
	// MaxManifestBytes bounds a manifest: go-containerregistry reads it whole and decodes it (a
	// 90 MB manifest cost 678 MB before it was refused); the OCI distribution spec asks
	// registries to accept at least 4 MiB, and a plugin's is a few hundred bytes.
	MaxManifestBytes = 4 << 20
)

// Annotation keys. The org.opencontainers.image.* ones are the standard keys registries show.
const (
	AnnotationTitle       = "org.opencontainers.image.title"
	AnnotationVersion     = "org.opencontainers.image.version"
	AnnotationDescription = "org.opencontainers.image.description"
	AnnotationSource      = "org.opencontainers.image.source"
	AnnotationName        = "io.openstack-sync.plugin.name"
	AnnotationABIVersion  = "io.openstack-sync.plugin.abi-version"
	AnnotationEnvPrefix   = "io.openstack-sync.plugin.env-prefix"
)

// Metadata is what push records about the module in the manifest's annotations.
type Metadata struct {
	Name, Version, Description, Source, EnvPrefix string
	ABIVersion                                    int
}

func (m Metadata) annotations(file string) map[string]string {
	a := map[string]string{AnnotationTitle: filepath.Base(file), AnnotationName: m.Name,
		AnnotationABIVersion: strconv.Itoa(m.ABIVersion), AnnotationEnvPrefix: m.EnvPrefix}
	for k, v := range map[string]string{AnnotationVersion: m.Version, AnnotationDescription: m.Description, AnnotationSource: m.Source} {
		if v != "" {
			a[k] = v
		}
	}
	return a
}

// Options reach the registry.
type Options struct {
	// Insecure speaks plain HTTP to the registry (loopback and test registries).
	Insecure bool
	// Transport replaces the HTTP transport (tests); nil is the default one. The bounds above
	// apply to it either way.
	Transport http.RoundTripper
	// Timeout bounds the whole pull or push; 0 is DefaultTimeout.
	Timeout time.Duration
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o Options) nameOptions() []name.Option {
	if o.Insecure {
		return []name.Option{name.Insecure, name.StrictValidation}
	}
	return []name.Option{name.StrictValidation}
}

// remoteOptions also returns the transport, which records whether any request timed out.
func (o Options) remoteOptions(ctx context.Context) ([]remote.Option, *bounded) {
	base := o.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = min(responseHeaderTimeout, o.timeout())
		t.TLSHandshakeTimeout = min(10*time.Second, o.timeout())
		base = t
	}
	b := &bounded{next: base}
	return []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithTransport(b)}, b
}

// bounded enforces the redirect limit and the manifest bound on every request go-containerregistry
// makes: its HTTP client follows redirects without a limit (a same-host loop was followed 561,365
// times in a minute) and reads manifests whole.
type bounded struct {
	next http.RoundTripper
	// timedOut: a request ended by a timeout. go-containerregistry's registry ping joins the
	// errors of its https and http attempts, and the first net.Error in them is the https
	// refusal of a plain-HTTP registry, which is no timeout; without this record a wait for
	// headers that ended just before the pull's own deadline was reported as a bare error.
	timedOut atomic.Bool
}

func (b *bounded) RoundTrip(req *http.Request) (*http.Response, error) {
	hops := 0
	for r := req.Response; r != nil && r.Request != nil; r = r.Request.Response {
		if hops++; hops > maxRedirects {
			return nil, fmt.Errorf("%s: more than %d redirects", req.URL.Redacted(), maxRedirects)
		}
	}
	resp, err := b.next.RoundTrip(req)
	var ne net.Error
	if err != nil && (errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)) {
		b.timedOut.Store(true)
	}
	if err != nil || !strings.Contains(req.URL.Path, "/manifests/") {
		return resp, err
	}
	if resp.ContentLength > MaxManifestBytes {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: the manifest is %d bytes, over the limit of %d", req.URL.Redacted(), resp.ContentLength, MaxManifestBytes)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: MaxManifestBytes, url: req.URL.Redacted()}
	return resp, nil
}

// limitedBody fails a read past its limit rather than ending the body early, so a manifest cut
// short is never mistaken for a whole one.
type limitedBody struct {
	io.ReadCloser
	left int64
	url  string
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := l.ReadCloser.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%s: the manifest is over the limit of %d bytes", l.url, MaxManifestBytes)
		}
	}
	if int64(len(p)) > l.left {
		p = p[:max(l.left, 1)]
	}
	n, err := l.ReadCloser.Read(p)
	l.left -= int64(n)
	return n, err
}

// Pushed is the result of Push.
type Pushed struct {
	// Ref is the pushed reference pinned by its manifest digest: what the chart's
	// plugin.source takes.
	Ref string
	// Digest is the manifest's digest; ModuleDigest the module's own sha256 (what the host pins
	// with <PREFIX>_PLUGIN_SHA256).
	Digest, ModuleDigest string
}

// Push stores module (the bytes of file) under ref, a tag or a repository (meaning :latest).
func Push(ctx context.Context, file string, module []byte, m Metadata, ref string, o Options) (Pushed, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	r, err := name.ParseReference(ref, o.nameOptions()...)
	if err != nil {
		return Pushed{}, fmt.Errorf("reference %q: %w", ref, err)
	}
	if _, ok := r.(name.Digest); ok {
		return Pushed{}, fmt.Errorf("reference %q names a digest; push to a tag (the digest is the result)", ref)
	}
	img, err := newArtifact(module, m.annotations(file))
	if err != nil {
		return Pushed{}, err
	}
	opts, _ := o.remoteOptions(ctx)
	if err := remote.Write(r, img, opts...); err != nil {
		return Pushed{}, fmt.Errorf("pushing to %s: %w", r, err)
	}
	d, err := img.Digest()
	if err != nil {
		return Pushed{}, err
	}
	sum := sha256.Sum256(module)
	return Pushed{Ref: r.Context().Digest(d.String()).String(), Digest: d.String(),
		ModuleDigest: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// Pulled is the result of Pull.
type Pulled struct {
	// Ref is the reference pulled, pinned by the manifest digest.
	Ref string
	// ModuleDigest is the module's sha256.
	ModuleDigest string
	Annotations  map[string]string
}

// ErrNotPinned refuses a pull by tag where a digest was required.
var ErrNotPinned = errors.New("not pinned by digest")

// Pull fetches the plugin at ref into the file out (written whole or not at all). With
// requireDigest a reference without @sha256:... is refused: a tag can be moved to other bytes.
// go-containerregistry checks the manifest against a pinned digest and each blob against the
// manifest; Pull checks the module's sha256 again, and against moduleDigest when it is set
// ("sha256:<hex>" or "<hex>"), before writing it: a refused module never replaces what out holds.
func Pull(ctx context.Context, ref, out string, requireDigest bool, moduleDigest string, o Options) (Pulled, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout())
	defer cancel()
	r, err := name.ParseReference(ref, o.nameOptions()...)
	if err != nil {
		return Pulled{}, fmt.Errorf("reference %q: %w", ref, err)
	}
	if _, ok := r.(name.Digest); !ok && requireDigest {
		return Pulled{}, fmt.Errorf("reference %q is %w: add @sha256:<manifest digest> (plugin push prints it)", ref, ErrNotPinned)
	}
	opts, transport := o.remoteOptions(ctx)
	img, err := remote.Image(r, opts...)
	if err != nil {
		return Pulled{}, fmt.Errorf("pulling %s: %w", r, timedOut(ctx, err, o, transport))
	}
	mf, err := img.Manifest()
	if err != nil {
		return Pulled{}, fmt.Errorf("pulling %s: %w", r, err)
	}
	if mf.ArtifactType != ArtifactType || len(mf.Layers) != 1 || mf.Layers[0].MediaType != LayerMediaType {
		return Pulled{}, fmt.Errorf("%s is not an openstack-sync plugin: want artifactType %s with one %s layer, have artifactType %q with %d layer(s)",
			r, ArtifactType, LayerMediaType, mf.ArtifactType, len(mf.Layers))
	}
	desc := mf.Layers[0]
	if desc.Size > MaxModuleBytes {
		return Pulled{}, fmt.Errorf("%s: the module is %d bytes, over the limit of %d", r, desc.Size, MaxModuleBytes)
	}
	layer, err := img.LayerByDigest(desc.Digest)
	if err != nil {
		return Pulled{}, fmt.Errorf("pulling %s: %w", r, err)
	}
	rc, err := layer.Compressed()
	if err != nil {
		return Pulled{}, fmt.Errorf("pulling %s: %w", r, err)
	}
	defer rc.Close()
	module, err := io.ReadAll(io.LimitReader(rc, desc.Size+1))
	if err != nil {
		return Pulled{}, fmt.Errorf("pulling %s: %w", r, timedOut(ctx, err, o, transport))
	}
	sum := sha256.Sum256(module)
	got := "sha256:" + hex.EncodeToString(sum[:])
	if int64(len(module)) != desc.Size || got != desc.Digest.String() {
		return Pulled{}, fmt.Errorf("pulling %s: the module is %d bytes with digest %s, the manifest says %d bytes with %s",
			r, len(module), got, desc.Size, desc.Digest)
	}
	d, err := img.Digest()
	if err != nil {
		return Pulled{}, err
	}
	pulled := Pulled{Ref: r.Context().Digest(d.String()).String(), ModuleDigest: got, Annotations: mf.Annotations}
	if want := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(moduleDigest), "sha256:")); want != "" && "sha256:"+want != got {
		return pulled, fmt.Errorf("%s holds a module with digest %s, not the required sha256:%s: %w", pulled.Ref, got, want, ErrOtherModule)
	}
	if err := writeFile(out, module); err != nil {
		return Pulled{}, err
	}
	return pulled, nil
}

// ErrOtherModule is a pull whose module is not the one required.
var ErrOtherModule = errors.New("another module")

// timedOut names the pull's own deadline when it, or the wait for a response's headers within it,
// ended err.
func timedOut(ctx context.Context, err error, o Options, transport *bounded) error {
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s (plugin pull --timeout): %w", o.timeout(), err)
	case errors.As(err, &ne) && ne.Timeout() || transport.timedOut.Load():
		return fmt.Errorf("no response within %s: %w", min(responseHeaderTimeout, o.timeout()), err)
	}
	return err
}

// DefaultFile is where pull writes when not told: the repository's last segment plus .wasm,
// in the current directory.
func DefaultFile(ref string, o Options) (string, error) {
	r, err := name.ParseReference(ref, o.nameOptions()...)
	if err != nil {
		return "", fmt.Errorf("reference %q: %w", ref, err)
	}
	return path.Base(r.Context().RepositoryStr()) + ".wasm", nil
}

// writeFile writes through a temporary file in the same directory, so a reader (the hook, on
// a shared cache volume) never sees half a module.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// artifact is the plugin as a v1.Image: go-containerregistry derives the rest (digest, layers)
// from these four methods.
type artifact struct {
	manifest []byte
	layer    v1.Layer
}

var emptyJSON = []byte("{}")

func newArtifact(module []byte, annotations map[string]string) (v1.Image, error) {
	layer := static.NewLayer(module, LayerMediaType)
	ld, err := layer.Digest()
	if err != nil {
		return nil, err
	}
	cd, _, err := v1.SHA256(bytes.NewReader(emptyJSON))
	if err != nil {
		return nil, err
	}
	mf := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: ArtifactType,
		Config:      v1.Descriptor{MediaType: emptyConfig, Size: int64(len(emptyJSON)), Digest: cd, Data: emptyJSON},
		Layers:      []v1.Descriptor{{MediaType: LayerMediaType, Size: int64(len(module)), Digest: ld}},
		Annotations: annotations}
	raw, err := json.Marshal(mf)
	if err != nil {
		return nil, err
	}
	return partial.CompressedToImage(&artifact{manifest: raw, layer: layer})
}

func (a *artifact) RawConfigFile() ([]byte, error)      { return emptyJSON, nil }
func (a *artifact) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }
func (a *artifact) RawManifest() ([]byte, error)        { return a.manifest, nil }

func (a *artifact) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if d, _ := a.layer.Digest(); d == h {
		return a.layer, nil
	}
	return nil, fmt.Errorf("the plugin artifact has no blob %s", h)
}
