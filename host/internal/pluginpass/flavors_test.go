package pluginpass

import (
	"fmt"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

const (
	singleNode = "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver"
	haDriver   = "neutron.services.l3_router.service_providers.ha.HaDriver"
	marker     = "[openstack-sync.io/neutron-router-flavors group=" + credentialGroup + "]"
)

func flavorsEnv(t *testing.T, b backend, prune bool) *env {
	return newEnv(t, b, setup{plugin: "neutron-router-flavors", crd: "neutron.openstack-sync.io/v1alpha1",
		kind: "NeutronRouterFlavor", prefix: "NEUTRON_ROUTER_FLAVOR", prune: prune})
}

type flavor struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	Description     string   `json:"description"`
	Enabled         bool     `json:"enabled"`
	ServiceProfiles []string `json:"service_profiles"`
}

type serviceProfile struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	MetaInfo    string `json:"metainfo"`
}

// flavorNamed reads a router flavor back from Neutron.
func (e *env) flavorNamed(name string) (flavor, bool) {
	var body struct{ Flavors []flavor }
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/flavors",
		Query: url.Values{"name": {name}}}, &body)
	if len(body.Flavors) == 0 {
		return flavor{}, false
	}
	require.Len(e.t, body.Flavors, 1, "flavor %s", name)
	return body.Flavors[0], true
}

func (e *env) profile(id string) (serviceProfile, bool) {
	var body struct {
		ServiceProfile serviceProfile `json:"service_profile"`
	}
	if e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/service_profiles/" + id}, &body) == 404 {
		return serviceProfile{}, false
	}
	return body.ServiceProfile, true
}

// addFlavor seeds an unowned router flavor, made by hand as an operator would.
func (e *env) addFlavor(name, description string) flavor {
	var body struct{ Flavor flavor }
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "POST", Path: "v2.0/flavors",
		Body: jsonBody(map[string]any{"flavor": map[string]any{"name": name, "description": description,
			"service_type": "L3_ROUTER_NAT", "enabled": true}})}, &body)
	return body.Flavor
}

// addRouter seeds a router using a flavor, which makes the flavor in use.
func (e *env) addRouter(name, flavorID string) {
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "POST", Path: "v2.0/routers",
		Body: jsonBody(map[string]any{"router": map[string]any{"name": name, "flavor_id": flavorID}})}, nil)
}

// asaSpec's profile is the env's own too: the plugin binds an existing owned profile of the same
// driver and meta_info rather than make a second one, even one another run left behind.
func (e *env) asaSpec(name string) string {
	return `name: ` + name + `
description: ASA routers
service_profiles:
  - driver: ` + singleNode + `
    meta_info: {resource_class: ` + e.name("asa") + `}
`
}

func routerFlavorLifecycle(t *testing.T, b backend) {
	e := flavorsEnv(t, b, true)
	asa := e.name("asa")
	e.apply("asa", e.asaSpec(asa))

	// Create: profile, flavor with marker, binding; the finalizer is added (PRUNE=true).
	require.Equal(t, 0, e.synchronize())
	f, ok := e.flavorNamed(asa)
	require.True(t, ok)
	assert.Equal(t, "ASA routers "+marker, f.Description)
	require.Len(t, f.ServiceProfiles, 1)
	p, _ := e.profile(f.ServiceProfiles[0])
	assert.Contains(t, p.MetaInfo, `"openstack-sync.io/managed-by":"neutron-router-flavors"`)
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, e.finalizers("asa"))
	assert.Equal(t, "Synced", e.status("asa")["syncStatus"])
	assert.Equal(t, f.ID, e.status("asa")["id"], "status.id records the flavor")
	assert.Equal(t, "True", condOf(e.status("asa"), "Available")["status"])

	// Converged: no writes; readiness plus two group lists.
	e.rec.reset()
	kubeBefore := len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a converged run patches no status and no finalizer: the status is current")
	assert.Empty(t, e.writes())
	assert.Equal(t, []string{
		"GET /v2.0/flavors",                               // readiness
		"GET /v2.0/flavors", "GET /v2.0/service_profiles", // the group's lists, shared by its CRs
		"GET /v2.0/flavors", "GET /v2.0/service_profiles", // prune: nothing to delete, no router list
	}, e.requests("network"))

	// Drift on the flavor is corrected.
	obj := e.get("asa")
	obj["spec"].(map[string]any)["is_enabled"] = false
	_, err := e.kube.Update(e.res, namespace, "asa", "", obj)
	require.NoError(t, err)
	require.Equal(t, 0, e.synchronize())
	f, _ = e.flavorNamed(asa)
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

