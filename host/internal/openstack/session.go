package openstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gcopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/httpretry"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// reauthMargin is how long before a token's expiry the session fetches a new one, so a request is
// never sent with a token that dies in flight.
const reauthMargin = time.Minute

type session struct {
	creds   plugin.Credentials
	cfg     *cloudConfig
	opts    Options
	limiter *rate.Limiter
	client  *http.Client
	log     *slog.Logger
	// userAgent names the host and the plugin, so cloud operators can tell who sent a request.
	userAgent string

	// sleep waits between retries; tests replace it to observe the delays without waiting.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter picks a delay in [0, d]; tests replace it to make backoff deterministic.
	jitter func(d time.Duration) time.Duration

	mu sync.Mutex
	pc *gophercloud.ProviderClient
	// refused remembers Keystone refusing the credentials, so a run does not hammer Keystone
	// (and risk a lockout) with a password it already rejected.
	refused error
}

func newSession(creds plugin.Credentials, cfg *cloudConfig, opts Options, limiter *rate.Limiter) *session {
	transport := opts.Transport
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg.tls
		transport = t
	}
	return &session{
		creds: creds, cfg: cfg, opts: opts, limiter: limiter,
		// Redirects are not followed: a redirect elsewhere would carry the token off the cloud.
		client: &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
		log: opts.Logger.With("plugin", opts.Plugin, "namespace", creds.Namespace,
			"secret", creds.SecretName, "cloud", creds.CloudName),
		userAgent: strings.TrimSuffix("openstack-sync "+opts.Plugin, " "),
		sleep:     httpretry.Sleep,
		jitter:    func(d time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(d) + 1)) },
	}
}

// provider returns the authenticated provider client, authenticating on first use.
func (s *session) provider(ctx context.Context) (*gophercloud.ProviderClient, error) {
	return s.authenticate(ctx, s.opts.MaxAttempts)
}

// Authenticate implements plugin.Authenticator with one token request and no retries: it runs
// ahead of the session's first request (while the plugin compiles), and a transient failure is
// left to that request's own attempts, so a failing Keystone is not asked more often than before.
// A token, or a refusal, is kept as the first request would keep it.
func (s *session) Authenticate(ctx context.Context) error {
	_, err := s.authenticate(ctx, 1)
	return err
}

func (s *session) authenticate(ctx context.Context, maxAttempts int) (*gophercloud.ProviderClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused != nil {
		return nil, s.refused
	}
	if s.pc != nil {
		return s.pc, nil
	}
	pc, err := gcopenstack.NewClient(s.cfg.auth.IdentityEndpoint)
	if err != nil {
		return nil, plugin.Permanent(fmt.Errorf("cloud %q in Secret %s/%s: auth_url %q: %v",
			s.creds.CloudName, s.creds.Namespace, s.creds.SecretName, s.cfg.auth.IdentityEndpoint, err))
	}
	pc.HTTPClient = *s.client
	pc.UserAgent.Prepend("openstack-sync")
	pc.UseTokenLock()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
		err = gcopenstack.Authenticate(actx, pc, s.cfg.auth)
		cancel()
		if err == nil {
			s.pc = pc
			return pc, nil
		}
		err = s.authFailure(ctx, err)
		if plugin.IsPermanent(err) || ctx.Err() != nil || attempt >= maxAttempts {
			return nil, err
		}
		// Asking Keystone for a token twice is harmless, so every transient failure is retried.
		if serr := s.sleep(ctx, s.backoff(attempt)); serr != nil {
			return nil, err
		}
	}
}

// authFailure turns a failed token request into a stable error; refusals become AuthError.
func (s *session) authFailure(ctx context.Context, err error) error {
	for _, code := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		if gophercloud.ResponseCodeIs(err, code) {
			ae := &AuthError{Credentials: s.creds, Status: code}
			s.refused = ae
			return ae
		}
	}
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if errors.As(err, &unexpected) && unexpected.Actual == http.StatusNotFound {
		// No token API at that URL: the clouds.yaml is wrong, and waiting will not fix it.
		return plugin.Permanent(fmt.Errorf("authenticating to cloud %q in Secret %s/%s: Keystone answered 404 Not Found; check auth.auth_url %q",
			s.creds.CloudName, s.creds.Namespace, s.creds.SecretName, s.cfg.auth.IdentityEndpoint))
	}
	if errors.As(err, &unexpected) {
		return fmt.Errorf("authenticating to cloud %q: Keystone answered %d %s", s.creds.CloudName,
			unexpected.Actual, http.StatusText(unexpected.Actual))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	host := ""
	if u, perr := url.Parse(s.cfg.auth.IdentityEndpoint); perr == nil {
		host = u.Host
	}
	return classifyTransport(fmt.Sprintf("authenticating to cloud %q", s.creds.CloudName), host, err, s.opts.RequestTimeout)
}

