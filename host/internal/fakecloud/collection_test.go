package fakecloud

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCollectionRegistration(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	cases := []struct {
		col  Collection
		want string
	}{
		{Collection{Path: "address-scopes", Key: "address_scope"}, `want v2.0/<name>`},
		{Collection{Path: "v2.0/address-scopes"}, "Key (the singular body key) is empty"},
		{Collection{Path: "v2.0/flavors", Key: "flavor"}, "the fake already serves it"},
		{Collection{Path: "v2.0/address-scopes", Key: "address_scope"}, "(network:address-scopes): the embedded cloud already serves it"},
	}
	for _, tc := range cases {
		assert.ErrorContains(t, c.AddCollection(tc.col), tc.want)
	}
	assert.ErrorIs(t, c.AddCollection(Collection{Path: "v2.0/networks", Key: "network"}), ErrKnown)
	require.NoError(t, c.AddCollection(Collection{Path: "v2.0/widgets", Key: "widget"}))
	assert.ErrorContains(t, c.AddCollection(Collection{Path: "v2.0/widgets", Key: "x"}), "already registered")
}

func TestParseCollection(t *testing.T) {
	cases := []struct {
		in    string
		want  Collection
		known bool
		err   string
	}{
		{"identity:projects", Collection{}, true, ""},
		{"network:address-scopes", Collection{}, true, ""},
		{"network:v2.0/address-scopes:address_scope:notags", Collection{}, true, ""},
		{"identity:widgets", Collection{}, false, `"identity:widgets" is not one the embedded cloud knows (baremetal:deploy-templates, baremetal:runbooks, identity:domains, identity:groups`},
		{"network:/v2.0/qos/policies:policy", Collection{}, false, "want v2.0/<name>"},
		{"network:v2.0/things:thing", Collection{Path: "v2.0/things", Key: "thing", Tags: true}, false, ""},
		{"network:v2.0/things:thing:tags", Collection{Path: "v2.0/things", Key: "thing", Tags: true}, false, ""},
		{"network:v2.0/things:thing:notags", Collection{Path: "v2.0/things", Key: "thing"}, false, ""},
		{"compute:v2.1/servers:server", Collection{}, false, "only the network service serves generic collections"},
		{"network:v2.0/things:thing:maybe:x", Collection{}, false, "want SERVICE:NAME"},
		{"network:v2.0/things:thing:maybe", Collection{}, false, `tags or notags, not "maybe"`},
	}
	for _, tc := range cases {
		got, known, err := ParseCollection(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.known, known, tc.in)
	}
}

