package abi

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The markers survive wrapping, since both sides read them through errors.As on errors that
// callers wrap with fmt.Errorf("...: %w").
func TestErrorMarkers(t *testing.T) {
	base := errors.New("flavor f1 is in use")
	for name, c := range map[string]struct {
		err       error
		reason    string
		permanent bool
	}{
		"plain":                {base, "", false},
		"reason":               {WithReason("FlavorConflict", base), "FlavorConflict", false},
		"permanent":            {Permanent(base), "", true},
		"both, wrapped":        {fmt.Errorf("reconcile: %w", Permanent(WithReason("InvalidSpec", base))), "InvalidSpec", true},
		"a foreign marker":     {foreignPermanent{}, "", true},
		"nil reason stays nil": {WithReason("X", nil), "", false},
		"nil permanent is nil": {Permanent(nil), "", false},
	} {
		assert.Equal(t, c.reason, Reason(c.err), name)
		assert.Equal(t, c.permanent, IsPermanent(c.err), name)
	}
	assert.Nil(t, WithReason("X", nil))
	assert.Nil(t, Permanent(nil))
	assert.ErrorIs(t, Permanent(WithReason("R", base)), base)
}

// foreignPermanent is an error of a package that imports neither side (the PDK's HostError, an
// OpenStack session's) saying it is permanent by the method alone.
type foreignPermanent struct{}

func (foreignPermanent) Error() string   { return "refused" }
func (foreignPermanent) Permanent() bool { return true }
