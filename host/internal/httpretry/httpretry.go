// Package httpretry holds what every outbound HTTP proxy of the host decides the same way: what a
// request that got no answer means (TransportError, in words that stay the same from run to run),
// which answers may be waited out and sent again (Idempotent, RetryableStatus, RetryAfter), and
// how long to wait (Backoff). The OpenStack session and the source proxy both use it, so an
// outage of Nautobot is retried, timed and reported exactly as an outage of Neutron.
package httpretry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// TransportError is a request that got no HTTP answer. Its message names the cause in stable
// words (no ephemeral ports), so a status message built from it stays the same run after run.
type TransportError struct {
	// Op names the request, e.g. `GET network "v2.0/flavors"`.
	Op string
	// Host is the server that was addressed.
	Host string
	// Cause is a stable description, e.g. "connection refused".
	Cause string
	// NotSent is true when the request certainly never reached the server (it could not connect),
	// so even a POST may be sent again.
	NotSent bool
	// Final is true when waiting cannot help, e.g. a certificate the configured CA bundle does not
	// vouch for.
	Final bool
	Err   error
}

// Permanent marks an untrusted certificate as permanent for plugin.IsPermanent; outages are not.
func (e *TransportError) Permanent() bool { return e.Final }

func (e *TransportError) Error() string {
	return fmt.Sprintf("%s: %s (%s)", e.Op, e.Cause, e.Host)
}

func (e *TransportError) Unwrap() error { return e.Err }

// Classify turns an http.Client error into a TransportError. timeout is the per-request limit,
// named when it expired; caHint says where the trusted CA bundle is set, for the certificate case.
func Classify(op, host string, err error, timeout time.Duration, caHint string) *TransportError {
	te := &TransportError{Op: op, Host: host, Err: err}
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &dnsErr):
		te.Cause, te.NotSent = "cannot resolve the host name", true
	case errors.Is(err, syscall.ECONNREFUSED):
		te.Cause, te.NotSent = "connection refused", true
	case errors.As(err, &opErr) && opErr.Op == "dial":
		te.Cause, te.NotSent = "cannot connect", true
	case errors.As(err, &certErr) || errors.As(err, &unknownAuth) || errors.As(err, &hostErr):
		te.Cause, te.NotSent, te.Final = "TLS certificate not trusted ("+caHint+")", true, true
	case errors.Is(err, context.DeadlineExceeded):
		te.Cause = fmt.Sprintf("no response within %s", timeout)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF):
		te.Cause = "connection reset by the server"
	default:
		te.Cause = "request failed: " + StableText(err)
	}
	return te
}

// addrRE matches "ip:port" pairs, whose client port changes with every connection.
var addrRE = regexp.MustCompile(`(\[[0-9a-fA-F:]+\]|\d{1,3}(\.\d{1,3}){3}):\d+(->(\[[0-9a-fA-F:]+\]|\d{1,3}(\.\d{1,3}){3}):\d+)?`)

// StableText is the innermost cause of err without addresses, so it does not vary between runs.
func StableText(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return addrRE.ReplaceAllString(err.Error(), "<address>")
}

// Idempotent reports whether sending a request with method twice is harmless.
func Idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// RetryableStatus reports whether an answer says the server (or a proxy in front of it) could
// not serve the request now: 502, 503, 504.
func RetryableStatus(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// RetryAfter reads a Retry-After header: delay seconds or an HTTP date.
func RetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// Backoff is the upper bound of the wait before attempt+1: base doubled per attempt, capped at
// most; the caller draws the actual wait below it (full jitter).
func Backoff(base, most time.Duration, attempt int) time.Duration {
	d := base << min(attempt-1, 20)
	if d <= 0 || d > most {
		d = most
	}
	return d
}

// Sleep waits d or until ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SetDefaults gives each limit that is zero or negative the default every outbound proxy shares
// (OpenStack's session and the sources'): 30 s per request, 4 attempts, waits from 500 ms doubling
// to at most 10 s, and a Retry-After honoured up to a minute.
func SetDefaults(requestTimeout *time.Duration, maxAttempts *int, baseDelay, maxDelay, maxRetryAfter *time.Duration) {
	orDefault := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	orDefault(requestTimeout, 30*time.Second)
	if *maxAttempts <= 0 {
		*maxAttempts = 4
	}
	orDefault(baseDelay, 500*time.Millisecond)
	orDefault(maxDelay, 10*time.Second)
	orDefault(maxRetryAfter, time.Minute)
}
