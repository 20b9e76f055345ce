package fakecloud

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlavorsAndProfilesAreFoundAfterEveryChange holds the lookups by id, answered from an index,
// to the lists after each kind of change: a create, a delete, a seeded entry, a restore.
func TestFlavorsAndProfilesAreFoundAfterEveryChange(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	cl, _ := login(t, c, "admin", "admin-secret", "admin")
	net := c.NetworkURL() + "v2.0/"
	get := func(path string) int {
		t.Helper()
		status, _ := cl.do(http.MethodGet, net+path, "", "")
		return status
	}
	status, doc := cl.do(http.MethodPost, net+"flavors", "", `{"flavor": {"name": "a", "service_type": "L3_ROUTER_NAT"}}`)
	require.Equal(t, http.StatusCreated, status, doc)
	a := doc["flavor"].(map[string]any)["id"].(string)
	status, doc = cl.do(http.MethodPost, net+"service_profiles", "",
		`{"service_profile": {"driver": "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver"}}`)
	require.Equal(t, http.StatusCreated, status, doc)
	p := doc["service_profile"].(map[string]any)["id"].(string)
	assert.Equal(t, http.StatusOK, get("flavors/"+a))
	assert.Equal(t, http.StatusOK, get("service_profiles/"+p))

	status, doc = cl.do(http.MethodPost, net+"flavors", "", `{"flavor": {"name": "b", "service_type": "L3_ROUTER_NAT"}}`)
	require.Equal(t, http.StatusCreated, status, doc)
	b := doc["flavor"].(map[string]any)["id"].(string)
	assert.Equal(t, http.StatusOK, get("flavors/"+b), "created after the first lookup")
	seeded := c.AddFlavor(Flavor{Name: "seeded"})
	assert.Equal(t, http.StatusOK, get("flavors/"+seeded.ID), "seeded after the first lookup")

	status, _ = cl.do(http.MethodDelete, net+"flavors/"+a, "", "")
	require.Equal(t, http.StatusNoContent, status)
	assert.Equal(t, http.StatusNotFound, get("flavors/"+a), "deleted")
	assert.Equal(t, http.StatusOK, get("flavors/"+b))
	status, _ = cl.do(http.MethodDelete, net+"service_profiles/"+p, "", "")
	require.Equal(t, http.StatusNoContent, status)
	assert.Equal(t, http.StatusNotFound, get("service_profiles/"+p), "deleted")

	saved, err := c.Save()
	require.NoError(t, err)
	other := New(Options{})
	defer other.Close()
	kept := other.AddFlavor(Flavor{Name: "replaced"})
	ocl, _ := login(t, other, "admin", "admin-secret", "admin")
	status, _ = ocl.do(http.MethodGet, other.NetworkURL()+"v2.0/flavors/"+kept.ID, "", "")
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, other.Restore(saved))
	status, _ = ocl.do(http.MethodGet, other.NetworkURL()+"v2.0/flavors/"+b, "", "")
	assert.Equal(t, http.StatusOK, status, "restored")
	status, _ = ocl.do(http.MethodGet, other.NetworkURL()+"v2.0/flavors/"+kept.ID, "", "")
	assert.Equal(t, http.StatusNotFound, status, "replaced by the restore")
}
