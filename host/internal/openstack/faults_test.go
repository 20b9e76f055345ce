package openstack

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

var (
	listFlavors  = plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"}
	createFlavor = plugin.Request{Service: "network", Method: http.MethodPost, Path: "v2.0/flavors",
		Body: []byte(`{"flavor": {"name": "f1", "service_type": "L3_ROUTER_NAT"}}`)}
)

// TestRetries covers which answers are retried, for which methods, and how long the session waits.
func TestRetries(t *testing.T) {
	base := 100 * time.Millisecond
	tests := []struct {
		name      string
		fault     fakecloud.Fault
		req       plugin.Request
		attempts  int
		status    int // final status; 0 means an error is expected
		errText   string
		sleeps    []time.Duration
		created   int // flavors existing afterwards
		maxRetrys int
	}{
		{name: "503 on GET is retried with exponential backoff",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 503, Times: 2}, req: listFlavors,
			attempts: 3, status: 200, sleeps: []time.Duration{base, 2 * base}},
		{name: "502 and 504 on GET are retried",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 504, Times: 1}, req: listFlavors,
			attempts: 2, status: 200, sleeps: []time.Duration{base}},
		{name: "persistent 503 on GET gives up after MaxAttempts and returns the answer",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 503}, req: listFlavors,
			attempts: 4, status: 503, sleeps: []time.Duration{base, 2 * base, 4 * base}},
		{name: "503 on POST is not retried blindly",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 503, Times: 1}, req: createFlavor,
			attempts: 1, status: 503},
		{name: "500 is an answer, not an outage",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 500, Times: 1}, req: listFlavors,
			attempts: 1, status: 500},
		{name: "429 honours Retry-After, even for POST",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 429, RetryAfter: "7", Times: 1}, req: createFlavor,
			attempts: 2, status: 201, sleeps: []time.Duration{7 * time.Second}, created: 1},
		{name: "429 with an HTTP-date Retry-After in the past retries at once",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 429, RetryAfter: "Mon, 02 Jan 2006 15:04:05 GMT", Times: 1}, req: listFlavors,
			attempts: 2, status: 200, sleeps: []time.Duration{0}},
		{name: "429 without Retry-After backs off",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 429, Times: 1}, req: listFlavors,
			attempts: 2, status: 200, sleeps: []time.Duration{base}},
		{name: "429 asking for longer than MaxRetryAfter is returned to the plugin",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 429, RetryAfter: "3600", Times: 1}, req: listFlavors,
			attempts: 1, status: 429},
		{name: "503 on GET honours Retry-After",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 503, RetryAfter: "3", Times: 1}, req: listFlavors,
			attempts: 2, status: 200, sleeps: []time.Duration{3 * time.Second}},
		{name: "503 asking for longer than MaxRetryAfter is returned to the plugin",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 503, RetryAfter: "3600", Times: 1}, req: listFlavors,
			attempts: 1, status: 503},
		{name: "503 with Retry-After on POST is still not re-sent",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 503, RetryAfter: "1", Times: 1}, req: createFlavor,
			attempts: 1, status: 503},
		{name: "connection reset on GET is retried",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Reset: true, Times: 1}, req: listFlavors,
			attempts: 2, status: 200, sleeps: []time.Duration{base}},
		{name: "connection reset on POST is not retried: it may have been applied",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Reset: true, Times: 1}, req: createFlavor,
			attempts: 1, errText: `POST network "v2.0/flavors": connection reset by the server`},
		{name: "MaxAttempts 1 disables retries",
			fault: fakecloud.Fault{Path: "/v2.0/flavors", Status: 503, Times: 1}, req: listFlavors, maxRetrys: 1,
			attempts: 1, status: 503},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fakecloud.Options{}, Options{RetryBaseDelay: base, RetryMaxDelay: time.Second, MaxAttempts: tc.maxRetrys})
			h.cloud.Inject(tc.fault)
			resp, err := h.session.Do(context.Background(), tc.req)
			if tc.status == 0 {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.errText)
				assert.False(t, plugin.IsPermanent(err), "an outage is worth retrying later")
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.status, resp.StatusCode)
			}
			assert.Len(t, h.transport.sent("/v2.0/flavors"), tc.attempts)
			assert.Equal(t, tc.sleeps, h.slept())
			assert.Len(t, h.cloud.Flavors(), tc.created)
		})
	}
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	s := &session{opts: Options{RetryBaseDelay: time.Second, RetryMaxDelay: 5 * time.Second}}
	var asked []time.Duration
	s.jitter = func(d time.Duration) time.Duration { asked = append(asked, d); return d / 2 }
	got := []time.Duration{s.backoff(1), s.backoff(2), s.backoff(3), s.backoff(4), s.backoff(60)}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, asked)
	assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 2500 * time.Millisecond, 2500 * time.Millisecond}, got)
}

