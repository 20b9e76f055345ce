package plugin

import (
	"errors"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// The error markers are the ABI's (package abi), which the PDK sets on a plugin's error: a
// reason and permanence mean the same on both sides of the boundary.

// ReasonError is a failure that names its own CamelCase reason for the CR's Ready condition.
// Only this type sets the reason; any other error reports the default reason.
type ReasonError = abi.ReasonError

// WithReason attaches a condition reason to err.
func WithReason(reason string, err error) error { return abi.WithReason(reason, err) }

// Reason returns the reason carried by err, or "" when it carries none.
func Reason(err error) string { return abi.Reason(err) }

// Permanent marks err as one that retrying cannot fix: a configuration error, an API too old, or
// credentials that OpenStack refused. The readiness loop stops at once on such an error.
func Permanent(err error) error { return abi.Permanent(err) }

// IsPermanent reports whether any error in err's chain says it is permanent. Packages that must
// not import this one mark their errors with a `Permanent() bool` method.
func IsPermanent(err error) bool { return abi.IsPermanent(err) }

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
