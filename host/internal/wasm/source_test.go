package wasm

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/source"
)

// sourceToken is the credential of the adversarial source tests: the guest must never hold it.
const sourceToken = "f00dfacef00dfacef00dfacef00dfacef00dface"

type tokenSecret struct {
	mu    sync.Mutex
	reads []string
}

func (s *tokenSecret) GetSecretData(_ context.Context, namespace, name string) (map[string][]byte, error) {
	s.mu.Lock()
	s.reads = append(s.reads, namespace+"/"+name)
	s.mu.Unlock()
	if namespace == "ns" && name == "nautobot" {
		return map[string][]byte{"token": []byte(sourceToken)}, nil
	}
	return nil, &kubeapi.APIError{Code: 404}
}

// sourceWorld is a source that echoes every request back (headers in the body and in response
// headers, the credential in several encodings, a redirect on demand) and a second server that
// must never be reached.
type sourceWorld struct {
	nautobot, evil *httptest.Server
	evilHits       int
	mu             sync.Mutex
	seenAuth       []string
}

func newSourceWorld(t *testing.T) *sourceWorld {
	w := &sourceWorld{}
	w.evil = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.evilHits++
		w.mu.Unlock()
	}))
	t.Cleanup(w.evil.Close)
	w.nautobot = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.mu.Lock()
		w.seenAuth = append(w.seenAuth, auth)
		w.mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/redirect/") {
			http.Redirect(rw, r, w.evil.URL+"/?stolen=1", http.StatusFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		rw.Header().Set("X-Echo", auth)
		rw.Header().Set("Set-Cookie", "csrftoken="+sourceToken)
		_ = json.NewEncoder(rw).Encode(map[string]any{"path": r.URL.Path, "query": r.URL.RawQuery, "headers": r.Header,
			"body": string(body), "b64": base64.StdEncoding.EncodeToString([]byte(auth)), "upper": strings.ToUpper(auth)})
	}))
	t.Cleanup(w.nautobot.Close)
	return w
}

// sourceSession is a credential group's session with the real source proxy behind it.
type sourceSession struct {
	plugin.Session
	proxy *source.Proxy
}

func (s sourceSession) DoSource(ctx context.Context, req plugin.SourceRequest) (*plugin.Response, error) {
	return s.proxy.Do(ctx, "ns", req)
}

// runSourceGuest sends each request through the sourcemock guest and returns what the guest got
// back, one answer per request, and the guest's whole linear memory after the call.
func runSourceGuest(t *testing.T, w *sourceWorld, sess plugin.Session, requests ...any) ([]string, []byte) {
	t.Helper()
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "sourcemock"), o)
	ctx := context.Background()
	c, err := p.NewCache(ctx)
	require.NoError(t, err)
	defer c.Close(ctx)
	res, err := p.Reconcile(ctx, sess, c, crRequest("scan", map[string]any{"requests": requests}))
	require.NoError(t, err)
	g := c.(*groupCache)
	require.NotNil(t, g.inst, "the group still holds its instance")
	mem := g.inst.mod.Memory()
	raw, ok := mem.Read(0, mem.Size())
	require.True(t, ok)
	return res.Notes, bytes.Clone(raw)
}

func newSourceSession(t *testing.T, w *sourceWorld, secrets source.SecretReader) sourceSession {
	u, err := hookenv.SourceURL(w.nautobot.URL)
	require.NoError(t, err)
	proxy, err := source.New(secrets, []hookenv.Source{{Name: "nautobot", URL: u, Burst: 1,
		Auth: hookenv.SourceAuth{Header: "Authorization", Scheme: "Token"}}}, source.Options{Prefix: "SRC", MaxAttempts: 1})
	require.NoError(t, err)
	return sourceSession{Session: &fakeSession{}, proxy: proxy}
}

func sourceReq(w *sourceWorld, path string, extra map[string]any) map[string]any {
	r := map[string]any{"source": "nautobot", "url": w.nautobot.URL, "secret": map[string]string{"name": "nautobot", "key": "token"},
		"method": "GET", "path": path}
	for k, v := range extra {
		r[k] = v
	}
	return r
}

func answerHead(t *testing.T, answer string) map[string]any {
	t.Helper()
	head, _, _ := strings.Cut(answer, "\n")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(head), &m), answer)
	return m
}

