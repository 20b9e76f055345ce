package pluginpass

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
)

const (
	singleNode = "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver"
	haDriver   = "neutron.services.l3_router.service_providers.ha.HaDriver"
	marker     = "[openstack-sync.io/neutron-router-flavors]"
)

func flavorsEnv(t *testing.T, prune bool) *env {
	return newEnv(t, setup{plugin: "neutron-router-flavors", crd: "neutron.openstack-sync.io/v1alpha1",
		kind: "NeutronRouterFlavor", prefix: "NEUTRON_ROUTER_FLAVOR", prune: prune})
}

func flavorNamed(c *fakecloud.Cloud, name string) (fakecloud.Flavor, bool) {
	for _, f := range c.Flavors() {
		if f.Name == name {
			return f, true
		}
	}
	return fakecloud.Flavor{}, false
}

func profile(c *fakecloud.Cloud, id string) (fakecloud.ServiceProfile, bool) {
	for _, p := range c.ServiceProfiles() {
		if p.ID == id {
			return p, true
		}
	}
	return fakecloud.ServiceProfile{}, false
}

const asaSpec = `name: asa
description: ASA routers
service_profiles:
  - driver: ` + singleNode + `
    meta_info: {resource_class: asa}
`

func TestRouterFlavorLifecycle(t *testing.T) {
	e := flavorsEnv(t, true)
	e.apply("asa", asaSpec)

	// Create: profile, flavor with marker, binding; the finalizer is added (PRUNE=true).
	require.Equal(t, 0, e.synchronize())
	f, ok := flavorNamed(e.cloud, "asa")
	require.True(t, ok)
	assert.Equal(t, "ASA routers "+marker, f.Description)
	require.Len(t, f.ServiceProfiles, 1)
	p, _ := profile(e.cloud, f.ServiceProfiles[0])
	assert.Contains(t, p.MetaInfo, `"openstack-sync.io/managed-by":"neutron-router-flavors"`)
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, e.finalizers("asa"))
	assert.Equal(t, "Synced", e.status("asa")["syncStatus"])

	// Converged: no writes; readiness plus two group lists.
	e.cloud.ResetRequests()
	kubeBefore := len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a converged run patches no status and no finalizer: the status is current")
	assert.Empty(t, e.writes())
	var neutron []string
	for _, r := range e.cloud.Requests() {
		if r.Service == fakecloud.Network {
			neutron = append(neutron, r.Method+" "+r.Path)
		}
	}
	assert.Equal(t, []string{
		"GET /v2.0/flavors",                               // readiness
		"GET /v2.0/flavors", "GET /v2.0/service_profiles", // the group's lists, shared by its CRs
		"GET /v2.0/flavors", "GET /v2.0/service_profiles", // prune: nothing to delete, no router list
	}, neutron)

	// Drift on the flavor is corrected.
	f, _ = flavorNamed(e.cloud, "asa")
	e.cloud.ResetRequests()
	obj := e.get("asa")
	obj["spec"].(map[string]any)["is_enabled"] = false
	_, err := e.kube.Update(e.res, namespace, "asa", "", obj)
	require.NoError(t, err)
	require.Equal(t, 0, e.synchronize())
	f, _ = flavorNamed(e.cloud, "asa")
	assert.False(t, f.Enabled)

	// Notes: drift on a bound owned profile is reported, the CR stays Synced.
	obj = e.get("asa")
	obj["spec"].(map[string]any)["service_profiles"].([]any)[0].(map[string]any)["description"] = "new words"
	_, err = e.kube.Update(e.res, namespace, "asa", "", obj)
	require.NoError(t, err)
	require.Equal(t, 0, e.synchronize())
	st := e.status("asa")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Contains(t, st["message"], "needs manual action: service profile "+f.ServiceProfiles[0]+` description: have="" want="new words"`)
}

func TestRouterFlavorAdoptsAnUnownedFlavor(t *testing.T) {
	e := flavorsEnv(t, false)
	hand := e.cloud.AddFlavor(fakecloud.Flavor{Name: "asa", Description: "ASA routers", Enabled: true})
	e.apply("asa", asaSpec)
	require.Equal(t, 0, e.synchronize())
	f, _ := flavorNamed(e.cloud, "asa")
	assert.Equal(t, hand.ID, f.ID, "the existing flavor is adopted, not duplicated")
	assert.Equal(t, "ASA routers "+marker, f.Description)
	assert.Len(t, f.ServiceProfiles, 1)
	assert.Empty(t, e.finalizers("asa"), "PRUNE=false: best-effort prune holds no finalizer")
}

// deleteCR asks Kubernetes to delete a CR: with a finalizer it stays, Terminating, for the hook.
func (e *env) deleteCR(name string) {
	e.t.Helper()
	_, _, err := e.kube.Delete(e.res, namespace, name, fakekube.DeleteOptions{})
	require.NoError(e.t, err)
}

func TestRouterFlavorPrune(t *testing.T) {
	e := flavorsEnv(t, true)
	e.apply("asa", asaSpec)
	e.apply("ha", "name: ha\nservice_profiles:\n  - driver: "+haDriver+"\n")
	e.apply("busy", "name: busy\nservice_profiles:\n  - driver: "+haDriver+"\n    meta_info: {resource_class: busy}\n")
	require.Equal(t, 0, e.synchronize())
	hand := e.cloud.AddFlavor(fakecloud.Flavor{Name: "handmade", Enabled: true})
	busy, _ := flavorNamed(e.cloud, "busy")
	e.cloud.AddRouter(fakecloud.Router{Name: "r1", FlavorID: busy.ID})

	// Deleting an owned flavor's CR deletes it and its profile, then releases the finalizer.
	ha, _ := flavorNamed(e.cloud, "ha")
	e.deleteCR("ha")
	require.Equal(t, 0, e.synchronize())
	_, ok := flavorNamed(e.cloud, "ha")
	assert.False(t, ok, "the owned orphan flavor is deleted")
	_, ok = profile(e.cloud, ha.ServiceProfiles[0])
	assert.False(t, ok, "its owned profile, bound nowhere else, is deleted")
	_, err := e.kube.Get(e.res, namespace, "ha")
	assert.Error(t, err, "the finalizer was released and the CR is gone")
	_, ok = flavorNamed(e.cloud, hand.Name)
	assert.True(t, ok, "an unowned flavor no CR names is kept")

	// A flavor a router uses is kept; the prune fails and the CR keeps its finalizer.
	e.deleteCR("busy")
	assert.Equal(t, 1, e.synchronize())
	_, ok = flavorNamed(e.cloud, "busy")
	assert.True(t, ok)
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, e.finalizers("busy"))
	assert.True(t, strings.Contains(e.logs.String(), "router flavors still present: busy (in use by 1 router(s))"), "the log says why")
}