func TestSlowResponsePastTimeout(t *testing.T) {
	for _, tc := range []struct {
		req      plugin.Request
		attempts int
	}{{listFlavors, 2}, {createFlavor, 1}} {
		t.Run(tc.req.Method, func(t *testing.T) {
			h := newHarness(t, fakecloud.Options{}, Options{RequestTimeout: 50 * time.Millisecond, MaxAttempts: 2})
			h.cloud.Inject(fakecloud.Fault{Path: "/v2.0/flavors", Delay: 10 * time.Second})
			_, err := h.session.Do(context.Background(), tc.req)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "no response within 50ms")
			assert.Len(t, h.transport.sent("/v2.0/flavors"), tc.attempts)
		})
	}
}

func TestReauthenticatesAfter401(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	ctx := context.Background()
	_, err := h.session.Do(ctx, listFlavors)
	require.NoError(t, err)
	require.Equal(t, 1, h.cloud.TokensIssued())

	h.cloud.ExpireTokens()
	// A POST is re-sent after a 401 too: the cloud did nothing with it.
	resp, err := h.session.Do(ctx, createFlavor)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 2, h.cloud.TokensIssued())
	assert.Len(t, h.cloud.Flavors(), 1)
	assert.Empty(t, h.slept(), "re-authentication is not a backoff")
}

func TestReauthenticatesBeforeExpiry(t *testing.T) {
	// Tokens that live less than the session's margin are renewed before every request.
	h := newHarness(t, fakecloud.Options{TokenTTL: 30 * time.Second}, Options{})
	for range 2 {
		_, err := h.session.Do(context.Background(), listFlavors)
		require.NoError(t, err)
	}
	assert.Equal(t, 3, h.cloud.TokensIssued())
	for _, r := range h.cloud.Requests() {
		assert.NotEqual(t, http.StatusUnauthorized, r.Status, "no request should be sent with a dying token: %s", r)
	}
}

func TestProactiveRenewalSurvivesAKeystoneBlip(t *testing.T) {
	h := newHarness(t, fakecloud.Options{TokenTTL: 30 * time.Second}, Options{MaxAttempts: 1})
	_, err := h.session.Do(context.Background(), listFlavors)
	require.NoError(t, err)
	h.cloud.Inject(fakecloud.Fault{Service: fakecloud.Identity, Path: "/v3/auth/tokens", Status: 503})
	resp, err := h.session.Do(context.Background(), listFlavors)
	require.NoError(t, err, "the current token has 30s left")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	sent := h.transport.sent("/v2.0/flavors")
	assert.Equal(t, "openstack-sync test-plugin", sent[len(sent)-1].Header.Get("User-Agent"))
}

func TestKeystoneRefusingThePasswordFailsFast(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	h.cloud.SetPassword("admin", "rotated")
	ctx := context.Background()
	_, err := h.session.Do(ctx, listFlavors)
	require.Error(t, err)
	var ae *AuthError
	require.ErrorAs(t, err, &ae)
	assert.True(t, plugin.IsPermanent(err))
	assert.Equal(t, `OpenStack refused the credentials of cloud "local-admin" in Secret ns1/creds: Keystone answered 401 Unauthorized; check the user, password and project in its clouds.yaml`, err.Error())
	assert.Empty(t, h.slept(), "a refusal is not retried")

	// The run does not ask Keystone again with a password it refused.
	_, err2 := h.session.Do(ctx, listFlavors)
	require.Error(t, err2)
	assert.Equal(t, err.Error(), err2.Error())
	assert.Len(t, h.transport.sent("/v3/auth/tokens"), 1)
	assert.Empty(t, h.transport.sent("/v2.0/flavors"))
}

