package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

func TestMetadata(t *testing.T) {
	p := pdk.Registered()
	require.NotNil(t, p)
	assert.True(t, p.Metadata.Probe)
	assert.Equal(t, "OPENSTACK_PROBE", p.Metadata.EnvPrefix)
	assert.Nil(t, p.Prune)
	assert.Nil(t, p.Reconcile)
}

func TestProbe(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		err       string
		permanent bool
	}{
		{name: "valid token", status: 200},
		{name: "token refused", status: 401, err: "Keystone did not accept the token", permanent: true},
		{name: "token unknown", status: 404, err: "Keystone did not accept the token", permanent: true},
		{name: "keystone down", status: 503, err: "HTTP 503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Script: []pdktest.Exchange{
				{Service: "identity", Method: "HEAD", Path: tokensPath, Status: tc.status},
			}})
			err := pdk.Registered().WaitForAPI(ctx)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
			assert.Equal(t, tc.permanent, pdk.IsPermanent(err))
		})
	}
}
