package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

func reconcileWith(t *testing.T, ctx *pdk.Context, status map[string]any, spec any) *pdk.Result {
	t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(t, err)
	res, err := pdk.Registered().Reconcile(ctx, &pdk.ReconcileRequest{Object: obj, Spec: raw, Status: status, Credentials: pdktest.Group})
	require.NoError(t, err, "a lifecycle plugin reports failures in its result")
	require.NotNil(t, res.Lifecycle)
	return res
}

func TestLifecycleStatusAndAdoption(t *testing.T) {
	f := loadFake(t)
	spec := Spec{Name: "edge", ServiceProfiles: []ProfileSpec{{Driver: dvr, MetaInfo: map[string]any{"vni_alloc": "auto"}}}}

	res := reconcileWith(t, host(t, f, nil), nil, spec)
	assert.Equal(t, "Success", res.Lifecycle.Reason)
	created := res.Lifecycle.ID
	require.NotEmpty(t, created, "the created flavor is recorded in status.id")
	observed := res.Lifecycle.Resource.(observedFlavor)
	assert.Equal(t, "edge", observed.Name)
	assert.Len(t, observed.ServiceProfiles, 1)

	// The status write was lost: the next run adopts the flavor instead of creating another.
	res = reconcileWith(t, host(t, f, nil), nil, spec)
	assert.Equal(t, created, res.Lifecycle.ID)
	n := 0
	for _, fl := range f.Flavors {
		if fl["name"] == "edge" {
			n++
		}
	}
	assert.Equal(t, 1, n, "no duplicate flavor")
}

func TestLifecycleImportNeverWrites(t *testing.T) {
	f := loadFake(t)
	ctx := host(t, f, nil)
	res := reconcileWith(t, ctx, nil, map[string]any{"managementPolicy": "unmanaged", "import": map[string]any{"filter": map[string]any{"name": "handmade"}}})
	assert.Equal(t, "Success", res.Lifecycle.Reason, res.Lifecycle.Message)
	assert.Equal(t, "f-handmade", res.Lifecycle.ID)
	writes, _ := pdktest.Of(t, ctx).WriteLines()
	assert.Empty(t, writes, "an unmanaged CR never stamps the marker or binds anything")

	res = reconcileWith(t, host(t, f, nil), nil, map[string]any{"managementPolicy": "unmanaged", "import": map[string]any{"id": "nope"}})
	assert.Equal(t, "UnrecoverableError", res.Lifecycle.Reason)

	res = reconcileWith(t, host(t, f, nil), nil, map[string]any{"import": map[string]any{"id": "f-handmade"}})
	assert.Equal(t, "InvalidConfiguration", res.Lifecycle.Reason)
	assert.Equal(t, "InvalidSpec", res.Lifecycle.ReadyReason)
}

func TestWrongServiceTypeIsTerminalAndBindsNothing(t *testing.T) {
	f := loadFake(t)
	ctx := host(t, f, nil)
	res := reconcileWith(t, ctx, nil, Spec{Name: "lbaas", ServiceProfiles: []ProfileSpec{{Driver: dvr}}})
	assert.Equal(t, "InvalidConfiguration", res.Lifecycle.Reason)
	assert.Contains(t, res.Lifecycle.Message, "service_type cannot change")
	writes, _ := pdktest.Of(t, ctx).WriteLines()
	for _, w := range writes {
		assert.NotRegexp(t, `flavors/[^/]+/service_profiles`, w, "a flavor of another service type gets no binding")
	}
}

// status.resource is written as it was when it was a map: the same members, in key order, the
// same escaping.
func TestTheObservedFlavorIsWrittenAsAMap(t *testing.T) {
	for _, f := range []flavor{
		{ID: "f", Name: "edge", ServiceType: l3Service, Enabled: true, Description: "a <b> & \"c\" é [openstack-sync.io/neutron-router-flavors]",
			ServiceProfiles: []string{"p1", "p2"}},
		{ID: "f", Name: "", ServiceType: "", Description: "[understack-router-flavor-operator]"},
	} {
		profiles := f.ServiceProfiles
		if profiles == nil {
			profiles = []string{}
		}
		asMap, err := json.Marshal(map[string]any{"name": f.Name, "service_type": f.ServiceType, "enabled": f.Enabled,
			"description": withoutMarkers(f.Description), "service_profiles": profiles})
		require.NoError(t, err)
		got, err := json.Marshal(actuator{}.Observed(&f))
		require.NoError(t, err)
		assert.Equal(t, string(asMap), string(got))
	}
}
