package openstack

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
	"syscall"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// AuthError is Keystone refusing a credential group's credentials (401 or 403 when a token is
// requested). Retrying cannot fix it, so it is permanent and the group fails at once. Its message
// is stable: no request id, time or response text.
type AuthError struct {
	Credentials plugin.Credentials
	// Status is Keystone's answer, 401 or 403.
	Status int
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("OpenStack refused the credentials of cloud %q in Secret %s/%s: Keystone answered %d %s; check the user, password and project in its clouds.yaml",
		e.Credentials.CloudName, e.Credentials.Namespace, e.Credentials.SecretName, e.Status, http.StatusText(e.Status))
}

// Permanent marks the error for plugin.IsPermanent.
func (e *AuthError) Permanent() bool { return true }

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
	// Final is true when waiting cannot help, e.g. a certificate the Secret's CA bundle does not
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

// classifyTransport turns an http.Client error into a TransportError. timeout is the per-request
// limit, named when it expired.
func classifyTransport(op, host string, err error, timeout time.Duration) *TransportError {
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
		te.Cause, te.NotSent, te.Final = "TLS certificate not trusted (set the Secret's CA bundle or fix the endpoint)", true, true
	case errors.Is(err, context.DeadlineExceeded):
		te.Cause = fmt.Sprintf("no response within %s", timeout)
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF):
		te.Cause = "connection reset by the server"
	default:
		te.Cause = "request failed: " + stableText(err)
	}
	return te
}

// addrRE matches "ip:port" pairs, whose client port changes with every connection.
var addrRE = regexp.MustCompile(`(\[[0-9a-fA-F:]+\]|\d{1,3}(\.\d{1,3}){3}):\d+(->(\[[0-9a-fA-F:]+\]|\d{1,3}(\.\d{1,3}){3}):\d+)?`)

// stableText is the innermost cause of err without addresses, so it does not vary between runs.
func stableText(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	return addrRE.ReplaceAllString(err.Error(), "<address>")
}
