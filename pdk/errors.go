package pdk

import "github.com/openstack-sync/openstack-sync/pdk/abi"

// The error markers are package abi's, which the host reads too: the reason and permanence a
// plugin's error carries reach the host as the same markers (docs/abi.md, "error_set").

// ReasonError carries a CamelCase reason for the CR's Ready condition (e.g. "FlavorConflict").
type ReasonError = abi.ReasonError

// WithReason attaches a condition reason to err (nil stays nil).
func WithReason(reason string, err error) error { return abi.WithReason(reason, err) }

// Reason returns the reason carried by err, or "".
func Reason(err error) string { return abi.Reason(err) }

// Permanent marks err as one that retrying cannot fix (bad configuration, an API too old,
// a call outside the grants). From WaitForAPI it stops the readiness loop at once.
func Permanent(err error) error { return abi.Permanent(err) }

// IsPermanent reports whether any error in err's chain says it is permanent.
func IsPermanent(err error) bool { return abi.IsPermanent(err) }

// HostError is a request the host refused or could not complete: there is no HTTP response.
type HostError struct {
	// Kind says why (abi.Kind*): "grant_denied" (outside the plugin's grants, or the operator's narrowing),
	// "invalid_request" (a request the host will not send: bad method, path, header, or no
	// session in this entry point), "session" (the cloud could not be reached or refused the
	// credentials; permanent when waiting will not help) or "too_large" (the response exceeds
	// the host's size limit). Source requests (Context.Source) add "source_denied" (the operator
	// allow-lists no such source or URL for the plugin; permanent), "secret" (the credential's
	// Secret or key is missing, empty or unsendable; permanent unless the Kubernetes API failed)
	// and "source" (the source could not be reached).
	Kind    string
	Message string
	// IsPermanent is true when retrying cannot help (refused credentials, a missing grant).
	IsPermanent bool
}

func (e *HostError) Error() string   { return e.Message }
func (e *HostError) Permanent() bool { return e.IsPermanent }
