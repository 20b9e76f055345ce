// Package source proxies plugin requests to the sources of truth outside OpenStack that the
// operator allow-lists per plugin (<P>_SOURCES, docs/abi.md section 8): an IPAM such as Nautobot,
// a CMDB. It is the source twin of package openstack, and follows the same rules:
//
//   - A request names a source the plugin declares (the wasm host checks the declaration) and the
//     base URL its CR names; the URL must be one the operator lists for that source, compared
//     after normalisation (hookenv.SourceURL), or the request is refused (SourceDenied) naming the
//     URLs allowed. The host never connects anywhere else: the path is joined under the base URL
//     and must stay there, and redirects are never followed.
//   - The credential is a key of a Secret in the credential group's namespace (the CR's own,
//     docs/contract.md Decision 4). The host reads it, sends it in the source's auth header and
//     keeps it out of everything the plugin gets back: response headers that carry credentials
//     are removed, and the credential (raw, escaped, encoded, in any letter case) is replaced by
//     [redacted] in every header value and body. Errors and log lines never hold it.
//   - Requests are bounded and retried as OpenStack's are (package httpretry): a per-attempt
//     timeout, GET/HEAD/PUT/DELETE retried on connection failures, timeouts and 502/503/504, any
//     method after 429 or when the request never left, Retry-After honoured up to MaxRetryAfter
//     and never past the caller's deadline; a response body over MaxResponseBytes is refused
//     (plugin.TooLargeError). Each source has its own rate limit (rate, burst).
package source

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/httpretry"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// SecretReader reads a Secret's data. A missing Secret is a *kubeapi.APIError with code 404.
type SecretReader interface {
	GetSecretData(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// Options tune the proxy. The zero value is usable.
type Options struct {
	// Logger receives one debug line per request. Default: slog.Default().
	Logger *slog.Logger
	// Plugin names the plugin in log lines and the User-Agent.
	Plugin string
	// Prefix is the hook's env prefix, named in refusals (<Prefix>_SOURCES).
	Prefix string
	// RequestTimeout bounds one attempt, reading the body included. Default 30s.
	RequestTimeout time.Duration
	// MaxResponseBytes bounds a response body. Default plugin.MaxResponseBytes.
	MaxResponseBytes int64
	// MaxAttempts is how many times a retryable request is tried. Default 4; 1 disables retries.
	MaxAttempts int
	// RetryBaseDelay is the first backoff, doubled per retry with full jitter. Default 500ms.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps one backoff. Default 10s.
	RetryMaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After waited for. Default 60s.
	MaxRetryAfter time.Duration
	// Transport replaces the HTTP transport of every source (tests). Default: a clone of
	// http.DefaultTransport trusting the source's CA when it names one.
	Transport http.RoundTripper
	// Sleep waits between attempts; tests replace it. Default: a timer that honours ctx.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = plugin.MaxResponseBytes
	}
	httpretry.SetDefaults(&o.RequestTimeout, &o.MaxAttempts, &o.RetryBaseDelay, &o.RetryMaxDelay, &o.MaxRetryAfter)
	return o
}

// Proxy sends the requests of one hook run to the allow-listed sources.
type Proxy struct {
	opts    Options
	secrets SecretReader
	byName  map[string][]*target
	log     *slog.Logger
	agent   string
	jitter  func(d time.Duration) time.Duration

	mu sync.Mutex
	// creds holds each credential read this run, by namespace/name/key: one Secret read serves
	// every request (and every CR) that names it.
	creds map[secretID]*credential
}

// target is one allow-listed URL of a source.
type target struct {
	hookenv.Source
	client  *http.Client
	limiter *rate.Limiter
}

type secretID struct{ namespace, name, key string }

// New returns the proxy of one run over the operator's sources.
func New(secrets SecretReader, sources []hookenv.Source, opts Options) (*Proxy, error) {
	opts = opts.withDefaults()
	p := &Proxy{opts: opts, secrets: secrets, byName: map[string][]*target{}, creds: map[secretID]*credential{},
		log:    opts.Logger.With("plugin", opts.Plugin),
		agent:  "openstack-sync " + opts.Plugin,
		jitter: func(d time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(d) + 1)) }}
	for _, s := range sources {
		transport := opts.Transport
		if transport == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			if s.CA != "" {
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM([]byte(s.CA)) {
					return nil, fmt.Errorf("source %s (%s): ca holds no readable PEM certificate", s.Name, s.URL)
				}
				t.TLSClientConfig.RootCAs = pool
			}
			// No proxy from the environment: the request must reach the allow-listed host itself.
			t.Proxy = nil
			transport = t
		}
		tg := &target{Source: s, client: &http.Client{Transport: transport,
			// A redirect would take the credential to whatever host it names.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
		if s.Rate > 0 {
			tg.limiter = rate.NewLimiter(rate.Limit(s.Rate), s.Burst)
		}
		p.byName[s.Name] = append(p.byName[s.Name], tg)
	}
	return p, nil
}

// Wrap returns a connector whose sessions also reach the sources (plugin.SourceSender), each
// bound to its credential group's namespace; inner itself when there are no sources, so a plugin
// that asks for one is refused by the wasm host as not allow-listed.
func Wrap(inner plugin.Connector, p *Proxy) plugin.Connector {
	if p == nil || len(p.byName) == 0 {
		return inner
	}
	return &connector{inner: inner, proxy: p}
}

// WrapConnector is Wrap over a new proxy of sources: what each command's connector does with
// the sources the hook read (hook.ConnectorOptions.Sources).
func WrapConnector(inner plugin.Connector, secrets SecretReader, sources []hookenv.Source, opts Options) plugin.Connector {
	if len(sources) == 0 {
		return inner
	}
	p, err := New(secrets, sources, opts)
	if err != nil {
		return failing{plugin.Permanent(err)}
	}
	return Wrap(inner, p)
}

// failing is a connector whose every group fails: the sources could not be set up.
type failing struct{ err error }

func (f failing) Connect(context.Context, plugin.Credentials) (plugin.Session, error) {
	return nil, f.err
}

type connector struct {
	inner plugin.Connector
	proxy *Proxy
}

func (c *connector) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	s, err := c.inner.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	return &session{Session: s, proxy: c.proxy, namespace: creds.Namespace}, nil
}

// session is the group's OpenStack session with the sources beside it.
type session struct {
	plugin.Session
	proxy     *Proxy
	namespace string
}

func (s *session) DoSource(ctx context.Context, req plugin.SourceRequest) (*plugin.Response, error) {
	return s.proxy.Do(ctx, s.namespace, req)
}

// Authenticate passes the ahead-of-time token request on to the OpenStack session.
func (s *session) Authenticate(ctx context.Context) error {
	if a, ok := s.Session.(plugin.Authenticator); ok {
		return a.Authenticate(ctx)
	}
	return nil
}