// reauthenticate replaces a token the cloud no longer accepts; a refusal is an AuthError.
func (s *session) reauthenticate(ctx context.Context, pc *gophercloud.ProviderClient, old string) error {
	actx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	if err := pc.Reauthenticate(actx, old); err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.authFailure(ctx, err)
	}
	return nil
}

func (s *session) backoff(attempt int) time.Duration {
	return s.jitter(httpretry.Backoff(s.opts.RetryBaseDelay, s.opts.RetryMaxDelay, attempt))
}

// Do sends one request, retrying what is safe to retry. Non-2xx answers are returned as
// responses; errors are for requests that got no usable answer.
func (s *session) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	p, err := prepare(req)
	if err != nil {
		return nil, err
	}
	pc, err := s.provider(ctx)
	if err != nil {
		return nil, err
	}
	eo := gophercloud.EndpointOpts{Region: s.cfg.region, Availability: s.cfg.iface}
	eo.ApplyDefaults(req.Service)
	endpoint, err := pc.EndpointLocator(eo)
	if err != nil {
		return nil, plugin.Permanent(fmt.Errorf("the catalog of cloud %q has no %q endpoint (interface %s, region %q)",
			s.creds.CloudName, req.Service, s.cfg.iface, s.cfg.region))
	}
	target, err := joinEndpoint(endpoint, p.path, req.Query)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.op, err)
	}
	return s.send(ctx, pc, p, target)
}

func (s *session) send(ctx context.Context, pc *gophercloud.ProviderClient, p *prepared, target *url.URL) (*plugin.Response, error) {
	reauthed := false
	for attempt := 1; ; attempt++ {
		if s.limiter != nil {
			if err := s.limiter.Wait(ctx); err != nil {
				return nil, fmt.Errorf("%s: waiting for the request rate limit: %w", p.op, err)
			}
		}
		token := pc.Token()
		if exp := pc.TokenExpiry(); !exp.IsZero() && time.Until(exp) < reauthMargin {
			// A token that still lives is better than none when Keystone has a blip; a refusal is final.
			if err := s.reauthenticate(ctx, pc, token); err != nil && (plugin.IsPermanent(err) || time.Until(exp) <= 0) {
				return nil, err
			}
			token = pc.Token()
		}
		start := time.Now()
		resp, err := s.attempt(ctx, p, target, token)
		elapsed := time.Since(start)
		s.record(p, resp, elapsed)
		if err != nil {
			var te *TransportError
			if ctx.Err() != nil || !errors.As(err, &te) {
				return nil, err
			}
			s.log.DebugContext(ctx, "openstack request failed", "method", p.method, "service", p.service,
				"path", p.path, "error", te.Cause, "duration", elapsed, "attempt", attempt)
			// A request that may have reached the server is only re-sent when sending it twice is
			// harmless; one that never left may always be re-sent.
			if attempt < s.opts.MaxAttempts && !te.Final && (te.NotSent || httpretry.Idempotent(p.method)) {
				if s.sleep(ctx, s.backoff(attempt)) == nil {
					continue
				}
			}
			return nil, err
		}
		s.log.DebugContext(ctx, "openstack request", "method", p.method, "service", p.service, "path", p.path,
			"status", resp.StatusCode, "duration", elapsed, "attempt", attempt)

		switch {
		case resp.StatusCode == http.StatusUnauthorized && !reauthed:
			// The token expired or was revoked: a 401 means nothing was done, so any method is re-sent.
			reauthed = true
			if err := s.reauthenticate(ctx, pc, token); err != nil {
				return nil, err
			}
			attempt--
			continue
		case resp.StatusCode == http.StatusTooManyRequests && attempt < s.opts.MaxAttempts,
			httpretry.RetryableStatus(resp.StatusCode) && httpretry.Idempotent(p.method) && attempt < s.opts.MaxAttempts:
			// A 429 means the server refused to process the request, so even a POST may be sent
			// again; a 502/503/504 only for a method that is harmless twice.
			if s.waitToRetry(ctx, p, resp, attempt) {
				continue
			}
		}
		return resp, nil
	}
}