func routerFlavorAdoptsAnUnownedFlavor(t *testing.T, b backend) {
	e := flavorsEnv(t, b, false)
	asa := e.name("asa")
	hand := e.addFlavor(asa, "ASA routers")
	e.apply("asa", e.asaSpec(asa))
	require.Equal(t, 0, e.synchronize())
	f, _ := e.flavorNamed(asa)
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

func routerFlavorPrune(t *testing.T, b backend) {
	e := flavorsEnv(t, b, true)
	busy := e.name("busy")
	e.apply("asa", e.asaSpec(e.name("asa")))
	e.apply("ha", "name: "+e.name("ha")+"\nservice_profiles:\n  - driver: "+haDriver+"\n    meta_info: {resource_class: "+e.name("ha")+"}\n")
	e.apply("busy", "name: "+busy+"\nservice_profiles:\n  - driver: "+haDriver+"\n    meta_info: {resource_class: "+busy+"}\n")
	require.Equal(t, 0, e.synchronize())
	hand := e.addFlavor(e.name("handmade"), "")
	busyFlavor, _ := e.flavorNamed(busy)
	e.addRouter(e.name("r1"), busyFlavor.ID)

	// Deleting an owned flavor's CR deletes it and its profile, then releases the finalizer.
	ha, _ := e.flavorNamed(e.name("ha"))
	e.deleteCR("ha")
	require.Equal(t, 0, e.synchronize())
	_, ok := e.flavorNamed(e.name("ha"))
	assert.False(t, ok, "the owned orphan flavor is deleted")
	_, ok = e.profile(ha.ServiceProfiles[0])
	assert.False(t, ok, "its owned profile, bound nowhere else, is deleted")
	_, err := e.kube.Get(e.res, namespace, "ha")
	assert.Error(t, err, "the finalizer was released and the CR is gone")
	_, ok = e.flavorNamed(hand.Name)
	assert.True(t, ok, "an unowned flavor no CR names is kept")

	// A flavor a router uses is kept; the prune fails and the CR keeps its finalizer.
	e.deleteCR("busy")
	assert.Equal(t, 1, e.synchronize())
	_, ok = e.flavorNamed(busy)
	assert.True(t, ok)
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, e.finalizers("busy"))
	assert.Contains(t, e.logs.String(), "router flavors still present: "+busy+" (in use by 1 router(s))", "the log says why")
}

// routerFlavorImport: an unmanaged CR imports a hand-made flavor by filter and never writes to it
// (no marker, no binding), so the prune never mistakes it for the plugin's.
func routerFlavorImport(t *testing.T, b backend) {
	e := flavorsEnv(t, b, true)
	name := e.name("observed")
	e.apply("observed", fmt.Sprintf("managementPolicy: unmanaged\nimport:\n  filter:\n    name: %s\n", name))
	require.Equal(t, 0, e.synchronize(), "nothing to import yet is not a failure")
	assert.Equal(t, "Progressing", e.status("observed")["syncStatus"])

	var body struct {
		Flavor flavor `json:"flavor"`
	}
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "POST", Path: "v2.0/flavors",
		Body: jsonBody(map[string]any{"flavor": map[string]any{"name": name, "service_type": "L3_ROUTER_NAT", "description": "by hand"}})}, &body)
	t.Cleanup(func() {
		e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/flavors/" + body.Flavor.ID}, nil)
	})
	e.rec.reset()
	require.Equal(t, 0, e.progress())
	st := e.status("observed")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Equal(t, body.Flavor.ID, st["id"])
	assert.Empty(t, e.writes(), "an unmanaged CR never writes to Neutron")
	f, ok := e.flavorNamed(name)
	require.True(t, ok)
	assert.Equal(t, "by hand", f.Description, "no ownership marker is stamped")
}