// A hostile guest tries every way to get the credential back: an echoing server, a redirect, a
// URL of its own, headers of its own, paths out of the base URL, a Secret of its choosing. It
// gets "[redacted]" and refusals; the credential is nowhere in its memory, and the other server
// sees nothing.
func TestAHostileGuestNeverHoldsTheSourceCredential(t *testing.T) {
	w := newSourceWorld(t)
	secrets := &tokenSecret{}
	sess := newSourceSession(t, w, secrets)
	requests := []any{
		sourceReq(w, "api/echo/", nil),
		sourceReq(w, "api/echo/", map[string]any{"query": map[string][]string{"reflect": {"Authorization"}}}),
		sourceReq(w, "api/redirect/", nil),
		sourceReq(w, "api/echo/", map[string]any{"url": w.evil.URL}),
		sourceReq(w, "api/echo/", map[string]any{"headers": map[string][]string{"Authorization": {"Token guest"}}}),
		sourceReq(w, "api/echo/", map[string]any{"headers": map[string][]string{"Accept": {"a\r\nX-Forwarded-Host: evil"}}}),
		sourceReq(w, "api/echo/", map[string]any{"headers": map[string][]string{"X-Forwarded-Host": {"evil"}}}),
		sourceReq(w, "../../echo/", nil),
		sourceReq(w, "api/%2e%2e/echo/", nil),
		sourceReq(w, "api/echo/", map[string]any{"secret": map[string]string{"name": "openstack-credentials", "key": "clouds.yaml"}}),
		sourceReq(w, "api/echo/", map[string]any{"secret": map[string]string{"name": "../kube-system/x", "key": "token"}}),
		sourceReq(w, "admin/echo/", nil),
		sourceReq(w, "api/echo/", map[string]any{"method": "DELETE"}),
		sourceReq(w, "api/echo/", map[string]any{"source": "netbox"}),
	}
	notes, mem := runSourceGuest(t, w, sess, requests...)
	require.Len(t, notes, len(requests))

	kinds := make([]any, len(notes))
	for i, n := range notes {
		assert.NotContains(t, strings.ToLower(n), sourceToken, "answer %d", i)
		kinds[i] = answerHead(t, n)["status"]
		if e, ok := answerHead(t, n)["error"].(map[string]any); ok {
			kinds[i] = e["kind"]
		}
	}
	assert.Equal(t, []any{
		200.0, 200.0, 302.0, "source_denied", "invalid_request", "invalid_request", "invalid_request", "invalid_request",
		"invalid_request", "secret", "invalid_request", "grant_denied", "grant_denied", "grant_denied",
	}, kinds)
	assert.Contains(t, notes[0], "[redacted]", "the echo came back scrubbed")
	assert.Contains(t, notes[3], "is not an allow-listed URL of this source (allowed: "+strings.ToLower(w.nautobot.URL)+")")
	assert.Contains(t, notes[9], "Secret ns/openstack-credentials not found", "the guest may name any Secret, never read one")

	for _, form := range []string{sourceToken, strings.ToUpper(sourceToken), base64.StdEncoding.EncodeToString([]byte("Token " + sourceToken))} {
		assert.False(t, bytes.Contains(mem, []byte(form)), "the guest's memory holds no %q", form)
	}
	assert.True(t, bytes.Contains(mem, []byte("[redacted]")), "the scan reads the memory the answers are in")
	assert.Zero(t, w.evilHits, "no request and no redirect reached another host")
	assert.Equal(t, []string{"Token " + sourceToken, "Token " + sourceToken, "Token " + sourceToken}, w.seenAuth,
		"the source saw the host's credential on the three requests it was sent")
	assert.Equal(t, []string{"ns/nautobot", "ns/openstack-credentials"}, secrets.reads,
		"one read of the credential, in the group's namespace; nothing read for a refused request")
}

// Without an allow-list the capability is off: the session does not reach sources at all.
func TestWithoutAllowListedSourcesEveryRequestIsRefused(t *testing.T) {
	w := newSourceWorld(t)
	notes, _ := runSourceGuest(t, w, &fakeSession{}, sourceReq(w, "api/echo/", nil))
	e := answerHead(t, notes[0])["error"].(map[string]any)
	assert.Equal(t, "source_denied", e["kind"])
	assert.Equal(t, `source "nautobot": the operator allow-lists no source for this plugin (SRC_SOURCES)`, e["message"])
	assert.Equal(t, true, e["permanent"])
	assert.Empty(t, w.seenAuth)
}

// Malformed requests are refused without a session call.
func TestMalformedSourceRequestsAreRefused(t *testing.T) {
	w := newSourceWorld(t)
	sess := newSourceSession(t, w, &tokenSecret{})
	notes, _ := runSourceGuest(t, w, sess)
	require.Empty(t, notes)
	o, _ := testOptions(t)
	p := loadTest(t, guest(t, "sourcemock"), o)
	res, err := p.Reconcile(context.Background(), sess, nil, crRequest("raw", map[string]any{"raw": []string{
		`{"source":`, `{"source":"","method":"GET","path":"api/"}`, `{"source":"nautobot","method":"TRACE","path":"api/"}`,
		`{"source":"nautobot","url":"` + w.nautobot.URL + `","method":"GET","path":"api/` + strings.Repeat("x", 5000) + `"}`,
	}}))
	require.NoError(t, err)
	for i, n := range res.Notes {
		e := answerHead(t, n)["error"].(map[string]any)
		assert.Equal(t, "invalid_request", e["kind"], "request %d", i)
	}
	assert.Empty(t, w.seenAuth)
}

func TestMetadataSourcesAreChecked(t *testing.T) {
	for _, c := range []struct{ sources, want string }{
		{`[{"name":"Nautobot","methods":["GET"],"paths":["api/**"]}]`, `source 0: name "Nautobot" is not a lower-case DNS label`},
		{`[{"name":"nautobot","methods":[],"paths":["api/**"]}]`, "sources: grant 0 (nautobot): no methods"},
		{`[{"name":"nautobot","methods":["GET"],"paths":["api/**/x"]}]`, `"**" may only end a pattern`},
	} {
		raw := `{"abi_version":1,"name":"x","env_prefix":"X","sources":` + c.sources + `}`
		_, err := parseMetadata("x.wasm", []byte(raw))
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	m, err := parseMetadata("x.wasm", []byte(`{"abi_version":1,"name":"x","env_prefix":"X","sources":[{"name":"nautobot","methods":["GET"],"paths":["api/ipam/prefixes"]}]}`))
	require.NoError(t, err)
	gs, err := m.sourceGrants()
	require.NoError(t, err)
	assert.Equal(t, "nautobot", gs[0].Service)
}