// waitToRetry sleeps before re-sending after resp and reports whether to re-send. A Retry-After
// (429 or 503) is honoured up to MaxRetryAfter; a longer one, or one the caller's deadline (the
// run's time budget) cannot wait out, returns the answer to the plugin at once instead of holding
// the run.
func (s *session) waitToRetry(ctx context.Context, p *prepared, resp *plugin.Response, attempt int) bool {
	wait, ok := time.Duration(0), false
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		wait, ok = httpretry.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	reason := "retry_after"
	if !ok {
		wait, reason = s.backoff(attempt), "backoff"
	}
	if ok && wait > s.opts.MaxRetryAfter {
		s.log.InfoContext(ctx, "not waiting for the Retry-After OpenStack asked for; the answer goes to the plugin",
			"service", p.service, "method", p.method, "status", resp.StatusCode, "retry_after", wait, "max", s.opts.MaxRetryAfter)
		return false
	}
	if dl, has := ctx.Deadline(); has && time.Until(dl) < wait {
		s.log.InfoContext(ctx, "not waiting to retry past the run's deadline; the answer goes to the plugin",
			"service", p.service, "method", p.method, "status", resp.StatusCode, "wait", wait)
		return false
	}
	metrics.Add(s.opts.Metrics, metrics.RetryWaits, 1, s.opts.Plugin, p.service, reason)
	return s.sleep(ctx, wait) == nil
}

// attempt sends the request once and reads the bounded answer.
func (s *session) attempt(ctx context.Context, p *prepared, target *url.URL, token string) (*plugin.Response, error) {
	actx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	var body io.Reader
	if p.body != nil {
		body = bytes.NewReader(p.body)
	}
	hreq, err := http.NewRequestWithContext(actx, p.method, target.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.op, err)
	}
	for k, vs := range p.header {
		hreq.Header[k] = append([]string(nil), vs...)
	}
	hreq.Header.Set("X-Auth-Token", token)
	hreq.Header.Set("User-Agent", s.userAgent)
	if p.validatesOwnToken {
		hreq.Header.Set("X-Subject-Token", token)
	}
	// The caller's own cancellation is not the server's fault, so it is not a TransportError.
	failed := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w", p.op, ctx.Err())
		}
		return classifyTransport(p.op, target.Host, err, s.opts.RequestTimeout)
	}
	resp, err := s.client.Do(hreq)
	if err != nil {
		return nil, failed(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, s.opts.MaxResponseBytes+1))
	if err != nil {
		return nil, failed(err)
	}
	if int64(len(data)) > s.opts.MaxResponseBytes {
		return nil, &plugin.TooLargeError{Op: p.op, Size: int64(len(data)), Limit: s.opts.MaxResponseBytes}
	}
	header := resp.Header.Clone()
	// Tokens never reach a plugin.
	for _, h := range plugin.CredentialHeaders {
		header.Del(h)
	}
	return &plugin.Response{StatusCode: resp.StatusCode, Header: header, Body: redactTokens(data, token)}, nil
}

// record counts one attempt: its status class ("error" without an answer) and its latency.
func (s *session) record(p *prepared, resp *plugin.Response, elapsed time.Duration) {
	m := s.opts.Metrics
	if m == nil {
		return
	}
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	metrics.Add(m, metrics.Requests, 1, s.opts.Plugin, p.service, p.method, metrics.StatusClass(code))
	metrics.Observe(m, metrics.RequestDuration, elapsed.Seconds(), s.opts.Plugin, p.service, p.method)
}

// prepared is a validated request.
type prepared struct {
	service, method, path string
	op                    string
	header                http.Header
	body                  []byte
	validatesOwnToken     bool
}

var (
	serviceRE      = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	microversionRE = regexp.MustCompile(`^(\d+\.\d+|latest)$`)
	methods        = map[string]bool{http.MethodGet: true, http.MethodHead: true, http.MethodPost: true,
		http.MethodPut: true, http.MethodPatch: true, http.MethodDelete: true}
)

// microversionHeaders maps a catalog service type to its OpenStack-API-Version service name and
// its legacy per-service header, for the services that have microversions.
var microversionHeaders = map[string]struct{ name, legacy string }{
	"baremetal":               {"baremetal", "X-OpenStack-Ironic-API-Version"},
	"baremetal-introspection": {"baremetal-introspection", "X-OpenStack-Ironic-Inspector-API-Version"},
	"compute":                 {"compute", "X-OpenStack-Nova-API-Version"},
	"shared-file-system":      {"shared-file-system", "X-OpenStack-Manila-API-Version"},
	"sharev2":                 {"shared-file-system", "X-OpenStack-Manila-API-Version"},
	"block-storage":           {"volume", ""},
	"volume":                  {"volume", ""},
	"volumev3":                {"volume", ""},
	"placement":               {"placement", ""},
}

