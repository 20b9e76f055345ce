package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

var understack = map[string]string{"PROFILE": "understack"}

// loadOriginalFake is testdata/neutron.json as the original operator leaves it: every marker of
// this project's replaced by the original's, exactly as its markers.py writes them.
func loadOriginalFake(t *testing.T) *fakeNeutron {
	t.Helper()
	b, err := os.ReadFile("testdata/neutron.json")
	require.NoError(t, err)
	text := strings.NewReplacer(
		`[openstack-sync.io/neutron-router-flavors group=pdktest/clouds/pdktest]`, `[understack-router-flavor-operator]`,
		`\"openstack-sync.io/managed-by\":\"neutron-router-flavors\"`, `\"_understack_router_flavor_operator\":\"managed\"`,
		`\"openstack-sync.io/marker-version\"`, `\"_understack_router_flavor_marker_version\"`,
		`\"openstack-sync.io/source\"`, `\"_understack_router_flavor_source\"`,
	).Replace(string(b))
	require.NotContains(t, text, "openstack-sync.io")
	f := &fakeNeutron{}
	require.NoError(t, json.Unmarshal([]byte(text), f))
	return f
}

func snapshot(t *testing.T, f *fakeNeutron) string {
	b, err := json.Marshal(f)
	require.NoError(t, err)
	return string(b)
}

func TestUnderstackProfileKeepsTheOriginalsFlavorsWithoutWriting(t *testing.T) {
	f := loadOriginalFake(t)
	before := snapshot(t, f)
	ctx := host(t, f, understack)
	res, err := pdktest.Reconcile(ctx, nil, obj, asa())
	require.NoError(t, err)
	require.NotNil(t, res.Lifecycle)
	assert.Equal(t, "Success", res.Lifecycle.Reason, res.Lifecycle.Message)
	assert.Empty(t, pdktest.Of(t, ctx).Writes(), "the flavor and profile the original converged are converged here: zero writes")
	assert.Equal(t, before, snapshot(t, f))
}

func TestUnderstackProfileWritesTheOriginalsMarkers(t *testing.T) {
	f := loadOriginalFake(t)
	spec := Spec{Name: "edge", Description: "edge routers", ServiceProfiles: []ProfileSpec{{Driver: dvr, MetaInfo: map[string]any{"vni_alloc": "auto"}}}}
	res, err := pdktest.Reconcile(host(t, f, understack), nil, obj, spec)
	require.NoError(t, err)
	require.Equal(t, "Success", res.Lifecycle.Reason, res.Lifecycle.Message)
	var made map[string]any
	for _, fl := range f.Flavors {
		if fl["name"] == "edge" {
			made = fl
		}
	}
	require.NotNil(t, made)
	assert.Equal(t, "edge routers [understack-router-flavor-operator]", made["description"])
	p := find(f.Profiles, made["service_profiles"].([]any)[0].(string))
	assert.JSONEq(t, `{"_understack_router_flavor_operator":"managed","_understack_router_flavor_marker_version":"v1",`+
		`"_understack_router_flavor_source":"NeutronRouterFlavor","vni_alloc":"auto"}`, p["metainfo"].(string))
}

// Under this project's profile the original's flavor and profile are not taken over (which would
// strip their markers and, for a bound profile, make a second one): the CR fails, nothing is
// written.
func TestDefaultProfileDoesNotTakeOverTheOriginalsFlavor(t *testing.T) {
	f := loadOriginalFake(t)
	before := snapshot(t, f)
	ctx := host(t, f, nil)
	res, err := pdktest.Reconcile(ctx, nil, obj, asa())
	require.NoError(t, err)
	require.NotEqual(t, "Success", res.Lifecycle.Reason)
	assert.Contains(t, res.Lifecycle.Message, "carries the ownership marker of the understack profile")
	assert.Empty(t, pdktest.Of(t, ctx).Writes())
	assert.Equal(t, before, snapshot(t, f))
}

// The understack profile's full prune deletes what the original owns and no CR claims (the orphan
// flavor and its profile), never the hand-made flavor or a flavor carrying only this project's
// marker.
func TestUnderstackProfilePrunesTheOriginalsOrphans(t *testing.T) {
	f := loadOriginalFake(t)
	f.Flavors = append(f.Flavors, map[string]any{"id": "f-ours", "name": "ours", "service_type": "L3_ROUTER_NAT", "enabled": true,
		"description": ours.flavor, "service_profiles": []any{}})
	ctx := host(t, f, map[string]string{"PROFILE": "understack", "PRUNE": "true"})
	raw, _ := json.Marshal(asa())
	require.NoError(t, pdk.Registered().Prune(ctx, &pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}}))
	assert.Nil(t, find(f.Flavors, "f-orphan"))
	assert.Nil(t, find(f.Profiles, "p-orphan"))
	for _, kept := range []string{"f-owned", "f-handmade", "f-ours"} {
		assert.NotNil(t, find(f.Flavors, kept), kept)
	}
}

