package source

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// token is the credential every test Secret holds; no answer, error or log line may carry it.
const token = "0123456789abcdef0123456789abcdef01234567"

// secrets is a SecretReader over "namespace/name" → data, counting reads.
type secrets struct {
	mu    sync.Mutex
	data  map[string]map[string][]byte
	err   error
	reads int
}

func (s *secrets) GetSecretData(_ context.Context, namespace, name string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return nil, s.err
	}
	d, ok := s.data[namespace+"/"+name]
	if !ok {
		return nil, &kubeapi.APIError{Code: 404, Body: "secrets \"" + name + "\" not found"}
	}
	return d, nil
}

func tokenSecrets() *secrets {
	return &secrets{data: map[string]map[string][]byte{"team-a/nautobot": {"token": []byte(token + "\n")}}}
}

// server is a source that records what reached it.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

type fixture struct {
	proxy   *Proxy
	secrets *secrets
	logs    *bytes.Buffer
	slept   []time.Duration
}

func newFixture(t *testing.T, sources []hookenv.Source, o Options) *fixture {
	t.Helper()
	f := &fixture{secrets: tokenSecrets(), logs: &bytes.Buffer{}}
	o.Logger = slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Plugin, o.Prefix = "neutron-subnet-pools", "NEUTRON_SUBNET_POOL"
	o.Sleep = func(_ context.Context, d time.Duration) error { f.slept = append(f.slept, d); return nil }
	for i := range sources {
		if sources[i].Burst == 0 {
			sources[i].Burst = 1
		}
		if sources[i].Auth.Header == "" {
			sources[i].Auth = hookenv.SourceAuth{Header: "Authorization", Scheme: "Token"}
		}
	}
	p, err := New(f.secrets, sources, o)
	require.NoError(t, err)
	f.proxy = p
	t.Cleanup(func() {
		assert.NotContains(t, f.logs.String(), token, "the credential never reaches a log line")
	})
	return f
}

func nautobot(u string) hookenv.Source {
	n, _ := hookenv.SourceURL(u)
	return hookenv.Source{Name: "nautobot", URL: n}
}

func get(url, path string) plugin.SourceRequest {
	return plugin.SourceRequest{Source: "nautobot", URL: url, Secret: &plugin.SecretKeyRef{Name: "nautobot", Key: "token"},
		Method: "GET", Path: path}
}

// refusal asserts err is a SourceError of kind, free of the credential, and returns its text.
func refusal(t *testing.T, err error, kind string) string {
	t.Helper()
	var se *plugin.SourceError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, kind, se.Kind)
	assert.NotContains(t, se.Error(), token)
	return se.Error()
}

