package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// The original operator's marker, exactly as its markers.py writes it (docs/migrating.md).
var understackExtra = map[string]any{
	"_understack_runbook_operator":       "managed",
	"_understack_runbook_marker_version": "v1",
	"_understack_runbook_source":         "IronicRunbook",
}

var understack = map[string]string{"PROFILE": "understack"}

// originalSite is the fake Ironic as the original operator leaves it: the converged runbook, an
// orphan whose CR was deleted, a hand-made runbook and one carrying this project's marker.
func originalSite(t *testing.T) *fakeIronic {
	f := newFakeIronic(t, "1.112")
	for _, rb := range f.runbooks {
		if _, ours := rb["extra"].(map[string]any)["openstack-sync.io/managed-by"]; ours {
			rb["extra"] = clone(understackExtra)
		}
	}
	f.runbooks = append(f.runbooks, map[string]any{"uuid": "a0000000-0000-4000-8000-000000000004", "name": "CUSTOM_OURS",
		"public": true, "owner": nil, "traits": []any{}, "steps": []any{}, "extra": mine().keys()},
		map[string]any{"uuid": "a0000000-0000-4000-8000-000000000005", "name": "CUSTOM_BOTH", "public": true, "owner": nil,
			"traits": []any{}, "steps": []any{}, "extra": swapped(understackExtra, markerSet{}, markersOf[compat.OpenStackSync])})
	return f
}

func clone(m map[string]any) map[string]any {
	raw, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return out
}

func TestUnderstackProfileAdoptsTheOriginalsRunbooksWithoutWriting(t *testing.T) {
	f := originalSite(t)
	ctx := fakeHost(t, f, nil, understack)
	res, err := pdktest.Reconcile(ctx, nil, obj, bios())
	require.NoError(t, err)
	assert.Empty(t, res.Notes)
	assert.Empty(t, pdktest.Of(t, ctx).Writes(), "a runbook the original converged is converged here too: zero writes")
	assert.Equal(t, understackExtra, f.find("CUSTOM_BIOS_DEFAULTS")["extra"], "its markers are left exactly as the original wrote them")
}

func TestUnderstackProfileWritesTheOriginalsMarker(t *testing.T) {
	f := originalSite(t)
	spec := bios()
	spec.RunbookName = "CUSTOM_NEW"
	spec.Extra = map[string]any{"ticket": "OPS-1"}
	_, err := pdktest.Reconcile(fakeHost(t, f, nil, understack), nil, obj, spec)
	require.NoError(t, err)
	want := clone(understackExtra)
	want["ticket"] = "OPS-1"
	assert.Equal(t, want, f.find("CUSTOM_NEW")["extra"])
}

