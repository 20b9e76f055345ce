package invalidspec_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

func TestWithReason(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		reason string
	}{
		{"an invalid spec", invalidspec.Errorf("spec.name must be set"), "InvalidSpec"},
		{"a wrapped invalid spec", fmt.Errorf("profile 0: %w", invalidspec.Errorf("bad driver")), "InvalidSpec"},
		{"any other failure", errors.New("HTTP 503"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := invalidspec.WithReason(tc.err)
			assert.Equal(t, tc.reason, pdk.Reason(got))
			assert.EqualError(t, got, tc.err.Error(), "the message is kept as is")
		})
	}
	assert.NoError(t, invalidspec.WithReason(nil))
}
