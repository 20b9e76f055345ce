package pdktest_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// groups is a small plugin for the drivers' tests: one Keystone group per CR, its id in
// status.id (a lifecycle result), deleted by id.
var groups = &pdk.Plugin{
	Metadata: pdk.Metadata{Name: "keystone-groups", Noun: "group", EnvPrefix: "KEYSTONE_GROUP", Lifecycle: true,
		StatusKeys: []string{"id"}},
	WaitForAPI: func(ctx *pdk.Context) error { return ctx.OpenStack("identity").Get("v3/groups", nil, nil) },
	Reconcile: func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
		var spec struct {
			Name string `json:"name"`
		}
		if err := req.DecodeSpec(&spec); err != nil {
			return nil, err
		}
		ks := ctx.OpenStack("identity")
		id, _ := req.Status["id"].(string)
		if id == "" {
			var out struct {
				Group struct{ ID string } `json:"group"`
			}
			if err := ks.Post("v3/groups", map[string]any{"group": map[string]any{"name": spec.Name}}, &out); err != nil {
				return nil, err
			}
			id = out.Group.ID
		}
		var out struct {
			Group struct{ Name string } `json:"group"`
		}
		err := ks.Patch("v3/groups/"+url.PathEscape(id), map[string]any{"group": map[string]any{"name": spec.Name}}, &out)
		if err != nil {
			return nil, err
		}
		return &pdk.Result{Lifecycle: &pdk.LifecycleStatus{ID: id, Available: "True", Reason: "Success",
			Resource: map[string]any{"name": out.Group.Name}}}, nil
	},
	Delete: func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
		id, _ := req.Status["id"].(string)
		if id == "" {
			return nil, errors.New("no status.id")
		}
		err := ctx.OpenStack("identity").Delete("v3/groups/"+url.PathEscape(id), nil, nil)
		if err != nil && !pdk.IsNotFound(err) {
			return nil, err
		}
		return &pdk.Result{Lifecycle: &pdk.LifecycleStatus{Available: "False", Reason: "Success"}}, nil
	},
}

// Create, edit and delete are three calls on one CR: the status each leaves is what the next
// sends, so the edit updates the group the create made instead of making a second one.
func TestCRCreateEditDelete(t *testing.T) {
	cloud := pdktest.NewOpenStack(pdktest.Admin)
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Handler: cloud.Handle})
	cr := &pdktest.CR{Plugin: groups, Object: pdk.Object{Kind: "KeystoneGroup", Namespace: "ns", Name: "a"},
		Spec: map[string]any{"name": "first"}}

	_, err := cr.Reconcile(ctx)
	require.NoError(t, err)
	id := cr.Status["id"]
	require.NotEmpty(t, id)
	assert.Equal(t, map[string]any{"name": "first"}, cr.Status["resource"])
	assert.Equal(t, "Synced", cr.Status["syncStatus"])

	cr.Spec = map[string]any{"name": "second"}
	_, err = cr.Reconcile(ctx)
	require.NoError(t, err)
	assert.Equal(t, id, cr.Status["id"], "the edit kept its resource")
	assert.Equal(t, map[string]any{"name": "second"}, cr.Status["resource"])
	require.Len(t, cloud.Objects("identity:groups"), 1, "one group, renamed")
	assert.Equal(t, "second", cloud.Objects("identity:groups")[0]["name"])

	res, err := cr.Delete(ctx)
	assert.True(t, pdktest.Deleted(res, err))
	assert.Empty(t, cloud.Objects("identity:groups"))

	// The host sends only the status keys the metadata names.
	var sent []map[string]any
	spy := *groups
	spy.Reconcile = func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
		sent = append(sent, req.Status)
		return nil, nil
	}
	cr.Plugin = &spy
	_, _ = cr.Reconcile(ctx)
	assert.Equal(t, []map[string]any{{"id": id}}, sent)
}

func TestDeleteWithoutHandler(t *testing.T) {
	p := *groups
	p.Delete = nil
	cr := &pdktest.CR{Plugin: &p, Spec: map[string]any{"name": "x"}}
	_, err := cr.Delete(pdktest.New(t, pdktest.Options{AllowAll: true}))
	assert.ErrorContains(t, err, "has no Delete handler")
	assert.False(t, pdktest.Deleted(nil, err))
	assert.False(t, pdktest.Deleted(&pdk.Result{Lifecycle: &pdk.LifecycleStatus{Reason: "Progressing"}}, nil))
}

func TestPruneAndWaitForAPI(t *testing.T) {
	cloud := pdktest.NewOpenStack(pdktest.Admin)
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Handler: cloud.Handle})
	require.NoError(t, pdktest.WaitForAPI(ctx, groups))

	var got *pdk.PruneRequest
	p := *groups
	p.Prune = func(_ *pdk.Context, req *pdk.PruneRequest) error { got = req; return nil }
	require.NoError(t, pdktest.Prune(ctx, &p, []any{map[string]any{"name": "a"}}, true))
	var specs []struct{ Name string }
	require.NoError(t, got.DecodeSpecs(&specs))
	assert.Equal(t, "a", specs[0].Name)
	assert.False(t, got.AuthoritativeEmpty, "a non-empty set is never authoritatively empty")
	require.NoError(t, pdktest.Prune(ctx, &p, nil, true))
	assert.True(t, got.AuthoritativeEmpty)
	assert.ErrorContains(t, pdktest.Prune(ctx, groups, nil, true), "has no Prune handler")
}
