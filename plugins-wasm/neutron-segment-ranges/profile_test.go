package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

var understack = map[string]string{"PROFILE": "understack"}

// originalSite adds what the original operator leaves in Neutron: a converged range under its name
// prefix, and an orphan whose CR was deleted.
func originalSite(t *testing.T) *fakeNeutron {
	f := loadFake(t)
	f.ranges = append(f.ranges,
		map[string]any{"id": "us-1", "name": "understack-sr:edge-vlans", "shared": true, "project_id": nil,
			"network_type": "vlan", "physical_network": "physnet1", "minimum": 600, "maximum": 699},
		map[string]any{"id": "us-2", "name": "understack-sr:orphan", "shared": true, "project_id": nil,
			"network_type": "vxlan", "physical_network": nil, "minimum": 7000, "maximum": 7099})
	return f
}

// withDelete answers DELETE of a range, which the shared fake does not.
func (f *fakeNeutron) withDelete(r pdktest.Call) (int, any) {
	if r.Method == http.MethodDelete && strings.HasPrefix(r.Path, rangesPath+"/") {
		id := strings.TrimPrefix(r.Path, rangesPath+"/")
		for i, cur := range f.ranges {
			if cur["id"] == id {
				f.ranges = slices.Delete(f.ranges, i, i+1)
				return http.StatusNoContent, nil
			}
		}
		return http.StatusNotFound, pdktest.NeutronFault("Network Segment Range " + id + " could not be found.")
	}
	return f.handle(r)
}

func (f *fakeNeutron) context(t *testing.T, config map[string]string) *pdk.Context {
	return pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.withDelete, Config: config})
}

var edge = map[string]any{"name": "edge-vlans", "network_type": "vlan", "physical_network": "physnet1", "minimum": 600, "maximum": 699}

func TestUnderstackProfileFindsTheOriginalsRangeByItsPrefix(t *testing.T) {
	f := originalSite(t)
	ctx := f.context(t, understack)
	res, err := pdktest.Reconcile(ctx, nil, obj, edge)
	require.NoError(t, err)
	require.Equal(t, "Success", res.Lifecycle.Reason, res.Lifecycle.Message)
	assert.Equal(t, "us-1", res.Lifecycle.ID)
	assert.Empty(t, pdktest.Of(t, ctx).Writes(), "the range the original made is converged: zero writes")
}

// The original never adopted a range without its prefix: the hand-made one of the same name is
// left alone, and the CR's range is made under the prefix.
func TestUnderstackProfileLeavesAHandMadeRangeAlone(t *testing.T) {
	f := originalSite(t)
	spec := map[string]any{"name": "tenant-vlans", "network_type": "vlan", "physical_network": "physnet1", "minimum": 800, "maximum": 899}
	ctx := f.context(t, understack)
	_, err := pdktest.Reconcile(ctx, nil, obj, spec)
	require.NoError(t, err)
	require.Len(t, f.byName("understack-sr:tenant-vlans"), 1)
	hand := f.byName("tenant-vlans")
	require.Len(t, hand, 1)
	assert.EqualValues(t, 200, hand[0]["minimum"], "untouched")
}

func TestDefaultProfileDoesNotShadowTheOriginalsRange(t *testing.T) {
	f := originalSite(t)
	ctx := f.context(t, nil)
	res, err := pdktest.Reconcile(ctx, nil, obj, edge)
	require.NoError(t, err)
	require.NotEqual(t, "Success", res.Lifecycle.Reason)
	assert.Contains(t, res.Lifecycle.Message, `segment range "understack-sr:edge-vlans" (us-1) carries the ownership marker of the understack profile (name prefix "understack-sr:")`)
	assert.Empty(t, pdktest.Of(t, ctx).Writes(), "no second range over the same ids")
}

func TestUnderstackProfilePrunesTheOriginalsOrphans(t *testing.T) {
	f := originalSite(t)
	ctx := f.context(t, understack)
	raw, _ := json.Marshal(edge)
	require.NoError(t, pdk.Registered().Prune(ctx, &pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}}))
	assert.Empty(t, f.byName("understack-sr:orphan"))
	assert.Len(t, f.byName("understack-sr:edge-vlans"), 1)
	assert.Len(t, f.byName("tenant-vlans"), 1, "a range without the prefix is never the plugin's")

	// Under this project's profile nothing carries a marker: a prune deletes nothing.
	f = originalSite(t)
	ctx = f.context(t, nil)
	require.NoError(t, pdk.Registered().Prune(ctx, &pdk.PruneRequest{AuthoritativeEmpty: true}))
	assert.Empty(t, pdktest.Of(t, ctx).Requests())
}

func remark(t *testing.T, f *fakeNeutron, spec map[string]any, dry bool) (*pdk.RemarkResult, *pdktest.Host, error) {
	t.Helper()
	ctx := f.context(t, nil)
	raw, _ := json.Marshal(spec)
	res, err := pdk.Registered().Remark(ctx, &pdk.RemarkRequest{Object: obj, Spec: raw, From: "understack", To: "openstack-sync", DryRun: dry})
	return res, pdktest.Of(t, ctx), err
}

// TestRemarkRenamesTheRange: the range moves from the original's prefixed name to the CR's name in
// one PUT; afterwards the CR is converged under this project's profile.
func TestRemarkRenamesTheRange(t *testing.T) {
	f := originalSite(t)
	res, h, err := remark(t, f, edge, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"segment range understack-sr:edge-vlans (us-1): name understack-sr:edge-vlans -> edge-vlans"}, res.Changes)
	assert.Empty(t, h.Writes())

	_, h, err = remark(t, f, edge, false)
	require.NoError(t, err)
	require.Len(t, h.Writes(), 1)
	assert.Len(t, f.byName("edge-vlans"), 1)
	assert.Empty(t, f.byName("understack-sr:edge-vlans"))

	res, h, err = remark(t, f, edge, false)
	require.NoError(t, err)
	assert.Empty(t, res.Changes)
	assert.Empty(t, h.Writes(), "idempotent")

	ctx := f.context(t, nil)
	out, err := pdktest.Reconcile(ctx, nil, obj, edge)
	require.NoError(t, err)
	assert.Equal(t, "Success", out.Lifecycle.Reason)
	assert.Equal(t, "us-1", out.Lifecycle.ID)
	assert.Empty(t, pdktest.Of(t, ctx).Writes())
}

func TestRemarkRefusesRangesUnderBothNames(t *testing.T) {
	f := originalSite(t)
	f.ranges = append(f.ranges, map[string]any{"id": "dup", "name": "edge-vlans", "shared": true, "network_type": "vlan",
		"physical_network": "physnet1", "minimum": 600, "maximum": 699})
	_, h, err := remark(t, f, edge, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `segment ranges "understack-sr:edge-vlans" (us-1) and "edge-vlans" (dup) both exist`)
	assert.Empty(t, h.Writes())
}
