package fakecloud

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the contract suite cannot show on the real cloud without subnets and a seeded state: a
// pool with allocations is not deleted (Neutron's 400, not a 409), a seeded pool is stored as
// Neutron stores prefixes, and an address scope in use stays.
func TestSubnetPoolsSeededAndInUse(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	scope, err := c.AddKnown(addressScopes, map[string]any{"name": "s", "ip_version": 4, "shared": true})
	require.NoError(t, err)
	scopeID := scope["id"].(string)
	p := c.AddSubnetPool(SubnetPool{Name: "legacy", Prefixes: []string{"10.0.1.0/24", "10.0.0.0/24", "10.0.0.128/25"},
		AddressScopeID: scopeID})
	assert.Equal(t, []string{"10.0.0.0/23"}, c.SubnetPools()[0].Prefixes, "covered dropped, halves joined")
	assert.Equal(t, 4, p.IPVersion)
	assert.Equal(t, 8, p.MinPrefixLen)
	c.SetSubnetPoolInUse(p.ID, true)

	admin, _ := login(t, c, "admin", "admin-secret", "admin")
	code, doc := admin.do("DELETE", c.NetworkURL()+"v2.0/subnetpools/"+p.ID, "", "")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "SubnetPoolDeleteError", doc["NeutronError"].(map[string]any)["type"])
	code, _ = admin.do("DELETE", c.NetworkURL()+"v2.0/address-scopes/"+scopeID, "", "")
	assert.Equal(t, http.StatusConflict, code)
	c.SetSubnetPoolInUse(p.ID, false)
	code, _ = admin.do("DELETE", c.NetworkURL()+"v2.0/subnetpools/"+p.ID, "", "")
	require.Equal(t, http.StatusNoContent, code)
	code, _ = admin.do("DELETE", c.NetworkURL()+"v2.0/address-scopes/"+scopeID, "", "")
	assert.Equal(t, http.StatusNoContent, code)
}

func TestMergePrefixes(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24"}, []string{"10.0.0.0/22"}},
		{[]string{"10.0.1.0/24", "10.0.2.0/24"}, []string{"10.0.1.0/24", "10.0.2.0/24"}},
		{[]string{"10.0.0.0/8", "10.1.0.0/16"}, []string{"10.0.0.0/8"}},
		{[]string{"fd00::/65", "fd00:0:0:0:8000::/65"}, []string{"fd00::/64"}},
	} {
		nets, _, err := parsePrefixes(c.in)
		require.NoError(t, err)
		assert.Equal(t, c.want, prefixStrings(mergePrefixes(nets)), "%v", c.in)
	}
}
