package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

var obj = pdk.Object{Kind: "NeutronSegmentRange", Namespace: "openstack", Name: "r"}

func TestMetadata(t *testing.T) {
	p := pdk.Registered()
	require.NotNil(t, p)
	assert.Equal(t, "NEUTRON_SEGMENT_RANGE", p.Metadata.EnvPrefix)
	assert.Equal(t, "neutron-segment-ranges", p.Metadata.BindingName)
	assert.Equal(t, pdk.Cleanup{WhenPrune: pdk.CleanupNone, WhenNoPrune: pdk.CleanupNone}, p.Metadata.Cleanup,
		"segment ranges are never pruned, whatever PRUNE says")
	assert.Nil(t, p.Prune)
}

func TestReconcileThroughThePDK(t *testing.T) {
	f := loadFake(t)
	cache := map[string]any{}
	newCtx := func() *pdk.Context {
		return pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.handle, Cache: cache})
	}
	spec := map[string]any{"name": "edge", "network_type": "vxlan", "minimum": 4000, "maximum": 4099}

	ctx := newCtx()
	res, err := pdktest.Reconcile(ctx, nil, obj, spec)
	require.NoError(t, err, "every call the plugin makes is inside its declared grants")
	assert.Empty(t, res.Notes)
	assert.Len(t, f.byName("edge"), 1)

	ctx = newCtx()
	_, err = pdktest.Reconcile(ctx, nil, obj, spec)
	require.NoError(t, err)
	assert.Empty(t, pdktest.Of(t, ctx).Requests(), "the group's cached list serves a second CR without a request")

	spec["network_type"] = "geneve"
	_, err = pdktest.Reconcile(newCtx(), nil, obj, spec)
	require.ErrorContains(t, err, "network_type: have='vxlan' want='geneve'")
	assert.Equal(t, "ImmutableFieldChanged", pdk.Reason(err))

	_, err = pdktest.Reconcile(newCtx(), nil, obj, map[string]any{"name": "x", "network_type": "vlan", "minimum": 3, "maximum": 2, "physical_network": "p"})
	require.ErrorContains(t, err, "the range is empty")
	assert.Equal(t, "InvalidSpec", pdk.Reason(err))
}

func TestWaitForAPIPolicyRefusalIsPermanent(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Script: []pdktest.Exchange{
		{Service: "network", Method: "GET", Path: rangesPath, Status: 403, Body: pdktest.NeutronFault("rule:get_network_segment_range is disallowed by policy")},
	}})
	err := pdk.Registered().WaitForAPI(ctx)
	require.ErrorContains(t, err, "disallowed by policy")
	assert.True(t, pdk.IsPermanent(err))

	ctx = pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Script: []pdktest.Exchange{
		{Service: "network", Method: "GET", Path: rangesPath, Status: 503, Body: pdktest.NeutronFault("starting")},
	}})
	err = pdk.Registered().WaitForAPI(ctx)
	require.Error(t, err)
	assert.False(t, pdk.IsPermanent(err), "an outage is retried")
}
