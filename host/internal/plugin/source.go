package plugin

import (
	"context"
	"net/http"
	"net/url"
)

// SourceRequest is one request to a source of truth outside OpenStack (an IPAM, a CMDB), which
// the operator allow-lists per plugin (docs/abi.md, section 8). The plugin names the source, the
// base URL its CR names and, when the source needs one, the Secret key holding the credential; it
// never holds the credential itself.
type SourceRequest struct {
	// Source is the source's name as the plugin declares it and the operator lists it.
	Source string
	// URL is the base URL the CR names; it must be an allow-listed URL of Source.
	URL string
	// Secret names the credential, a key of a Secret in the credential group's namespace; nil
	// sends the request without one.
	Secret *SecretKeyRef
	Method string
	// Path is relative to URL; it never holds a scheme, host, query or fragment.
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
}

// SecretKeyRef names one key of a Secret (its namespace is the credential group's).
type SecretKeyRef struct {
	Name string
	Key  string
}

// SourceSender is implemented by a session that also reaches the operator's allow-listed sources
// for its credential group: the group's namespace is where each source credential is read, the
// same rule as the cloud credentials (docs/contract.md Decision 4). A non-2xx answer is a
// Response; an error means there is none, and is a *SourceError.
type SourceSender interface {
	DoSource(ctx context.Context, req SourceRequest) (*Response, error)
}

// Kinds of SourceError. Each names the rule that refused, for the plugin and the CR's status.
const (
	// SourceDenied: the request names a source or URL the operator does not allow-list for the
	// plugin, or the hook has no sources at all. Permanent.
	SourceDenied = "source_denied"
	// SourceSecret: the credential could not be read (Secret missing, key missing or empty, a
	// value that cannot be sent). Permanent, except a Kubernetes API failure while reading it.
	SourceSecret = "secret"
	// SourceUnreachable: the source gave no answer (connection refused, timeout, TLS not trusted).
	SourceUnreachable = "source"
	// SourceInvalid: a malformed request (method, path, header). Permanent.
	SourceInvalid = "invalid_request"
)

// SourceError is a source request the host did not answer with a Response. Its message is
// stable (no address, port or time) and never holds the credential.
type SourceError struct {
	Kind string
	// Final says retrying cannot help.
	Final bool
	Err   error
}

func (e *SourceError) Error() string   { return e.Err.Error() }
func (e *SourceError) Unwrap() error   { return e.Err }
func (e *SourceError) Permanent() bool { return e.Final }
