package plugin

import "errors"

// ReasonError is a failure that names its own CamelCase reason for the CR's Ready condition.
// Only this type sets the reason; any other error reports the default reason.
type ReasonError struct {
	Reason string
	Err    error
}

func (e *ReasonError) Error() string { return e.Err.Error() }
func (e *ReasonError) Unwrap() error { return e.Err }

// WithReason attaches a condition reason to err.
func WithReason(reason string, err error) error {
	if err == nil {
		return nil
	}
	return &ReasonError{Reason: reason, Err: err}
}

// Reason returns the reason carried by err, or "" when it carries none.
func Reason(err error) string {
	var re *ReasonError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ""
}

// permanentError marks an error that retrying will not fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string   { return e.err.Error() }
func (e *permanentError) Unwrap() error   { return e.err }
func (e *permanentError) Permanent() bool { return true }

// Permanent marks err as one that retrying cannot fix: a configuration error, an API too old, or
// credentials that OpenStack refused. The readiness loop stops at once on such an error.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether any error in err's chain says it is permanent. Packages that must
// not import this one mark their errors with a `Permanent() bool` method.
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}

// SandboxRefusal names how the sandbox stopped a plugin call: "grant" (an OpenStack request outside
// the plugin's grants), "limit" (a time, memory or size limit) or "trap" (a panic, trap or ABI
// fault); "" when err is no such stop. The runtime marks its errors with a `SandboxRefusal()
// string` method, so this package needs no import of it.
func SandboxRefusal(err error) string {
	var r interface{ SandboxRefusal() string }
	if errors.As(err, &r) {
		return r.SandboxRefusal()
	}
	return ""
}
