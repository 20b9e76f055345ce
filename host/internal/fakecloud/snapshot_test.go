package fakecloud

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A restored cloud holds what the saved one held, under the same ids, so a plugin's statuses
// (status.id) still name its resources: what `run --state` needs between two runs.
func TestSaveRestore(t *testing.T) {
	a := New(Options{})
	defer a.Close()
	admin, _ := login(t, a, "admin", "admin-secret", "admin")
	code, doc := admin.do("POST", a.AuthURL()+"/projects", "", `{"project": {"name": "kept", "tags": ["x"]}}`)
	require.Equal(t, http.StatusCreated, code)
	projectID := doc["project"].(map[string]any)["id"].(string)
	code, doc = admin.do("POST", a.NetworkURL()+"v2.0/address-scopes", "", `{"address_scope": {"name": "s", "ip_version": 4}}`)
	require.Equal(t, http.StatusCreated, code)
	scopeOwner := doc["address_scope"].(map[string]any)["project_id"]
	flavor := a.AddFlavor(Flavor{Name: "gold", Enabled: true})
	code, _ = admin.do("POST", a.NetworkURL()+"v2.0/subnetpools", "", `{"subnetpool": {"name": "p", "prefixes": ["10.0.0.0/16"]}}`)
	require.Equal(t, http.StatusCreated, code)
	require.NoError(t, a.AddCollection(Collection{Path: "v2.0/widgets", Key: "widget"}))
	widget := a.AddObject("v2.0/widgets", map[string]any{"name": "w"})
	saved, err := a.Save()
	require.NoError(t, err)

	b := New(Options{})
	defer b.Close()
	require.NoError(t, b.Restore(saved))
	admin, _ = login(t, b, "admin", "admin-secret", "admin")
	code, doc = admin.do("GET", b.AuthURL()+"/projects/"+projectID, "", "")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "kept", doc["project"].(map[string]any)["name"])
	code, doc = admin.do("GET", b.NetworkURL()+"v2.0/address-scopes?name=s", "", "")
	require.Equal(t, http.StatusOK, code)
	require.Len(t, doc["address_scopes"], 1, "the restored cloud holds the scope")
	assert.Equal(t, scopeOwner, b.projects["admin"], "the admin project keeps its id, so ownership still holds")
	assert.Equal(t, []Flavor{flavor}, b.Flavors())
	code, doc = admin.do("GET", b.NetworkURL()+"v2.0/subnetpools?name=p", "", "")
	require.Equal(t, http.StatusOK, code)
	assert.Len(t, doc["subnetpools"], 1, "the restored cloud holds the subnet pool")
	assert.Equal(t, widget["id"], b.Objects("v2.0/widgets")[0]["id"])

	c := New(Options{})
	defer c.Close()
	assert.ErrorContains(t, c.Restore([]byte(`{"version": 9}`)), "a saved cloud of version 9")
	assert.ErrorContains(t, c.Restore([]byte(`nope`)), "reading a saved cloud")
}
