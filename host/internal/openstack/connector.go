// Package openstack turns a credential group (a clouds.yaml entry in a Kubernetes Secret) into a
// plugin.Session that proxies plugin requests to OpenStack. It is the only package of the host
// that imports gophercloud, which it uses for Keystone authentication, re-authentication and the
// catalog; requests themselves go through the session's own HTTP client so that retries, limits
// and logging follow the rules below.
//
// What a plugin can rely on (plugin.Request):
//
//   - Service is a catalog type ("network", "baremetal", "identity"); the endpoint comes from the
//     catalog with the clouds.yaml interface and region.
//   - Path is relative to that endpoint and starts with the API version ("v2.0/flavors",
//     "v1/runbooks/CUSTOM_X"); a version the catalog URL already ends with is not repeated, "" is
//     the endpoint root. Segments must be escaped; "." and ".." (also escaped), URLs, "//host",
//     queries and fragments in Path are refused.
//   - Credential and framing headers (X-Auth-Token, Authorization, Cookie, Host, ...) and the
//     microversion headers cannot be set; Microversion sends both OpenStack-API-Version and the
//     service's legacy header (X-OpenStack-Ironic-API-Version for baremetal).
//   - HEAD or GET identity "v3/auth/tokens" validates the session's own token (the connectivity
//     probe); no other token call is allowed, and token headers never appear in a Response.
//   - Any HTTP status is a Response. Errors mean no usable answer: an AuthError (permanent) when
//     Keystone refuses the credentials, a TransportError for connection failures and timeouts, or
//     a bad request. Messages are stable from run to run.
//   - GET, HEAD, PUT and DELETE are retried with exponential backoff and full jitter on connection
//     failures, timeouts and 502/503/504; any method is retried when the request never left (the
//     connection was refused) and after 429. A Retry-After on a 429 or 503 is honoured up to
//     MaxRetryAfter and never past the context's deadline (the run's time budget); past either,
//     the answer goes to the plugin at once. A POST or PATCH that may have reached the server is
//     never re-sent. A 401 triggers one re-authentication and re-send.
package openstack

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/httpretry"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// SecretReader reads a Secret's data. A missing Secret is a *kubeapi.APIError with code 404.
type SecretReader interface {
	GetSecretData(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// The Secret keys of a credential group. No caller names other keys, so they are not options.
const (
	// cloudsKey holds the clouds.yaml text (docs/contract.md §4.1).
	cloudsKey = "clouds.yaml"
	// caKey holds an optional PEM CA bundle, since the hook reads no files.
	caKey = "cacert"
)

// Options tune the connector. The zero value is usable.
type Options struct {
	// Logger receives one debug line per request. Default: slog.Default().
	Logger *slog.Logger
	// Plugin names the plugin in log lines.
	Plugin string
	// RequestTimeout bounds one attempt of one request, reading the body included. Default 30s.
	RequestTimeout time.Duration
	// MaxResponseBytes bounds a response body. Default plugin.MaxResponseBytes; tests set less.
	MaxResponseBytes int64
	// MaxAttempts is how many times a retryable request is tried. Default 4; 1 disables retries.
	MaxAttempts int
	// RetryBaseDelay is the first backoff; each retry doubles it, with full jitter. Default 500ms.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps one backoff. Default 10s.
	RetryMaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After (429, or 503 on a method safe to repeat) the
	// session waits for; a longer one, or one past the context's deadline, returns the answer to
	// the plugin. Default 60s.
	MaxRetryAfter time.Duration
	// RateLimit is the plugin's request rate limit in requests per second; 0 means unlimited.
	RateLimit rate.Limit
	// RateBurst is the limiter's burst. Default 1.
	RateBurst int
	// Metrics counts requests, their latency and retry waits; nil records nothing.
	Metrics metrics.Recorder
	// Transport replaces the HTTP transport (tests). Default: a clone of http.DefaultTransport
	// with the cloud's TLS settings.
	Transport http.RoundTripper
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = plugin.MaxResponseBytes
	}
	httpretry.SetDefaults(&o.RequestTimeout, &o.MaxAttempts, &o.RetryBaseDelay, &o.RetryMaxDelay, &o.MaxRetryAfter)
	if o.RateBurst <= 0 {
		o.RateBurst = 1
	}
	return o
}

type connector struct {
	secrets SecretReader
	opts    Options
	limiter *rate.Limiter

	mu       sync.Mutex
	sessions map[plugin.Credentials]*session
}

// NewConnector returns a plugin.Connector that reads credentials with secrets. Sessions are
// memoised per credential group for the connector's life (one hook run); all of them share one
// rate limiter, so Options.RateLimit bounds the plugin as a whole.
func NewConnector(secrets SecretReader, opts Options) plugin.Connector {
	opts = opts.withDefaults()
	c := &connector{secrets: secrets, opts: opts, sessions: map[plugin.Credentials]*session{}}
	if opts.RateLimit > 0 {
		c.limiter = rate.NewLimiter(opts.RateLimit, opts.RateBurst)
	}
	return c
}

// Connect reads the group's Secret and prepares its session. It does not authenticate: that
// happens on the first request, so an outage surfaces in the readiness probe, where it is retried.
// Errors in the Secret itself are permanent and name the Secret and key.
func (c *connector) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	switch {
	case creds.Namespace == "":
		return nil, plugin.Permanent(fmt.Errorf("credentials %s: the namespace is empty", creds))
	case creds.SecretName == "":
		return nil, plugin.Permanent(fmt.Errorf("credentials %s: cloudCredentialsRef.secretName is empty", creds))
	case creds.CloudName == "":
		return nil, plugin.Permanent(fmt.Errorf("credentials %s: cloudCredentialsRef.cloudName is empty", creds))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[creds]; ok {
		return s, nil
	}
	cfg, err := c.readCloud(ctx, creds)
	if err != nil {
		return nil, err
	}
	s := newSession(creds, cfg, c.opts, c.limiter)
	c.sessions[creds] = s
	return s, nil
}

func (c *connector) readCloud(ctx context.Context, creds plugin.Credentials) (*cloudConfig, error) {
	secret := fmt.Sprintf("Secret %s/%s", creds.Namespace, creds.SecretName)
	data, err := c.secrets.GetSecretData(ctx, creds.Namespace, creds.SecretName)
	if kubeapi.IsNotFound(err) {
		return nil, plugin.Permanent(fmt.Errorf("%s not found (named by cloudCredentialsRef.secretName)", secret))
	}
	if err != nil {
		// An API server hiccup or missing RBAC; the caller decides whether to retry.
		return nil, fmt.Errorf("reading %s: %w", secret, err)
	}
	text, ok := data[cloudsKey]
	if !ok {
		return nil, plugin.Permanent(fmt.Errorf("%s has no key %q", secret, cloudsKey))
	}
	caWhere := fmt.Sprintf("%s key %q", secret, caKey)
	var pool *x509.CertPool
	if pem, ok := data[caKey]; ok {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, plugin.Permanent(fmt.Errorf("%s holds no readable PEM certificate", caWhere))
		}
	}
	cfg, err := parseCloud(fmt.Sprintf("%s key %q", secret, cloudsKey), string(text), creds.CloudName, pool, caWhere)
	if err != nil {
		return nil, plugin.Permanent(err)
	}
	return cfg, nil
}