func TestTheCredentialIsSentOnlyToTheAllowListedSource(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"count":0,"results":[]}`) })
	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
	resp, err := f.proxy.Do(context.Background(), "team-a", get(src.URL+"/", "api/ipam/prefixes/"))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	reqs := src.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "Token "+token, reqs[0].Header.Get("Authorization"), "the host adds the credential")
	assert.Equal(t, "/api/ipam/prefixes/", reqs[0].URL.Path, "the trailing slash is sent as written")
	assert.Equal(t, "application/json", reqs[0].Header.Get("Accept"))
	assert.Equal(t, "openstack-sync neutron-subnet-pools", reqs[0].Header.Get("User-Agent"))
}

// Every way a plugin could point the request elsewhere is refused before a connection is made
// and before the Secret is read.
func TestARequestNeverLeavesTheAllowListedURL(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	evil := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	u, _ := url.Parse(src.URL)
	cases := []struct {
		name, url, path, kind, says string
	}{
		{"another host", evil.URL, "api/", plugin.SourceDenied, "is not an allow-listed URL of this source (allowed: " + src.URL + ")"},
		{"a host ending like the allowed one", "http://x" + u.Host, "api/", plugin.SourceDenied, "not an allow-listed URL"},
		{"user information pointing elsewhere", "http://" + u.Host + "@" + strings.TrimPrefix(evil.URL, "http://"), "api/", plugin.SourceDenied, "must not hold user information"},
		{"user information alone", "http://user:pw@" + u.Host, "api/", plugin.SourceDenied, "must not hold user information"},
		{"another scheme", "https://" + u.Host, "api/", plugin.SourceDenied, "not an allow-listed URL"},
		{"another base path", src.URL + "/other", "api/", plugin.SourceDenied, "not an allow-listed URL"},
		{"a query in the URL", src.URL + "/?next=" + evil.URL, "api/", plugin.SourceDenied, "must not hold a query or fragment"},
		{"a fragment in the URL", src.URL + "#x", "api/", plugin.SourceDenied, "must not hold a query or fragment"},
		{"not a URL", "nautobot", "api/", plugin.SourceDenied, "must be an http or https URL"},
		{"an empty URL", "", "api/", plugin.SourceDenied, "must be an http or https URL"},
		{"a path that climbs out", src.URL, "../../evil/", plugin.SourceInvalid, "unsafe path"},
		{"an encoded climb", src.URL, "api/%2e%2e/%2E%2e/", plugin.SourceInvalid, "unsafe path"},
		{"an absolute URL as the path", src.URL, evil.URL + "/api/", plugin.SourceInvalid, "unsafe path"},
		{"a host-relative path", src.URL, "//" + strings.TrimPrefix(evil.URL, "http://") + "/", plugin.SourceInvalid, "unsafe path"},
		{"a query in the path", src.URL, "api/?x=1", plugin.SourceInvalid, "unsafe path"},
		{"an encoded slash", src.URL, "api/a%2Fb/", plugin.SourceInvalid, "unsafe path"},
		{"a backslash", src.URL, `api\..\x`, plugin.SourceInvalid, "unsafe path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
			_, err := f.proxy.Do(context.Background(), "team-a", get(c.url, c.path))
			assert.Contains(t, refusal(t, err, c.kind), c.says)
			assert.Zero(t, f.secrets.reads, "the Secret is not even read")
		})
	}
	assert.Empty(t, src.requests())
	assert.Empty(t, evil.requests(), "nothing reached the other host")

	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
	req := get(src.URL, "api/")
	req.Source = "netbox"
	_, err := f.proxy.Do(context.Background(), "team-a", req)
	assert.Equal(t, `source "netbox": the operator allow-lists no source of that name for this plugin (NEUTRON_SUBNET_POOL_SOURCES)`,
		refusal(t, err, plugin.SourceDenied))
}

// The same allow-listed URL written another way is the same source.
func TestEquivalentSpellingsOfTheURLMatch(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	u, _ := url.Parse(src.URL)
	f := newFixture(t, []hookenv.Source{nautobot(src.URL + "/nautobot/")}, Options{})
	for _, spelling := range []string{src.URL + "/nautobot", src.URL + "/nautobot/", "HTTP://" + strings.ToUpper(u.Host) + "/nautobot"} {
		_, err := f.proxy.Do(context.Background(), "team-a", get(spelling, "api/status/"))
		require.NoError(t, err, spelling)
	}
	for _, r := range src.requests() {
		assert.Equal(t, "/nautobot/api/status/", r.URL.Path)
	}
	_, err := f.proxy.Do(context.Background(), "team-a", get(src.URL+"/NAUTOBOT", "api/status/"))
	refusal(t, err, plugin.SourceDenied)
}

// A redirect is handed to the plugin as an answer; the credential never follows it.
func TestRedirectsAreNotFollowed(t *testing.T) {
	evil := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	for _, code := range []int{301, 302, 303, 307, 308} {
		src := newServer(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, evil.URL+"/steal", code)
		})
		f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
		resp, err := f.proxy.Do(context.Background(), "team-a", get(src.URL, "api/ipam/prefixes"))
		require.NoError(t, err)
		assert.Equal(t, code, resp.StatusCode)
		assert.Equal(t, evil.URL+"/steal", resp.Header.Get("Location"))
	}
	assert.Empty(t, evil.requests(), "no redirect was followed")
}

// Servers (and proxies in front of them) echo requests back in every form; the plugin gets none
// of the credential.
func TestReflectedCredentialsAreScrubbed(t *testing.T) {
	forms := map[string]string{
		"raw":                       token,
		"upper case":                strings.ToUpper(token),
		"header value":              "Token " + token,
		"query escape":              url.QueryEscape("Token " + token),
		"base64":                    base64.StdEncoding.EncodeToString([]byte(token)),
		"base64url":                 base64.RawURLEncoding.EncodeToString([]byte(token)),
		"base64 of a Bearer header": base64.StdEncoding.EncodeToString([]byte("Bearer " + token)),
		"base64 of basic auth":      base64.StdEncoding.EncodeToString([]byte("u:" + token)),
		"hex":                       fmt.Sprintf("%x", token),
	}
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		echo, _ := json.Marshal(map[string]any{"headers": r.Header, "forms": forms})
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		w.Header().Set("X-Echo-Upper", strings.ToUpper(r.Header.Get("Authorization")))
		w.Header().Set("Set-Cookie", "sessionid="+token)
		w.Header().Set("Authorization", r.Header.Get("Authorization"))
		w.Header().Set("WWW-Authenticate", `Token realm="`+token+`"`)
		w.Header().Set("X-"+token, "named after the credential")
		_, _ = w.Write(echo)
	})
	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
	resp, err := f.proxy.Do(context.Background(), "team-a", get(src.URL, "api/echo/"))
	require.NoError(t, err)
	all := string(resp.Body) + fmt.Sprint(resp.Header)
	for name, form := range forms {
		assert.NotContains(t, strings.ToLower(all), strings.ToLower(form), "the %s form of the credential", name)
	}
	assert.Empty(t, resp.Header.Values("Set-Cookie"))
	assert.Empty(t, resp.Header.Values("Authorization"))
	assert.Equal(t, "Token [redacted]", resp.Header.Get("X-Echo"))
	assert.Contains(t, string(resp.Body), "[redacted]")
	var echoed map[string]any
	require.NoError(t, json.Unmarshal(resp.Body, &echoed), "scrubbing keeps the JSON readable")
}

// A plugin cannot set a header that carries, replaces or reroutes the credential, nor smuggle a
// line break; none of it reaches the source.
func TestHeaderInjectionIsRefused(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
	for _, h := range []map[string][]string{
		{"Authorization": {"Token mine"}}, {"authorization": {"x"}}, {"Proxy-Authorization": {"x"}}, {"Cookie": {"a=b"}},
		{"Host": {"evil.example"}}, {"X-Forwarded-Host": {"evil.example"}}, {"Forwarded": {"host=evil"}},
		{"X-Original-URL": {"/admin"}}, {"X-HTTP-Method-Override": {"DELETE"}}, {"X-Object-Meta-A": {"b"}},
		{"Accept": {"application/json\r\nAuthorization: Token mine"}}, {"If-Match": {"a\nb"}},
	} {
		req := get(src.URL, "api/")
		req.Header = h
		_, err := f.proxy.Do(context.Background(), "team-a", req)
		refusal(t, err, plugin.SourceInvalid)
	}
	assert.Empty(t, src.requests())

	req := get(src.URL, "api/")
	req.Header = http.Header{"Accept": {"application/json; version=2.0"}, "If-None-Match": {`"abc"`}}
	_, err := f.proxy.Do(context.Background(), "team-a", req)
	require.NoError(t, err)
	r := src.requests()[0]
	assert.Equal(t, "application/json; version=2.0", r.Header.Get("Accept"))
	assert.Equal(t, "Token "+token, r.Header.Get("Authorization"), "the host's credential, not the plugin's")
}

func TestSecretFaultsNameTheSecretAndKey(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	cases := []struct {
		name      string
		data      map[string]map[string][]byte
		apiErr    error
		ref       plugin.SecretKeyRef
		want      string
		permanent bool
	}{
		{"missing Secret", nil, nil, plugin.SecretKeyRef{Name: "nautobot", Key: "token"}, "Secret team-a/nautobot not found", true},
		{"missing key", map[string]map[string][]byte{"team-a/nautobot": {"other": []byte(token)}}, nil,
			plugin.SecretKeyRef{Name: "nautobot", Key: "token"}, `Secret team-a/nautobot has no key "token"`, true},
		{"empty key", map[string]map[string][]byte{"team-a/nautobot": {"token": []byte(" \n")}}, nil,
			plugin.SecretKeyRef{Name: "nautobot", Key: "token"}, `Secret team-a/nautobot key "token" is empty`, true},
		{"a line break inside", map[string]map[string][]byte{"team-a/nautobot": {"token": []byte(token + "\r\nX-Evil: 1")}}, nil,
			plugin.SecretKeyRef{Name: "nautobot", Key: "token"}, `Secret team-a/nautobot key "token" holds a line break or control character; it cannot be sent as a header`, true},
		{"too short to scrub", map[string]map[string][]byte{"team-a/nautobot": {"token": []byte("abc")}}, nil,
			plugin.SecretKeyRef{Name: "nautobot", Key: "token"}, "shorter than 8 characters", true},
		{"the API server fails", nil, errors.New("connection refused"), plugin.SecretKeyRef{Name: "nautobot", Key: "token"},
			"reading Secret team-a/nautobot: connection refused", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
			f.secrets.data, f.secrets.err = c.data, c.apiErr
			req := get(src.URL, "api/")
			req.Secret = &c.ref
			_, err := f.proxy.Do(context.Background(), "team-a", req)
			assert.Contains(t, refusal(t, err, plugin.SourceSecret), c.want)
			assert.Equal(t, c.permanent, plugin.IsPermanent(err))
			_, err = f.proxy.Do(context.Background(), "team-a", req)
			require.Error(t, err)
			if c.permanent {
				assert.Equal(t, 1, f.secrets.reads, "a permanent fault is read once per run")
			} else {
				assert.Equal(t, 2, f.secrets.reads, "an API failure is not kept")
			}
		})
	}
	assert.Empty(t, src.requests(), "nothing is sent without its credential")
}

// The credential is read in the namespace of the credential group that asks: another
// namespace's Secret of the same name is another credential.
func TestTheSecretIsReadInTheGroupsNamespace(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
	for range 3 {
		_, err := f.proxy.Do(context.Background(), "team-a", get(src.URL, "api/"))
		require.NoError(t, err)
	}
	assert.Equal(t, 1, f.secrets.reads, "one read serves the run")
	_, err := f.proxy.Do(context.Background(), "team-b", get(src.URL, "api/"))
	assert.Equal(t, "Secret team-b/nautobot not found", refusal(t, err, plugin.SourceSecret))
}

func TestARequestWithoutASecretCarriesNoCredential(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
	req := get(src.URL, "api/status/")
	req.Secret = nil
	_, err := f.proxy.Do(context.Background(), "team-a", req)
	require.NoError(t, err)
	assert.Empty(t, src.requests()[0].Header.Get("Authorization"))
	assert.Zero(t, f.secrets.reads)
}

func TestAnswersAreSizeLimited(t *testing.T) {
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(bytes.Repeat([]byte("x"), 2048)) })
	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{MaxResponseBytes: 1024})
	_, err := f.proxy.Do(context.Background(), "team-a", get(src.URL, "api/"))
	var tl *plugin.TooLargeError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, int64(1024), tl.Limit)
}

func TestTimeoutsAndOutagesAreRetriedWithStableWords(t *testing.T) {
	var calls atomic.Int32
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	f := newFixture(t, []hookenv.Source{nautobot(slow.URL)}, Options{RequestTimeout: 20 * time.Millisecond, MaxAttempts: 3})
	_, err := f.proxy.Do(context.Background(), "team-a", get(slow.URL, "api/"))
	u, _ := url.Parse(slow.URL)
	assert.Equal(t, "GET nautobot api/: no response within 20ms ("+u.Host+")", refusal(t, err, plugin.SourceUnreachable))
	assert.False(t, plugin.IsPermanent(err))
	assert.EqualValues(t, 3, calls.Load(), "a GET is tried MaxAttempts times")
	assert.Len(t, f.slept, 2)

	down := newServer(t, func(w http.ResponseWriter, r *http.Request) {})
	downURL := down.URL
	down.Close()
	f = newFixture(t, []hookenv.Source{nautobot(downURL)}, Options{MaxAttempts: 2})
	req := get(downURL, "api/")
	req.Method = "POST"
	_, err = f.proxy.Do(context.Background(), "team-a", req)
	assert.Contains(t, refusal(t, err, plugin.SourceUnreachable), "POST nautobot api/: connection refused")
	assert.Len(t, f.slept, 1, "a request that never left is sent again, even a POST")
}

func TestRetryAfterAsForOpenStack(t *testing.T) {
	var n atomic.Int32
	src := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch n.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(429)
		case 2:
			w.WriteHeader(503)
		default:
			_, _ = io.WriteString(w, "{}")
		}
	})
	f := newFixture(t, []hookenv.Source{nautobot(src.URL)}, Options{})
	resp, err := f.proxy.Do(context.Background(), "team-a", get(src.URL, "api/"))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	require.Len(t, f.slept, 2)
	assert.Equal(t, 3*time.Second, f.slept[0], "the Retry-After is honoured")

	long := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(429)
	})
	f = newFixture(t, []hookenv.Source{nautobot(long.URL)}, Options{})
	resp, err = f.proxy.Do(context.Background(), "team-a", get(long.URL, "api/"))
	require.NoError(t, err)
	assert.Equal(t, 429, resp.StatusCode, "a Retry-After past MaxRetryAfter goes to the plugin")
	assert.Empty(t, f.slept)

	var posts atomic.Int32
	busy := newServer(t, func(w http.ResponseWriter, r *http.Request) { posts.Add(1); w.WriteHeader(503) })
	f = newFixture(t, []hookenv.Source{nautobot(busy.URL)}, Options{})
	req := get(busy.URL, "api/")
	req.Method = "POST"
	resp, err = f.proxy.Do(context.Background(), "team-a", req)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.EqualValues(t, 1, posts.Load(), "a POST that may have reached the server is not sent twice")
}

func TestNoSourcesNoWrapping(t *testing.T) {
	inner := connectorFunc(func(context.Context, plugin.Credentials) (plugin.Session, error) { return nil, nil })
	p, err := New(tokenSecrets(), nil, Options{})
	require.NoError(t, err)
	_, isWrapped := Wrap(inner, p).(*connector)
	assert.False(t, isWrapped)
	p, err = New(tokenSecrets(), []hookenv.Source{nautobot("https://nautobot.example")}, Options{})
	require.NoError(t, err)
	s, err := Wrap(inner, p).Connect(context.Background(), plugin.Credentials{Namespace: "team-a"})
	require.NoError(t, err)
	_, ok := s.(plugin.SourceSender)
	assert.True(t, ok)
}

type connectorFunc func(context.Context, plugin.Credentials) (plugin.Session, error)

func (f connectorFunc) Connect(ctx context.Context, c plugin.Credentials) (plugin.Session, error) {
	return f(ctx, c)
}
