package openstack

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// recordingTransport remembers every request the session sent, headers included.
type recordingTransport struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (rt *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.reqs = append(rt.reqs, r.Clone(context.Background()))
	rt.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// sent returns the requests to a path (token requests excluded unless asked for).
func (rt *recordingTransport) sent(path string) []*http.Request {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []*http.Request
	for _, r := range rt.reqs {
		if r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

type harness struct {
	cloud     *fakecloud.Cloud
	session   *session
	transport *recordingTransport
	logs      *bytes.Buffer
	mu        sync.Mutex
	sleeps    []time.Duration
}

func (h *harness) slept() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.sleeps...)
}

var testCreds = plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: fakecloud.AdminCloud}

// newHarness connects to a fake cloud; retries record their delay instead of waiting, and backoff
// has no jitter, so the delays are exact.
func newHarness(t *testing.T, cloudOpts fakecloud.Options, opts Options) *harness {
	t.Helper()
	h := &harness{cloud: fakecloud.New(cloudOpts), transport: &recordingTransport{}, logs: &bytes.Buffer{}}
	t.Cleanup(h.cloud.Close)
	opts.Transport = h.transport
	opts.Logger = slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Plugin = "test-plugin"
	sec := &secrets{data: map[string]map[string][]byte{"ns1/creds": {"clouds.yaml": []byte(h.cloud.CloudsYAML())}}}
	s, err := NewConnector(sec, opts).Connect(context.Background(), testCreds)
	require.NoError(t, err)
	h.session = s.(*session)
	h.session.jitter = func(d time.Duration) time.Duration { return d }
	h.session.sleep = func(ctx context.Context, d time.Duration) error {
		h.mu.Lock()
		h.sleeps = append(h.sleeps, d)
		h.mu.Unlock()
		return ctx.Err()
	}
	return h
}

func TestDoReturnsNon2xxAsResponses(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	resp, err := h.session.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors/nope"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(resp.Body), "FlavorNotFound")
	assert.Empty(t, h.slept(), "a 404 is an answer, not a reason to retry")
}

