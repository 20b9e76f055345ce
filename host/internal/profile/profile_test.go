package profile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/profile"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want profile.Profile
		err  string
	}{
		{in: "", want: profile.OpenStackSync},
		{in: "openstack-sync", want: profile.OpenStackSync},
		{in: "understack", want: profile.Understack},
		{in: "Understack", err: `must be openstack-sync or understack; got "Understack"`},
		{in: " understack", err: `must be openstack-sync or understack; got " understack"`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := profile.Parse(tt.in)
			if tt.err != "" {
				assert.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestIdentifiers(t *testing.T) {
	var zero profile.Profile
	assert.Equal(t, "openstack-sync.io/finalizer", zero.Finalizer(), "the zero value is this project's profile")
	assert.Equal(t, "openstack-sync", zero.String())
	assert.Equal(t, "openstack-sync.understack.rackspace.net/finalizer", profile.Understack.Finalizer())
	assert.Equal(t, profile.Understack, zero.Other())
	assert.Equal(t, profile.OpenStackSync, profile.Understack.Other())
	assert.True(t, profile.Understack.OriginalStatus())
	assert.False(t, zero.OriginalStatus())
}