func TestKeystoneForbiddingTheUserFailsFast(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	h.cloud.Inject(fakecloud.Fault{Service: fakecloud.Identity, Method: http.MethodPost, Path: "/v3/auth/tokens", Status: http.StatusForbidden})
	_, err := h.session.Do(context.Background(), listFlavors)
	var ae *AuthError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusForbidden, ae.Status)
	assert.True(t, plugin.IsPermanent(err))
	assert.Contains(t, err.Error(), `cloud "local-admin" in Secret ns1/creds: Keystone answered 403 Forbidden`)
}

func TestStableTextDropsAddresses(t *testing.T) {
	err := &net.OpError{Op: "write", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 54321},
		Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9696}, Err: errors.New("weird failure")}
	assert.Equal(t, "weird failure", stableText(err))
	assert.Equal(t, "dial <address>: x", stableText(errors.New("dial 10.0.0.1:80->10.0.0.2:5000: x")))
}

func TestKeystoneRefusingReauthenticationFailsFast(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	ctx := context.Background()
	_, err := h.session.Do(ctx, listFlavors)
	require.NoError(t, err)
	h.cloud.SetPassword("admin", "rotated")
	h.cloud.ExpireTokens()
	_, err = h.session.Do(ctx, listFlavors)
	var ae *AuthError
	require.ErrorAs(t, err, &ae)
	assert.True(t, plugin.IsPermanent(err))
}

func TestKeystoneOutageIsRetried(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{RetryBaseDelay: time.Second})
	h.cloud.Inject(fakecloud.Fault{Service: fakecloud.Identity, Path: "/v3/auth/tokens", Status: 503, Times: 1})
	resp, err := h.session.Do(context.Background(), listFlavors)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []time.Duration{time.Second}, h.slept())

	h2 := newHarness(t, fakecloud.Options{}, Options{MaxAttempts: 2})
	h2.cloud.Inject(fakecloud.Fault{Service: fakecloud.Identity, Path: "/v3/auth/tokens", Status: 503})
	_, err = h2.session.Do(context.Background(), listFlavors)
	require.Error(t, err)
	assert.Equal(t, `authenticating to cloud "local-admin": Keystone answered 503 Service Unavailable`, err.Error())
	assert.False(t, plugin.IsPermanent(err), "an outage may end; the readiness loop retries it")
}

func TestWrongAuthURLIsPermanent(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	h.cloud.Inject(fakecloud.Fault{Service: fakecloud.Identity, Path: "/v3/auth/tokens", Status: http.StatusNotFound})
	_, err := h.session.Do(context.Background(), listFlavors)
	require.Error(t, err)
	assert.True(t, plugin.IsPermanent(err))
	assert.Contains(t, err.Error(), `Secret ns1/creds: Keystone answered 404 Not Found; check auth.auth_url "`+h.cloud.AuthURL()+`"`)
	assert.Empty(t, h.slept())
}

func TestUnreachableCloudHasAStableMessage(t *testing.T) {
	// A port nothing listens on: bind one, then close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	yaml := "clouds:\n  c:\n    auth:\n      auth_url: http://" + addr + "/v3\n      username: u\n      password: p\n      project_name: p\n      project_domain_name: Default\n      user_domain_name: Default\n"
	sec := &secrets{data: map[string]map[string][]byte{"ns1/creds": {"clouds.yaml": []byte(yaml)}}}
	s, err := NewConnector(sec, Options{MaxAttempts: 1}).Connect(context.Background(),
		plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: "c"})
	require.NoError(t, err)
	_, err = s.Do(context.Background(), listFlavors)
	require.Error(t, err)
	assert.Equal(t, `authenticating to cloud "c": connection refused (`+addr+`)`, err.Error())
	var te *TransportError
	require.True(t, errors.As(err, &te))
	assert.True(t, te.NotSent)
	assert.False(t, plugin.IsPermanent(err))
	assert.NotRegexp(t, regexp.MustCompile(`->|req-`), err.Error(), "no client port or request id in the message")
}

