// Package invalidspec marks the errors of a spec that can never converge as written. The plugins'
// logic stays free of the PDK and returns an *Error; their Reconcile handlers turn it into the
// InvalidSpec condition reason, which tells the operator to fix the CR rather than wait for a retry.
package invalidspec

import (
	"errors"
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// Reason is the Ready-condition reason of a CR whose spec can never converge.
const Reason = "InvalidSpec"

// Error is a spec problem no retry will fix.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

// Errorf returns an *Error with the formatted message, which should name the offending field.
func Errorf(format string, args ...any) error {
	return &Error{msg: fmt.Sprintf(format, args...)}
}

// WithReason gives err the InvalidSpec reason when its chain holds an *Error, and returns any other
// error (nil included) unchanged.
func WithReason(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return pdk.WithReason(Reason, err)
	}
	return err
}