func remark(t *testing.T, f *fakeNeutron, spec Spec, dry bool) (*pdk.RemarkResult, *pdktest.Host) {
	t.Helper()
	ctx := host(t, f, nil)
	raw, _ := json.Marshal(spec)
	res, err := pdk.Registered().Remark(ctx, &pdk.RemarkRequest{Object: obj, Spec: raw, From: "understack", To: "openstack-sync", DryRun: dry})
	require.NoError(t, err)
	return res, pdktest.Of(t, ctx)
}

// TestRemarkMovesFlavorAndProfiles: the flavor's description marker and its bound profile's
// metainfo keys move to this project's; Neutron changes no bound profile, so it is unbound,
// re-marked and bound again. Afterwards the CR is converged under this project's profile.
func TestRemarkMovesFlavorAndProfiles(t *testing.T) {
	f := loadOriginalFake(t)
	before := snapshot(t, f)
	res, h := remark(t, f, asa(), true)
	assert.Len(t, res.Changes, 2)
	assert.Empty(t, h.Writes(), "a dry run writes nothing")
	assert.Equal(t, before, snapshot(t, f))

	_, h = remark(t, f, asa(), false)
	var writes []string
	for _, w := range h.Writes() {
		writes = append(writes, w.Method+" "+w.Path)
	}
	assert.Equal(t, []string{"DELETE v2.0/flavors/f-owned/service_profiles/p-owned", "PUT v2.0/service_profiles/p-owned",
		"POST v2.0/flavors/f-owned/service_profiles", "PUT v2.0/flavors/f-owned"}, writes)
	assert.Equal(t, "ASA routers "+ours.flavor, find(f.Flavors, "f-owned")["description"])
	assert.JSONEq(t, `{"openstack-sync.io/managed-by":"neutron-router-flavors","openstack-sync.io/marker-version":"v1",`+
		`"openstack-sync.io/source":"NeutronRouterFlavor","resource_class":"asa"}`, find(f.Profiles, "p-owned")["metainfo"].(string))
	assert.Equal(t, []any{"p-owned"}, find(f.Flavors, "f-owned")["service_profiles"])

	res, h = remark(t, f, asa(), false)
	assert.Empty(t, res.Changes)
	assert.Empty(t, h.Writes(), "idempotent")
	// The remark names no credential group: the CR's first reconcile under this project's
	// profile records its group in the flavor's marker (the bound profile keeps its marker:
	// Neutron changes no bound profile), then it is converged.
	ctx := host(t, f, nil)
	out, err := pdktest.Reconcile(ctx, nil, obj, asa())
	require.NoError(t, err)
	assert.Equal(t, "Success", out.Lifecycle.Reason, out.Lifecycle.Message)
	writes = nil
	for _, w := range pdktest.Of(t, ctx).Writes() {
		writes = append(writes, w.Method+" "+w.Path)
	}
	assert.Equal(t, []string{"PUT v2.0/flavors/f-owned"}, writes)
	assert.Equal(t, "ASA routers "+ours.flavorMarker(), find(f.Flavors, "f-owned")["description"])
	ctx = host(t, f, nil)
	out, err = pdktest.Reconcile(ctx, nil, obj, asa())
	require.NoError(t, err)
	assert.Equal(t, "Success", out.Lifecycle.Reason, out.Lifecycle.Message)
	assert.Empty(t, pdktest.Of(t, ctx).Writes(), "converged under this project's profile: zero writes")
}

// A migrate that stopped after unbinding a profile finds it by the spec's entry and finishes.
func TestRemarkFinishesAStoppedRun(t *testing.T) {
	f := loadOriginalFake(t)
	find(f.Flavors, "f-owned")["service_profiles"] = []any{}
	_, h := remark(t, f, asa(), false)
	var writes []string
	for _, w := range h.Writes() {
		writes = append(writes, w.Method+" "+w.Path)
	}
	assert.Equal(t, []string{"PUT v2.0/service_profiles/p-owned", "POST v2.0/flavors/f-owned/service_profiles", "PUT v2.0/flavors/f-owned"}, writes)
	assert.Equal(t, []any{"p-owned"}, find(f.Flavors, "f-owned")["service_profiles"])
}