// A runbook carrying only the other profile's marker is never taken over: adopting it would strip
// the marker its operator (or a move under way) depends on.
func TestNeitherProfileTakesOverTheOthersRunbook(t *testing.T) {
	for _, c := range []struct {
		config map[string]string
		name   string
		want   string
	}{
		{config: nil, name: "CUSTOM_BIOS_DEFAULTS", want: `runbook "CUSTOM_BIOS_DEFAULTS" (a0000000-0000-4000-8000-000000000001) carries the ownership marker of the understack profile (extra _understack_runbook_operator=managed)`},
		{config: understack, name: "CUSTOM_OURS", want: `runbook "CUSTOM_OURS" (a0000000-0000-4000-8000-000000000004) carries the ownership marker of the openstack-sync profile (extra openstack-sync.io/managed-by=ironic-runbooks)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := originalSite(t)
			before := clone(f.find(c.name)["extra"].(map[string]any))
			spec := bios()
			spec.RunbookName = c.name
			ctx := fakeHost(t, f, nil, c.config)
			_, err := pdktest.Reconcile(ctx, nil, obj, spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Empty(t, pdktest.Of(t, ctx).Writes())
			assert.Equal(t, before, f.find(c.name)["extra"])
		})
	}
}

// Under the understack profile the prune deletes what carries the original's marker (the orphan
// and the runbook carrying both markers, once), never the hand-made runbook nor one carrying only
// this project's marker.
func TestUnderstackProfilePrunesTheOriginalsOrphans(t *testing.T) {
	f := originalSite(t)
	ctx := fakeHost(t, f, nil, understack)
	raw, _ := json.Marshal(Spec{RunbookName: "CUSTOM_BIOS_DEFAULTS"})
	require.NoError(t, pdk.Registered().Prune(ctx, &pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}}))
	var deletes []string
	for _, w := range pdktest.Of(t, ctx).Writes() {
		deletes = append(deletes, w.Method+" "+w.Path)
	}
	assert.Equal(t, []string{"DELETE v1/runbooks/a0000000-0000-4000-8000-000000000003", "DELETE v1/runbooks/a0000000-0000-4000-8000-000000000005"}, deletes)
	for _, kept := range []string{"CUSTOM_BIOS_DEFAULTS", "CUSTOM_HANDMADE", "CUSTOM_OURS"} {
		assert.NotNil(t, f.find(kept), kept)
	}
}

func TestUnderstackProfileNamesNoReasonTheOriginalDidNot(t *testing.T) {
	f := originalSite(t)
	bad := map[string]any{"runbookName": "CUSTOM_X", "public": true, "owner": "p", "steps": []any{}}
	_, err := pdktest.Reconcile(fakeHost(t, f, nil, nil), nil, obj, bad)
	require.Error(t, err)
	assert.Equal(t, "InvalidSpec", pdk.Reason(err))
	_, err = pdktest.Reconcile(fakeHost(t, f, nil, understack), nil, obj, bad)
	require.Error(t, err)
	assert.Empty(t, pdk.Reason(err), "the original failed it with ReconcileError")
}

func remark(t *testing.T, ctx *pdk.Context, name string, dry bool) (*pdk.RemarkResult, error) {
	t.Helper()
	spec, _ := json.Marshal(map[string]any{"runbookName": name})
	return pdk.Registered().Remark(ctx, &pdk.RemarkRequest{Object: obj, Spec: spec, From: "understack", To: "openstack-sync", DryRun: dry})
}

// TestRemarkMovesTheMarkerInOneWrite: openstack-sync migrate re-marks through the plugin; the
// runbook's extra swaps the original's keys for this project's in one PATCH (never without a
// marker), keeps every other key, and a second run writes nothing.
func TestRemarkMovesTheMarkerInOneWrite(t *testing.T) {
	f := originalSite(t)
	f.find("CUSTOM_BIOS_DEFAULTS")["extra"].(map[string]any)["ticket"] = "OPS-7"
	ctx := fakeHost(t, f, nil, nil)
	res, err := remark(t, ctx, "CUSTOM_BIOS_DEFAULTS", true)
	require.NoError(t, err)
	assert.Equal(t, []string{"ironic runbook CUSTOM_BIOS_DEFAULTS (a0000000-0000-4000-8000-000000000001): extra " +
		"_understack_runbook_marker_version,_understack_runbook_operator,_understack_runbook_source -> " +
		"openstack-sync.io/managed-by,openstack-sync.io/marker-version,openstack-sync.io/source"}, res.Changes)
	assert.Empty(t, pdktest.Of(t, ctx).Writes(), "a dry run writes nothing")

	ctx = fakeHost(t, f, nil, nil)
	_, err = remark(t, ctx, "CUSTOM_BIOS_DEFAULTS", false)
	require.NoError(t, err)
	writes := pdktest.Of(t, ctx).Writes()
	require.Len(t, writes, 1)
	assert.Equal(t, "PATCH", writes[0].Method)
	// The remark names no credential group: the marker it writes records none, and the CR's next
	// reconcile adds its group's.
	want := markersOf[compat.OpenStackSync].keys()
	want["ticket"] = "OPS-7"
	assert.Equal(t, want, f.find("CUSTOM_BIOS_DEFAULTS")["extra"])

	ctx = fakeHost(t, f, nil, nil)
	res, err = remark(t, ctx, "CUSTOM_BIOS_DEFAULTS", false)
	require.NoError(t, err)
	assert.Empty(t, res.Changes)
	assert.Empty(t, pdktest.Of(t, ctx).Writes(), "idempotent")

	// The moved runbook's first reconcile under this project's profile records the group in the
	// marker (one PATCH of extra); then it is converged: zero writes.
	ctx = fakeHost(t, f, nil, nil)
	spec := bios()
	spec.Extra = map[string]any{"ticket": "OPS-7"}
	_, err = pdktest.Reconcile(ctx, nil, obj, spec)
	require.NoError(t, err)
	writes = pdktest.Of(t, ctx).Writes()
	require.Len(t, writes, 1)
	assert.Equal(t, "PATCH v1/runbooks/a0000000-0000-4000-8000-000000000001", writes[0].String())
	want = mine().keys()
	want["ticket"] = "OPS-7"
	assert.Equal(t, want, f.find("CUSTOM_BIOS_DEFAULTS")["extra"])
	ctx = fakeHost(t, f, nil, nil)
	_, err = pdktest.Reconcile(ctx, nil, obj, spec)
	require.NoError(t, err)
	assert.Empty(t, pdktest.Of(t, ctx).Writes())

	res, err = remark(t, fakeHost(t, f, nil, nil), "CUSTOM_HANDMADE", false)
	require.NoError(t, err)
	assert.Empty(t, res.Changes)
	assert.Contains(t, res.Notes[0], "carries no marker of either profile: left alone")
}
