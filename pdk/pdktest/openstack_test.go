package pdktest_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// The fake answers with the real services' rules: what the trial plugins met only on a real
// cloud (a 409 for a taken Keystone name, PATCH not PUT, tag rules, sorted tags, Neutron address
// scopes without description or tags and with a required ip_version) fails a unit test here.
func TestOpenStackKnowsTheRealRules(t *testing.T) {
	cloud := pdktest.NewOpenStack(pdktest.Admin)
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Handler: cloud.Handle})
	ks := ctx.OpenStack("identity")

	var created struct {
		Project struct {
			ID   string   `json:"id"`
			Tags []string `json:"tags"`
		} `json:"project"`
	}
	require.NoError(t, ks.Post("v3/projects", map[string]any{"project": map[string]any{"name": "p", "tags": []string{"z", "a"}}}, &created))
	assert.Equal(t, []string{"z", "a"}, created.Project.Tags, "the answer to a create keeps the order sent")
	var read struct {
		Project struct{ Tags []string } `json:"project"`
	}
	require.NoError(t, ks.Get("v3/projects/"+created.Project.ID, nil, &read))
	assert.Equal(t, []string{"a", "z"}, read.Project.Tags, "reads sort tags")

	err := ks.Post("v3/projects", map[string]any{"project": map[string]any{"name": "p"}}, nil)
	assert.True(t, pdk.IsConflict(err), "a taken name is a 409: %v", err)
	err = ks.Put("v3/projects/"+created.Project.ID, map[string]any{"project": map[string]any{"name": "q"}}, nil)
	assert.Equal(t, 405, pdk.StatusCode(err), "Keystone updates with PATCH: %v", err)
	err = ks.Post("v3/projects", map[string]any{"project": map[string]any{"name": "x", "tags": []string{"a,b"}}}, nil)
	assert.ErrorContains(t, err, `HTTP 400 Bad Request: Invalid input for field/attribute 0. Value: a,b. 'a,b' does not match '^[^,/]*$'`)
	err = ks.Post("v3/projects", map[string]any{"project": map[string]any{"name": strings.Repeat("n", 65)}}, nil)
	assert.ErrorContains(t, err, "is too long")

	net := ctx.OpenStack("network")
	err = net.Post("v2.0/address-scopes", map[string]any{"address_scope": map[string]any{"name": "s", "description": "d"}}, nil)
	assert.ErrorContains(t, err, "Unrecognized attribute(s) 'description'")
	err = net.Post("v2.0/address-scopes", map[string]any{"address_scope": map[string]any{"name": "s"}}, nil)
	assert.ErrorContains(t, err, "Required attribute 'ip_version' not specified")
	require.NoError(t, net.Post("v2.0/address-scopes", map[string]any{"address_scope": map[string]any{"name": "s", "ip_version": 4}}, nil))
	var list struct {
		AddressScopes []map[string]any `json:"address_scopes"`
	}
	require.NoError(t, net.Get("v2.0/address-scopes", url.Values{"name": {"s"}}, &list))
	require.Len(t, list.AddressScopes, 1)
	assert.Equal(t, pdktest.AdminProjectID, list.AddressScopes[0]["project_id"])
	assert.Len(t, cloud.Objects("network:address-scopes"), 1)

	made := cloud.Add("identity:projects", map[string]any{"name": "by-hand"})
	assert.NotEmpty(t, made["id"], "Add fills what the service fills")

	err = net.Get("v2.0/widgets", nil, nil)
	assert.ErrorContains(t, err, "pdktest.OpenStack knows no collection at network v2.0/widgets; it knows baremetal:deploy-templates, baremetal:runbooks, identity:domains")
}

func TestOpenStackAsMember(t *testing.T) {
	cloud := pdktest.NewOpenStack(pdktest.Member)
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Handler: cloud.Handle})
	err := ctx.OpenStack("identity").Post("v3/projects", map[string]any{"project": map[string]any{"name": "p"}}, nil)
	assert.True(t, pdk.IsRefused(err), "a member may not create projects: %v", err)
	var created struct {
		Network struct {
			ProjectID string `json:"project_id"`
		} `json:"network"`
	}
	require.NoError(t, ctx.OpenStack("network").Post("v2.0/networks", map[string]any{"network": map[string]any{"name": "n"}}, &created))
	assert.Equal(t, pdktest.DemoProjectID, created.Network.ProjectID)
}

// Ironic's collections answer with Ironic's rules: the microversion gate, bare bodies, JSON
// Patch, trait-shaped names, and deploy templates only for a system-scoped admin.
func TestOpenStackKnowsIronic(t *testing.T) {
	cloud := pdktest.NewOpenStack(pdktest.Admin)
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Handler: cloud.Handle})
	ir := ctx.OpenStack("baremetal").Microversion("1.96")
	steps := []any{map[string]any{"interface": "bios", "step": "apply_configuration", "args": map[string]any{}, "order": 1}}

	err := ctx.OpenStack("baremetal").Get("v1/runbooks", nil, nil)
	assert.Equal(t, 404, pdk.StatusCode(err), "runbooks need microversion 1.92: %v", err)
	err = ctx.OpenStack("baremetal").Microversion("1.97").Get("v1/runbooks", nil, nil)
	assert.Equal(t, 406, pdk.StatusCode(err), "the tier's Ironic stops at 1.96: %v", err)
	err = ir.Post("v1/runbooks", map[string]any{"name": "lower", "steps": steps}, nil)
	assert.ErrorContains(t, err, "'lower' does not match '^CUSTOM_[A-Z0-9_]+$'")

	var rb struct {
		UUID  string `json:"uuid"`
		Owner string `json:"owner"`
		Extra map[string]any
	}
	require.NoError(t, ir.Post("v1/runbooks", map[string]any{"name": "CUSTOM_A", "steps": steps}, &rb))
	assert.Equal(t, pdktest.AdminProjectID, rb.Owner, "a project admin's runbook is its project's")
	err = ir.Post("v1/runbooks", map[string]any{"name": "CUSTOM_A", "steps": steps}, nil)
	assert.True(t, pdk.IsConflict(err), "a taken name is a 409: %v", err)
	require.NoError(t, ir.Patch("v1/runbooks/"+rb.UUID, []any{map[string]any{"op": "add", "path": "/extra/k", "value": "v"}}, &rb))
	assert.Equal(t, map[string]any{"k": "v"}, rb.Extra)
	err = ir.Patch("v1/runbooks/CUSTOM_A", []any{map[string]any{"op": "replace", "path": "/public", "value": true}}, nil)
	assert.ErrorContains(t, err, "baremetal:runbook:update:public", "only a system-scoped admin makes a runbook public")

	tsteps := []any{map[string]any{"interface": "bios", "step": "apply_configuration", "args": map[string]any{}, "priority": 10}}
	err = ir.Post("v1/deploy_templates", map[string]any{"name": "CUSTOM_T", "steps": tsteps}, nil)
	assert.Equal(t, 403, pdk.StatusCode(err), "deploy templates are the system's: %v", err)
	sys := pdktest.New(t, pdktest.Options{AllowAll: true, Handler: pdktest.NewOpenStack(pdktest.System).Handle}).OpenStack("baremetal").Microversion("1.96")
	require.NoError(t, sys.Post("v1/deploy_templates", map[string]any{"name": "CUSTOM_T", "steps": tsteps}, nil))
}
