package main

import (
	"encoding/json"
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
		"under this project's profile segment ranges are never pruned, whatever PRUNE says")
	assert.Equal(t, map[string]pdk.ProfileMetadata{"understack": {PruneScope: pdk.PruneScopeAll,
		Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone}}},
		p.Metadata.Profiles, "under the original's they are, as it did, across groups: its name prefix records none")
	assert.Equal(t, pdk.PruneScopeGroup, p.Metadata.PruneScope)
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
	require.Len(t, f.byName("edge"), 1)
	lc := res.Lifecycle
	require.NotNil(t, lc)
	assert.Equal(t, "Success", lc.Reason)
	assert.Equal(t, f.byName("edge")[0]["id"], lc.ID, "the created range is recorded in status.id")
	assert.Equal(t, "True", lc.Available)
	assert.Equal(t, map[string]any{"name": "edge", "network_type": "vxlan", "minimum": int64(4000), "maximum": int64(4099), "shared": true},
		lc.Resource)

	ctx = newCtx()
	res, err = reconcileWith(t, ctx, map[string]any{"id": lc.ID}, spec)
	require.NoError(t, err)
	assert.Equal(t, "Success", res.Lifecycle.Reason)
	assert.Empty(t, pdktest.Of(t, ctx).Requests(), "the group's cached list serves a second CR without a request")

	spec["network_type"] = "geneve"
	res, err = reconcileWith(t, newCtx(), map[string]any{"id": lc.ID}, spec)
	require.NoError(t, err)
	assert.Contains(t, res.Lifecycle.Message, "network_type: have='vxlan' want='geneve'")
	assert.Equal(t, "ImmutableFieldChanged", res.Lifecycle.ReadyReason)
	assert.Equal(t, "InvalidConfiguration", res.Lifecycle.Reason, "not retried until the spec changes")
	assert.Equal(t, lc.ID, res.Lifecycle.ID, "the bound range stays recorded")

	res, err = pdktest.Reconcile(newCtx(), nil, obj, map[string]any{"name": "x", "network_type": "vlan", "minimum": 3, "maximum": 2, "physical_network": "p"})
	require.NoError(t, err)
	assert.Contains(t, res.Lifecycle.Message, "the range is empty")
	assert.Equal(t, "InvalidSpec", res.Lifecycle.ReadyReason)
	assert.Equal(t, "InvalidConfiguration", res.Lifecycle.Reason)
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

// reconcileWith reconciles spec for a CR whose status is status (pdktest.Reconcile passes none).
func reconcileWith(t *testing.T, ctx *pdk.Context, status map[string]any, spec any) (*pdk.Result, error) {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	return pdk.Registered().Reconcile(ctx, &pdk.ReconcileRequest{Object: obj, Spec: raw, Status: status})
}