// A Retry-After the run's deadline cannot wait out goes to the plugin at once: sleeping would
// only spend the budget the rest of the run needs.
func TestRetryAfterPastTheDeadlineIsNotWaited(t *testing.T) {
	h := newHarness(t, fakecloud.Options{}, Options{})
	h.cloud.Inject(fakecloud.Fault{Path: "/v2.0/flavors", Status: 429, RetryAfter: "30", Times: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.session.Do(ctx, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/flavors"})
	require.NoError(t, err)
	assert.Equal(t, 429, resp.StatusCode)
	assert.Empty(t, h.slept())
	assert.Contains(t, h.logs.String(), "not waiting to retry past the run's deadline")
}

// Every attempt is counted by service, method and status class, with its latency; retry waits by
// reason.
func TestSessionRecordsMetrics(t *testing.T) {
	rec := metrics.NewFile()
	h := newHarness(t, fakecloud.Options{}, Options{Metrics: rec})
	h.cloud.Inject(fakecloud.Fault{Path: "/v2.0/flavors", Status: 503, RetryAfter: "1", Times: 1})
	_, err := h.session.Do(context.Background(), plugin.Request{Service: "network", Method: "GET", Path: "v2.0/flavors"})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "metrics.json")
	require.NoError(t, rec.Flush(path, "g"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(data)
	for _, want := range []string{
		`"name":"openstack_sync_openstack_requests_total","group":"g","action":"add","value":1,"labels":{"method":"GET","plugin":"test-plugin","service":"network","status_class":"5xx"}`,
		`"name":"openstack_sync_openstack_requests_total","group":"g","action":"add","value":1,"labels":{"method":"GET","plugin":"test-plugin","service":"network","status_class":"2xx"}`,
		`"name":"openstack_sync_openstack_request_duration_seconds_count","group":"g","action":"add","value":2,"labels":{"method":"GET","plugin":"test-plugin","service":"network"}`,
		`"name":"openstack_sync_openstack_retry_waits_total","group":"g","action":"add","value":1,"labels":{"plugin":"test-plugin","reason":"retry_after","service":"network"}`,
	} {
		assert.Contains(t, text, want)
	}
}

// Authenticate, run ahead of a session's first request, asks Keystone once: a token serves the
// requests after it, a refusal is final as the first request's would be, and an outage is left
// to the first request's own attempts, without a retry or a backoff of its own.
func TestAuthenticateAheadAsksKeystoneOnce(t *testing.T) {
	ctx := context.Background()
	tokens := "/v3/auth/tokens"
	tests := []struct {
		name string
		// setup breaks Keystone before Authenticate.
		setup         func(h *harness)
		authErr       string
		tokenRequests int // after Authenticate
		// after the first request
		doErr         string
		totalRequests int
	}{
		{name: "a token serves the first request", tokenRequests: 1, totalRequests: 1},
		{name: "a refusal is final", setup: func(h *harness) { h.cloud.SetPassword("admin", "rotated") },
			authErr: "Keystone answered 401 Unauthorized", tokenRequests: 1,
			doErr: "Keystone answered 401 Unauthorized", totalRequests: 1},
		{name: "an outage is the first request's to retry",
			setup: func(h *harness) {
				h.cloud.Inject(fakecloud.Fault{Service: fakecloud.Identity, Path: tokens, Status: 503, Times: 1})
			},
			authErr: "Keystone answered 503 Service Unavailable", tokenRequests: 1, totalRequests: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, fakecloud.Options{}, Options{})
			if tt.setup != nil {
				tt.setup(h)
			}
			a, ok := plugin.Session(h.session).(plugin.Authenticator)
			require.True(t, ok, "an OpenStack session authenticates ahead")
			err := a.Authenticate(ctx)
			if tt.authErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tt.authErr)
			}
			assert.Len(t, h.transport.sent(tokens), tt.tokenRequests)
			assert.Empty(t, h.slept(), "Authenticate makes one attempt")
			_, err = h.session.Do(ctx, listFlavors)
			if tt.doErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tt.doErr)
			}
			assert.Len(t, h.transport.sent(tokens), tt.totalRequests)
		})
	}
}