func TestDoSendsMicroversionHeaders(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	resp, err := h.session.Do(context.Background(), plugin.Request{Service: "baremetal", Method: http.MethodGet,
		Path: "v1/runbooks", Microversion: "1.92", Query: url.Values{"limit": {"1"}}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	sent := h.transport.sent("/v1/runbooks")
	require.Len(t, sent, 1)
	assert.Equal(t, "baremetal 1.92", sent[0].Header.Get("OpenStack-API-Version"))
	assert.Equal(t, "1.92", sent[0].Header.Get("X-OpenStack-Ironic-API-Version"))
	assert.Equal(t, "limit=1", sent[0].URL.RawQuery)

	// Below 1.92 the real Ironic hides runbooks; the header decides.
	resp, err = h.session.Do(context.Background(), plugin.Request{Service: "baremetal", Method: http.MethodGet,
		Path: "v1/runbooks", Microversion: "1.91"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestDoRejectsUnsafeRequests(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	tests := []struct {
		name string
		req  plugin.Request
		want string
	}{
		{"parent segment", plugin.Request{Path: "v2.0/../../etc"}, "would leave the service endpoint"},
		{"escaped parent segment", plugin.Request{Path: "v2.0/%2e%2e/x"}, "would leave the service endpoint"},
		{"escaped slash", plugin.Request{Path: "v2.0/a%2F..%2Fb"}, "would leave the service endpoint"},
		{"absolute URL", plugin.Request{Path: "http://evil.example/v2.0/flavors"}, "not a URL"},
		{"other host", plugin.Request{Path: "//evil.example/v2.0"}, "not a URL"},
		{"query in path", plugin.Request{Path: "v2.0/flavors?name=x"}, "use Request.Query"},
		{"unescaped space", plugin.Request{Path: "v2.0/flavors/a b"}, "url.PathEscape"},
		{"bad escape", plugin.Request{Path: "v2.0/%zz"}, "not validly escaped"},
		{"auth header", plugin.Request{Header: http.Header{"X-Auth-Token": {"stolen"}}}, "X-Auth-Token is not one a plugin may send"},
		{"lower-case auth header", plugin.Request{Header: http.Header{"authorization": {"Basic x"}}}, "Authorization is not one a plugin may send"},
		{"legacy microversion header", plugin.Request{Header: http.Header{"X-OpenStack-Ironic-API-Version": {"1.1"}}}, "not one a plugin may send"},
		// Routing headers some proxies and frameworks honour: a deny-list let these through.
		{"original URL", plugin.Request{Header: http.Header{"X-Original-URL": {"/v3/auth/tokens"}}}, "X-Original-Url is not one a plugin may send"},
		{"rewrite URL", plugin.Request{Header: http.Header{"X-Rewrite-URL": {"/v3/users"}}}, "X-Rewrite-Url is not one a plugin may send"},
		{"forwarded host", plugin.Request{Header: http.Header{"X-Forwarded-Host": {"evil.example"}}}, "X-Forwarded-Host is not one a plugin may send"},
		{"forwarded", plugin.Request{Header: http.Header{"Forwarded": {"host=evil.example"}}}, "Forwarded is not one a plugin may send"},
		{"bad microversion", plugin.Request{Microversion: "one"}, `microversion "one"`},
		{"bad method", plugin.Request{Method: "TRACE"}, `method "TRACE"`},
		{"bad service", plugin.Request{Service: "Network!"}, `service "Network!"`},
		{"token creation", plugin.Request{Service: "identity", Method: http.MethodPost, Path: "v3/auth/tokens"}, "the host manages tokens"},
		{"escaped token creation", plugin.Request{Service: "identity", Method: http.MethodPost, Path: "v3/auth/%74okens"}, "the host manages tokens"},
		{"escaped token revocation", plugin.Request{Service: "identity", Method: http.MethodDelete, Path: "%76%33/auth/tokens"}, "the host manages tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Service == "" {
				req.Service = "network"
			}
			if req.Method == "" {
				req.Method = http.MethodGet
			}
			if req.Path == "" {
				req.Path = "v2.0/flavors"
			}
			_, err := h.session.Do(context.Background(), req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.Empty(t, h.cloud.Writes())
	for _, r := range h.cloud.Requests() {
		assert.Equal(t, fakecloud.Identity, r.Service, "no rejected request may reach a service: %s", r)
	}
}

func TestJoinEndpoint(t *testing.T) {
	tests := []struct{ endpoint, path, want string }{
		{"http://h:9696/", "v2.0/flavors", "http://h:9696/v2.0/flavors"},
		{"http://h:9696", "v2.0/flavors", "http://h:9696/v2.0/flavors"},
		{"http://h:5000/v3/", "v3/auth/tokens", "http://h:5000/v3/auth/tokens"},
		{"http://h/baremetal/v1", "v1/runbooks/CUSTOM_A", "http://h/baremetal/v1/runbooks/CUSTOM_A"},
		{"http://h/network/", "v2.0/flavors/a%20b", "http://h/network/v2.0/flavors/a%20b"},
		{"http://h:6385/", "", "http://h:6385/"},
	}
	for _, tc := range tests {
		p, err := cleanPath(tc.path)
		require.NoError(t, err, tc.path)
		u, err := joinEndpoint(tc.endpoint, p, nil)
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.want, u.String(), "%s + %s", tc.endpoint, tc.path)
	}
}

func TestDoValidatesOwnTokenWithoutExposingIt(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	for _, m := range []string{http.MethodHead, http.MethodGet} {
		resp, err := h.session.Do(context.Background(), plugin.Request{Service: "identity", Method: m, Path: "v3/auth/tokens"})
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, m)
		assert.Empty(t, resp.Header.Get("X-Subject-Token"), "a token must never reach a plugin")
	}
	token := h.session.pc.Token()
	require.NotEmpty(t, token)
	assert.NotContains(t, h.logs.String(), token)
	assert.NotContains(t, h.logs.String(), "admin-secret")
}

func TestDoLogsEachRequestAtDebug(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	_, err := h.session.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
	require.NoError(t, err)
	var line string
	for l := range strings.SplitSeq(h.logs.String(), "\n") {
		if strings.Contains(l, `"path":"v2.0/flavors"`) {
			line = l
		}
	}
	require.NotEmpty(t, line, h.logs.String())
	for _, want := range []string{`"level":"DEBUG"`, `"method":"GET"`, `"service":"network"`, `"status":200`,
		`"duration":`, `"plugin":"test-plugin"`, `"secret":"creds"`, `"cloud":"local-admin"`} {
		assert.Contains(t, line, want)
	}
	assert.NotContains(t, h.logs.String(), h.session.pc.Token())
}

func TestDoBoundsResponseSize(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{MaxResponseBytes: 64})
	_, err := h.session.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/network_segment_ranges"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than the 64-byte limit")
}

func TestDoDoesNotFollowRedirects(t *testing.T) {
	var hit bool
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = true }))
	defer evil.Close()
	h := newHarness(t, fakecloud.Options{}, Options{})
	// A redirecting server stands in for a compromised or misconfigured endpoint.
	redirect := httptest.NewServer(http.RedirectHandler(evil.URL+"/steal", http.StatusFound))
	defer redirect.Close()
	u, err := joinEndpoint(redirect.URL+"/", "v2.0/flavors", nil)
	require.NoError(t, err)
	p, err := prepare(plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
	require.NoError(t, err)
	resp, err := h.session.attempt(context.Background(), p, u, "token")
	require.NoError(t, err)
	assert.Equal(t, http.StatusFound, resp.StatusCode)
	assert.False(t, hit, "the token must not follow a redirect")
}

func TestRateLimitAppliesAcrossSessions(t *testing.T) {
	cloud := fakecloud.New(fakecloud.Options{})
	defer cloud.Close()
	sec := &secrets{data: map[string]map[string][]byte{"ns1/creds": {"clouds.yaml": []byte(cloud.CloudsYAML())}}}
	// One request per hour with a burst of one: the first request passes, the next must wait.
	conn := NewConnector(sec, Options{RateLimit: 1.0 / 3600, RateBurst: 1})
	admin, err := conn.Connect(context.Background(), testCreds)
	require.NoError(t, err)
	member, err := conn.Connect(context.Background(), plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: fakecloud.MemberCloud})
	require.NoError(t, err)
	_, err = admin.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = member.Do(ctx, plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rate limit")
}

func TestDoFailsClearlyOnMissingEndpoint(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	_, err := h.session.Do(context.Background(), plugin.Request{Service: "compute", Method: http.MethodGet, Path: "v2.1/servers"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the catalog of cloud "local-admin" has no "compute" endpoint`)
	assert.True(t, plugin.IsPermanent(err))
}

// The session's own path check is a second line behind the wasm host's grant rule: it must
// accept every path the shared rule (pdk/testdata/grant-rule.json) lets a plugin send and refuse
// every path the rule calls unsafe, or a plugin that passes pdktest fails against a real cloud.
func TestCleanPathAgreesWithTheSharedGrantRule(t *testing.T) {
	raw, err := os.ReadFile("../../../pdk/testdata/grant-rule.json")
	require.NoError(t, err)
	var rule struct {
		Cases []struct{ Name, Path, Kind, Refusal string } `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &rule))
	require.NotEmpty(t, rule.Cases)
	for _, c := range rule.Cases {
		_, err := cleanPath(c.Path)
		if c.Kind == "invalid_request" {
			assert.Error(t, err, "%s: %q", c.Name, c.Path)
		} else {
			assert.NoError(t, err, "%s: %q", c.Name, c.Path)
		}
	}
}