func TestCollectionCRUDWithTags(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	require.NoError(t, c.AddCollection(Collection{Path: "v2.0/things", Key: "thing", Attributes: []string{"name", "size", "shared"}, Tags: true}))
	admin, _ := login(t, c, "admin", "admin-secret", "admin")
	demo, _ := login(t, c, "demo", "demo-secret", "demo")
	url := c.NetworkURL() + "v2.0/things"

	code, doc := admin.do("POST", url, "", `{"thing": {"name": "a", "size": 1, "shared": true, "tags": ["x", "y"]}}`)
	require.Equal(t, http.StatusCreated, code, doc)
	a := doc["thing"].(map[string]any)
	assert.Equal(t, []any{"x", "y"}, a["tags"])
	assert.NotEmpty(t, a["id"])
	assert.Equal(t, a["project_id"], a["tenant_id"])
	id := a["id"].(string)
	code, _ = admin.do("POST", url, "", `{"thing": {"name": "a", "size": 2}}`)
	require.Equal(t, http.StatusCreated, code, "names need not be unique")
	code, _ = demo.do("POST", url, "", `{"thing": {"name": "b"}}`)
	require.Equal(t, http.StatusCreated, code)

	list := func(cl *client, query string) []string {
		code, doc := cl.do("GET", url+query, "", "")
		require.Equal(t, http.StatusOK, code, doc)
		var names []string
		for _, it := range doc["things"].([]any) {
			names = append(names, it.(map[string]any)["name"].(string))
		}
		return names
	}
	assert.Equal(t, []string{"a", "a", "b"}, list(admin, ""), "an admin sees every project's")
	assert.Equal(t, []string{"b"}, list(demo, ""), "a project sees its own")
	assert.Equal(t, []string{"a"}, list(admin, "?name=a&size=1"))
	assert.Equal(t, []string{"a"}, list(admin, "?shared=true"))
	assert.Equal(t, []string{"a", "b"}, list(admin, "?size=1&size=3&size=&name=a&name=b"), "repeated values are OR-ed")
	assert.Equal(t, []string{"a"}, list(admin, "?tags=x,y"))
	assert.Empty(t, list(admin, "?tags=x,z"))
	assert.Equal(t, []string{"a"}, list(admin, "?tags-any=z,y"))
	assert.Equal(t, []string{"a", "b"}, list(admin, "?not-tags=x"))
	code, doc = admin.do("GET", url+"?fields=name", "", "")
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"name": "a"}, doc["things"].([]any)[0])

	code, _ = admin.do("PUT", url+"/"+id+"/tags/z", "", "")
	assert.Equal(t, http.StatusCreated, code)
	code, doc = admin.do("GET", url+"/"+id+"/tags", "", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, []any{"x", "y", "z"}, doc["tags"])
	code, _ = admin.do("DELETE", url+"/"+id+"/tags/x", "", "")
	assert.Equal(t, http.StatusNoContent, code)
	code, _ = admin.do("DELETE", url+"/"+id+"/tags/x", "", "")
	assert.Equal(t, http.StatusNotFound, code)
	code, doc = admin.do("PUT", url+"/"+id+"/tags", "", `{"tags": ["q"]}`)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, []any{"q"}, doc["tags"])

	code, doc = admin.do("PUT", url+"/"+id, "", `{"thing": {"size": 5}}`)
	require.Equal(t, http.StatusOK, code, doc)
	assert.EqualValues(t, 5, doc["thing"].(map[string]any)["size"])
	code, doc = admin.do("PUT", url+"/"+id, "", `{"thing": {"id": "other"}}`)
	assert.Equal(t, http.StatusBadRequest, code, doc)
	code, doc = admin.do("POST", url, "", `{"thing": {"colour": "red"}}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, doc["NeutronError"].(map[string]any)["message"], "Unrecognized attribute(s) 'colour'")
	code, _ = admin.do("POST", url, "", `{"other": {"name": "x"}}`)
	assert.Equal(t, http.StatusBadRequest, code)

	code, _ = demo.do("GET", url+"/"+id, "", "")
	assert.Equal(t, http.StatusNotFound, code, "another project's object is not found")
	code, _ = admin.do("DELETE", url+"/"+id, "", "")
	assert.Equal(t, http.StatusNoContent, code)
	code, _ = admin.do("GET", url+"/"+id, "", "")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Len(t, c.Objects("v2.0/things"), 2)
}

// A generic collection declared without tags refuses them everywhere, as a real resource without
// Neutron's tags does.
func TestCollectionWithoutTags(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	require.NoError(t, c.AddCollection(Collection{Path: "v2.0/widgets", Key: "widget"}))
	seeded := c.AddObject("v2.0/widgets", map[string]any{"name": "unowned", "ip_version": 4})
	admin, _ := login(t, c, "admin", "admin-secret", "admin")
	url := c.NetworkURL() + "v2.0/widgets"

	code, doc := admin.do("POST", url, "", `{"widget": {"name": "s", "tags": ["owned"]}}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, doc["NeutronError"].(map[string]any)["message"], "Unrecognized attribute(s) 'tags'")
	code, _ = admin.do("GET", url+"?tags=owned", "", "")
	assert.Equal(t, http.StatusBadRequest, code)
	code, _ = admin.do("PUT", url+"/"+seeded["id"].(string)+"/tags/owned", "", "")
	assert.Equal(t, http.StatusNotFound, code)
	code, doc = admin.do("GET", url+"/"+seeded["id"].(string), "", "")
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, doc["widget"], "tags")

	system, _ := login(t, c, "admin", "admin-secret", "")
	code, doc = system.do("GET", url, "", "")
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, doc["widgets"], "a system-scoped token lists nothing")
}
