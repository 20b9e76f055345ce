package ociplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startRegistry serves go-containerregistry's registry on a loopback port; tamper, when set,
// may rewrite a response body (a registry or proxy serving other bytes than it was given).
func startRegistry(t *testing.T, tamper func(r *http.Request, body []byte) []byte) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h := http.Handler(reg)
	if tamper != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			reg.ServeHTTP(rec, r)
			body := tamper(r, rec.Body.Bytes())
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

var meta = Metadata{Name: "neutron-address-scopes", Version: "0.3.1", Description: "address scopes",
	Source: "https://example.org/scopes", EnvPrefix: "NEUTRON_ADDRESS_SCOPE", ABIVersion: 1}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestPushThenPullByDigest(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t, nil)
	module := []byte("\x00asm\x01\x00\x00\x00 pretend module")
	pushed, err := Push(ctx, "dir/scopes.wasm", module, meta, host+"/plugins/scopes:0.3.1", Options{})
	require.NoError(t, err)
	assert.Equal(t, host+"/plugins/scopes@"+pushed.Digest, pushed.Ref)
	assert.Equal(t, digestOf(module), pushed.ModuleDigest)

	// The same module gives the same manifest: nothing depends on the time or the machine.
	again, err := Push(ctx, "elsewhere/scopes.wasm", module, meta, host+"/plugins/scopes:other", Options{})
	require.NoError(t, err)
	assert.Equal(t, pushed.Digest, again.Digest)

	out := filepath.Join(t.TempDir(), "scopes.wasm")
	pulled, err := Pull(ctx, pushed.Ref, out, true, pushed.ModuleDigest, Options{})
	require.NoError(t, err)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, module, got)
	assert.Equal(t, pushed.Ref, pulled.Ref)
	assert.Equal(t, pushed.ModuleDigest, pulled.ModuleDigest)
	assert.Equal(t, map[string]string{AnnotationTitle: "scopes.wasm", AnnotationName: "neutron-address-scopes",
		AnnotationVersion: "0.3.1", AnnotationDescription: "address scopes", AnnotationSource: "https://example.org/scopes",
		AnnotationABIVersion: "1", AnnotationEnvPrefix: "NEUTRON_ADDRESS_SCOPE"}, pulled.Annotations)

	// The manifest is an OCI 1.1 artifact any registry client can read.
	ref, err := name.ParseReference(pushed.Ref)
	require.NoError(t, err)
	desc, err := remote.Get(ref)
	require.NoError(t, err)
	var mf v1.Manifest
	require.NoError(t, json.Unmarshal(desc.Manifest, &mf))
	assert.Equal(t, "application/vnd.oci.image.manifest.v1+json", string(mf.MediaType))
	assert.Equal(t, ArtifactType, mf.ArtifactType)
	assert.Equal(t, "application/vnd.oci.empty.v1+json", string(mf.Config.MediaType))
	require.Len(t, mf.Layers, 1)
	assert.Equal(t, LayerMediaType, mf.Layers[0].MediaType)
	assert.Equal(t, pushed.ModuleDigest, mf.Layers[0].Digest.String())
}

func TestPullRefusals(t *testing.T) {
	ctx := context.Background()
	module := []byte("\x00asm\x01\x00\x00\x00 the real module")
	host := startRegistry(t, nil)
	pushed, err := Push(ctx, "scopes.wasm", module, meta, host+"/plugins/scopes:1", Options{})
	require.NoError(t, err)

	// An image that is not a plugin.
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	imgRef, err := name.ParseReference(host + "/images/random:1")
	require.NoError(t, err)
	require.NoError(t, remote.Write(imgRef, img))
	imgDigest, err := img.Digest()
	require.NoError(t, err)

	// Registries that serve other bytes than they were given for the layer or the manifest.
	swapLayer := startRegistry(t, func(r *http.Request, body []byte) []byte {
		if strings.Contains(r.URL.Path, "/blobs/"+pushed.ModuleDigest) && r.Method == http.MethodGet {
			return bytes.Replace(body, []byte("real"), []byte("evil"), 1)
		}
		return body
	})
	swapped, err := Push(ctx, "scopes.wasm", module, meta, swapLayer+"/plugins/scopes:1", Options{})
	require.NoError(t, err)
	swapManifest := startRegistry(t, func(r *http.Request, body []byte) []byte {
		if strings.Contains(r.URL.Path, "/manifests/") && r.Method == http.MethodGet {
			return bytes.Replace(body, []byte(`"0.3.1"`), []byte(`"6.6.6"`), 1)
		}
		return body
	})
	swappedMf, err := Push(ctx, "scopes.wasm", module, meta, swapManifest+"/plugins/scopes:1", Options{})
	require.NoError(t, err)

	wrong := "sha256:" + strings.Repeat("0", 64)
	cases := []struct {
		name, ref string
		allowTag  bool
		want      string
	}{
		{"a digest the registry does not have", host + "/plugins/scopes@" + wrong, false, "MANIFEST_UNKNOWN"},
		{"a tag where a digest is required", host + "/plugins/scopes:1", false, "is not pinned by digest: add @sha256:"},
		{"a malformed digest", host + "/plugins/scopes@sha256:abc", false, `reference "` + host + `/plugins/scopes@sha256:abc"`},
		{"not a plugin", host + "/images/random@" + imgDigest.String(), false, "is not an openstack-sync plugin"},
		{"a swapped layer", swapped.Ref, false, "error verifying sha256 checksum"},
		{"a swapped manifest", swappedMf.Ref, false, "does not match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "p.wasm")
			_, err := Pull(ctx, c.ref, out, !c.allowTag, "", Options{})
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			_, statErr := os.Stat(out)
			assert.True(t, os.IsNotExist(statErr), "nothing is written when a pull is refused")
		})
	}

	t.Run("a tag when allowed", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "p.wasm")
		pulled, err := Pull(ctx, host+"/plugins/scopes:1", out, false, "", Options{})
		require.NoError(t, err)
		assert.Equal(t, pushed.Ref, pulled.Ref, "the result is pinned by the digest the tag resolved to")
	})
}