func prepare(req plugin.Request) (*prepared, error) {
	p := &prepared{service: req.Service, method: strings.ToUpper(req.Method), body: req.Body}
	p.op = fmt.Sprintf("%s %s %q", p.method, req.Service, req.Path)
	if !serviceRE.MatchString(req.Service) {
		return nil, fmt.Errorf("%s: service %q is not a catalog service type such as \"network\"", p.op, req.Service)
	}
	if !methods[p.method] {
		return nil, fmt.Errorf("%s: method %q is not one of GET, HEAD, POST, PUT, PATCH, DELETE", p.op, req.Method)
	}
	path, err := cleanPath(req.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.op, err)
	}
	p.path = path
	p.header = http.Header{}
	for k, vs := range req.Header {
		ck := http.CanonicalHeaderKey(k)
		if !plugin.Forwardable(ck) {
			return nil, fmt.Errorf("%s: header %s is not one a plugin may send (allowed: %s)", p.op, ck, plugin.ForwardableHeaders())
		}
		p.header[ck] = vs
	}
	if p.header.Get("Accept") == "" {
		p.header.Set("Accept", "application/json")
	}
	if len(req.Body) > 0 && p.header.Get("Content-Type") == "" {
		p.header.Set("Content-Type", "application/json")
	}
	if req.Microversion != "" {
		if !microversionRE.MatchString(req.Microversion) {
			return nil, fmt.Errorf("%s: microversion %q is not MAJOR.MINOR or \"latest\"", p.op, req.Microversion)
		}
		mv, ok := microversionHeaders[req.Service]
		if !ok {
			mv.name = req.Service
		}
		p.header.Set("OpenStack-API-Version", mv.name+" "+req.Microversion)
		if mv.legacy != "" {
			p.header.Set(mv.legacy, req.Microversion)
		}
	}
	// Validating the session's own token (Keystone HEAD/GET /v3/auth/tokens) is the connectivity
	// probe; the session fills in the token the plugin never sees. Other token calls are refused.
	// Compared decoded: Keystone decodes "auth/%74okens" into the token API too. cleanPath has
	// checked every escape.
	decoded, _ := url.PathUnescape(path)
	if req.Service == "identity" && strings.TrimPrefix(decoded, "v3/") == "auth/tokens" {
		if p.method != http.MethodGet && p.method != http.MethodHead {
			return nil, fmt.Errorf("%s: the host manages tokens; only HEAD or GET (validate the session's own token) are allowed", p.op)
		}
		p.validatesOwnToken = true
	}
	return p, nil
}

// cleanPath checks a plugin path is relative to the endpoint and cannot climb out of it.
func cleanPath(path string) (string, error) {
	switch {
	case strings.Contains(path, "://") || strings.HasPrefix(path, "//"):
		return "", fmt.Errorf("path must be relative to the service endpoint, not a URL")
	case strings.ContainsAny(path, "?#"):
		return "", fmt.Errorf("path must not hold a query or fragment; use Request.Query")
	case strings.ContainsFunc(path, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }):
		return "", fmt.Errorf("path holds a space, control character or backslash; escape path segments with url.PathEscape")
	}
	path = strings.TrimPrefix(path, "/")
	if path == "" {
		return "", nil
	}
	for seg := range strings.SplitSeq(path, "/") {
		dec, err := url.PathUnescape(seg)
		if err != nil {
			return "", fmt.Errorf("path segment %q is not validly escaped", seg)
		}
		if dec == "." || dec == ".." || strings.ContainsAny(dec, "/\\") {
			return "", fmt.Errorf("path segment %q would leave the service endpoint", seg)
		}
		if seg == "" {
			return "", fmt.Errorf("path has an empty segment")
		}
	}
	return path, nil
}

var versionSegmentRE = regexp.MustCompile(`^v\d+(\.\d+)?$`)

// joinEndpoint puts a cleaned path under an endpoint. Catalogs list some endpoints with their API
// version ("http://keystone/v3/") and some without ("http://ironic/"); plugin paths always start
// with the version, so a version the endpoint already ends with is not repeated.
func joinEndpoint(endpoint, path string, query url.Values) (*url.URL, error) {
	base, err := url.Parse(endpoint)
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("the catalog endpoint %q is not a URL", endpoint)
	}
	basePath := strings.TrimSuffix(base.EscapedPath(), "/")
	if first, rest, _ := strings.Cut(path, "/"); versionSegmentRE.MatchString(first) && strings.HasSuffix(basePath, "/"+first) {
		path = rest
	}
	u, err := url.Parse(base.Scheme + "://" + base.Host + basePath + "/" + path)
	if err != nil {
		return nil, fmt.Errorf("path %q does not form a URL: %v", path, err)
	}
	if u.Scheme != base.Scheme || u.Host != base.Host || !strings.HasPrefix(u.EscapedPath(), basePath+"/") {
		return nil, fmt.Errorf("path %q leaves the service endpoint", path)
	}
	if len(query) > 0 {
		u.RawQuery = query.Encode()
	}
	return u, nil
}
