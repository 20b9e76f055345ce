package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

var obj = pdk.Object{Kind: "NeutronRouterFlavor", Namespace: "openstack", Name: "asa"}

func TestMetadata(t *testing.T) {
	p := pdk.Registered()
	require.NotNil(t, p)
	assert.Equal(t, "NEUTRON_ROUTER_FLAVOR", p.Metadata.EnvPrefix)
	assert.Equal(t, "neutron-router-flavors", p.Metadata.BindingName)
	assert.Equal(t, pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupBestEffortPrune}, p.Metadata.Cleanup)
}

func host(t *testing.T, f *fakeNeutron, config map[string]string) *pdk.Context {
	return hostWithCache(t, f, config, nil)
}

func hostWithCache(t *testing.T, f *fakeNeutron, config map[string]string, cache map[string]any) *pdk.Context {
	return pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Config: config, Cache: cache, Cloud: f.handle})
}

func TestAGroupSharesItsListsAcrossCRs(t *testing.T) {
	f := loadFake(t)
	cache := map[string]any{}
	first := hostWithCache(t, f, nil, cache)
	_, err := pdktest.Reconcile(first, nil, obj, asa())
	require.NoError(t, err)
	assert.Len(t, pdktest.Of(t, first).Requests(), 2)
	second := hostWithCache(t, f, nil, cache)
	spec := asa()
	spec.IsEnabled = ptr(false)
	_, err = pdktest.Reconcile(second, nil, obj, spec)
	require.NoError(t, err)
	reqs := pdktest.Of(t, second).Requests()
	require.Len(t, reqs, 1, "the second CR's only request is its own write, sent through its own context")
	assert.Equal(t, "PUT", reqs[0].Method)
}

func TestReconcileThroughThePDKStaysInsideItsGrants(t *testing.T) {
	f := loadFake(t)
	spec := Spec{Name: "edge", ServiceProfiles: []ProfileSpec{{Driver: dvr, MetaInfo: map[string]any{"vni_alloc": "auto"}}}}
	_, err := pdktest.Reconcile(host(t, f, nil), nil, obj, spec)
	require.NoError(t, err)
	// Rebinding to a new profile exercises bind and unbind.
	spec.ServiceProfiles[0].MetaInfo["vni_alloc"] = "off"
	_, err = pdktest.Reconcile(host(t, f, nil), nil, obj, spec)
	require.NoError(t, err)

	res, err := pdktest.Reconcile(host(t, f, nil), nil, obj, Spec{Name: "bad name"})
	require.NoError(t, err, "a lifecycle plugin reports failures in its result")
	assert.Equal(t, "InvalidSpec", res.Lifecycle.ReadyReason)
	assert.Equal(t, "InvalidConfiguration", res.Lifecycle.Reason, "not retried until the spec changes")
}

func TestPruneModeFollowsPRUNE(t *testing.T) {
	raw, _ := json.Marshal(Spec{Name: "asa"})
	req := &pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}, Credentials: pdktest.Group}

	f := loadFake(t)
	require.NoError(t, pdk.Registered().Prune(host(t, f, map[string]string{"PRUNE": "false"}), req))
	assert.NotNil(t, find(f.Flavors, "f-orphan"), "without PRUNE no flavor is deleted")
	assert.Nil(t, find(f.Profiles, "p-stray"), "without PRUNE unbound owned profiles are still swept")

	f = loadFake(t)
	require.NoError(t, pdk.Registered().Prune(host(t, f, map[string]string{"PRUNE": "true"}), req))
	assert.Nil(t, find(f.Flavors, "f-orphan"))
	assert.NotNil(t, find(f.Flavors, "f-handmade"))
}

// A prune reads only the desired names (prune_keys) and lets the group's view of Neutron go: at
// 20,000 site-shaped flavors the whole specs and that view beside the prune's own lists did not
// fit the guest's 32 MiB.
func TestPruneReadsOnlyNamesAndLetsTheGroupsViewGo(t *testing.T) {
	assert.Equal(t, []string{"name"}, pdk.Registered().Metadata.PruneKeys)
	f := loadFake(t)
	cache := map[string]any{}
	_, err := pdktest.Reconcile(hostWithCache(t, f, nil, cache), nil, obj, asa())
	require.NoError(t, err)
	require.NotNil(t, cache[cacheKey], "the reconcile kept the group's view")
	raw, _ := json.Marshal(map[string]any{"name": "asa"})
	require.NoError(t, pdk.Registered().Prune(hostWithCache(t, f, map[string]string{"PRUNE": "true"}, cache),
		&pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}, Credentials: pdktest.Group}))
	assert.Nil(t, cache[cacheKey], "the prune let the group's view go")
	assert.Nil(t, find(f.Flavors, "f-orphan"))
	assert.NotNil(t, find(f.Flavors, "f-owned"), "a name alone claims its flavor (asa)")
}