// A registry cannot hold a pull (and the chart's init container) for ever, nor make it hold
// unbounded memory: a registry that never answers ends the pull at its timeout, a redirect loop
// after net/http's ten redirects, an oversized manifest before it is read whole; and a pull that
// fetched another module than the one required leaves the file it would have written as it was.
func TestPullIsBounded(t *testing.T) {
	ctx := context.Background()
	digest := "@sha256:" + strings.Repeat("a", 64)
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	stalled := make(chan struct{})
	stalling := serve(func(w http.ResponseWriter, r *http.Request) { <-stalled })
	t.Cleanup(func() { close(stalled) }) // before the server's own cleanup, which waits for it
	var redirects atomic.Int32
	var loop string
	loop = serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return // the registry's ping; only the manifest loops
		}
		n := redirects.Add(1)
		http.Redirect(w, r, "http://"+loop+r.URL.Path+"?again="+strconv.Itoa(int(n)), http.StatusFound)
	})
	huge := func(withLength bool) string {
		return serve(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "/manifests/") {
				w.WriteHeader(http.StatusOK)
				return
			}
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			if withLength {
				w.Header().Set("Content-Length", strconv.Itoa(90<<20))
			}
			w.WriteHeader(http.StatusOK)
			chunk := bytes.Repeat([]byte(" "), 1<<20)
			for range 90 {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		})
	}
	cases := []struct {
		name, ref string
		o         Options
		want      string
	}{
		{"a registry that never answers", stalling + "/p/x" + digest, Options{Timeout: 300 * time.Millisecond}, "within 300ms"},
		{"a redirect loop", loop + "/p/x" + digest, Options{}, "more than 10 redirects"},
		{"a 90 MB manifest", huge(true) + "/p/x" + digest, Options{}, "the manifest is 94371840 bytes, over the limit of 4194304"},
		{"a 90 MB manifest without a length", huge(false) + "/p/x" + digest, Options{}, "the manifest is over the limit of 4194304 bytes"},
	}
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.Insecure = true
			redirects.Store(0)
			metrics.Read(sample)
			before := sample[0].Value.Uint64()
			start := time.Now()
			_, err := Pull(ctx, c.ref, filepath.Join(t.TempDir(), "p.wasm"), true, "", c.o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Less(t, time.Since(start), 30*time.Second)
			assert.LessOrEqual(t, redirects.Load(), int32(11), "the loop is left after ten redirects")
			metrics.Read(sample)
			assert.Less(t, sample[0].Value.Uint64()-before, uint64(32<<20), "the pull allocated past the manifest bound")
		})
	}

	// The wait for headers and the pull's deadline are the same length under a short --timeout,
	// so either can end the pull; a transport that times out at once makes the first case
	// certain. The registry ping tries https then http: the first net.Error in the joined error
	// is the https refusal, which is no timeout.
	t.Run("a wait for headers that ends before the pull's deadline", func(t *testing.T) {
		_, err := Pull(ctx, stalling+"/p/x"+digest, filepath.Join(t.TempDir(), "p.wasm"), true, "",
			Options{Insecure: true, Timeout: time.Hour, Transport: timingOut{}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "no response within 30s")
	})

	t.Run("another module than the one required", func(t *testing.T) {
		host := startRegistry(t, nil)
		module := []byte("\x00asm\x01\x00\x00\x00 a module")
		pushed, err := Push(ctx, "scopes.wasm", module, meta, host+"/plugins/scopes:1", Options{})
		require.NoError(t, err)
		out := filepath.Join(t.TempDir(), "p.wasm")
		require.NoError(t, os.WriteFile(out, []byte("the module in use"), 0o644))
		_, err = Pull(ctx, pushed.Ref, out, true, "sha256:"+strings.Repeat("b", 64), Options{})
		require.ErrorIs(t, err, ErrOtherModule)
		kept, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, "the module in use", string(kept))
	})
}

func TestPushRefusesADigestReference(t *testing.T) {
	_, err := Push(context.Background(), "x.wasm", []byte("m"), meta, "127.0.0.1:1/p@sha256:"+strings.Repeat("a", 64), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "names a digest; push to a tag")
}

func TestDefaultFile(t *testing.T) {
	f, err := DefaultFile("registry.example/team/neutron-address-scopes@sha256:"+strings.Repeat("a", 64), Options{})
	require.NoError(t, err)
	assert.Equal(t, "neutron-address-scopes.wasm", f)
}

// timingOut refuses https as a plain-HTTP registry does, and fails every http request as net/http
// does when a response's headers are late.
type timingOut struct{}

func (timingOut) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "https" {
		return nil, errors.New("http: server gave HTTP response to HTTPS client")
	}
	return nil, headerTimeout{}
}

type headerTimeout struct{}

func (headerTimeout) Error() string   { return "net/http: timeout awaiting response headers" }
func (headerTimeout) Timeout() bool   { return true }
func (headerTimeout) Temporary() bool { return true }
