package abi

import "errors"

// The error markers both sides read: an entry point's error crosses the boundary as an Error
// whose Reason and Permanent the PDK takes from these markers on the plugin's error, and the host
// puts them back on the error it makes of it, so package plugin (host) and package pdk (guest)
// mark and read errors alike. Each side names them in its own package (plugin.WithReason,
// pdk.WithReason, ...); the types are these.

// ReasonError is a failure that names its own CamelCase reason for the CR's Ready condition (e.g.
// "FlavorConflict"; ValidReason says which the host accepts). Only this type sets the reason; any
// other error reports the default reason.
type ReasonError struct {
	Reason string
	Err    error
}

func (e *ReasonError) Error() string { return e.Err.Error() }
func (e *ReasonError) Unwrap() error { return e.Err }

// WithReason attaches a condition reason to err (nil stays nil).
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

// Permanent marks err as one that retrying cannot fix (nil stays nil): a configuration error, an
// API too old, a call outside the grants, credentials OpenStack refused.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether any error in err's chain says it is permanent: the marker is a
// `Permanent() bool` method, so errors of packages that import neither side (and the PDK's
// HostError) can say it too.
func IsPermanent(err error) bool {
	var p interface{ Permanent() bool }
	return errors.As(err, &p) && p.Permanent()
}
