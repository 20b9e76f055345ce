package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// Under this project's profile the marker records the credential group (prune_scope group,
// docs/contract.md §7.1): a runbook marked before markers did is given the group of the CR that
// names it (the migration), another group's runbook is never taken over, and a group's prune
// deletes only its own runbooks: never another group's, nor one whose group is unknown.
func TestTheMarkerRecordsTheGroup(t *testing.T) {
	legacy := markersOf[compat.OpenStackSync].keys() // as every earlier version wrote it
	teamB, err := markersOf[compat.OpenStackSync].InGroup(pdk.Credentials{Namespace: "team-b", SecretName: "clouds", CloudName: "prod"})
	require.NoError(t, err)
	add := func(f *fakeIronic, uuid, name string, extra map[string]any) {
		f.runbooks = append(f.runbooks, map[string]any{"uuid": uuid, "name": name, "public": true, "owner": nil,
			"disable_ramdisk": false, "description": nil, "traits": []any{}, "extra": extra, "steps": []any{}})
	}
	spec := func(name string) Spec {
		return Spec{RunbookName: name, Public: true, Steps: []any{map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "order": float64(5)}}}
	}

	t.Run("a runbook marked without a group is given the CR's", func(t *testing.T) {
		f := newFakeIronic(t, "1.96")
		add(f, "b0000000-0000-4000-8000-000000000001", "CUSTOM_LEGACY", legacy)
		a, h := connectFake(t, f)
		_, err := reconcile(a, spec("CUSTOM_LEGACY"))
		require.NoError(t, err)
		writes, _ := h.WriteLines()
		assert.Equal(t, []string{"PATCH v1/runbooks/b0000000-0000-4000-8000-000000000001"}, writes)
		assert.Equal(t, mine().keys(), f.find("CUSTOM_LEGACY")["extra"])
	})
	t.Run("another group's runbook fails the CR, untouched", func(t *testing.T) {
		f := newFakeIronic(t, "1.96")
		add(f, "b0000000-0000-4000-8000-000000000002", "CUSTOM_TEAM_B", teamB.keys())
		a, h := connectFake(t, f)
		_, err := reconcile(a, spec("CUSTOM_TEAM_B"))
		var og *compat.OtherGroupError
		require.ErrorAs(t, err, &og)
		assert.ErrorContains(t, err, `runbook "CUSTOM_TEAM_B" (b0000000-0000-4000-8000-000000000002) is owned by credential group `+
			`team-b/clouds/prod (extra openstack-sync.io/credential-group), not this CR's pdktest/clouds/pdktest`)
		assert.Empty(t, h.Writes())
	})
	t.Run("a group's prune deletes only its own", func(t *testing.T) {
		f := newFakeIronic(t, "1.96")
		add(f, "b0000000-0000-4000-8000-000000000001", "CUSTOM_LEGACY", legacy)
		add(f, "b0000000-0000-4000-8000-000000000002", "CUSTOM_TEAM_B", teamB.keys())
		a, h := connectFake(t, f)
		out, err := prune(a, []Spec{{RunbookName: "CUSTOM_BIOS_DEFAULTS"}}, false)
		require.NoError(t, err)
		assert.Equal(t, []string{"CUSTOM_ORPHAN"}, out.Deleted)
		assert.Equal(t, []string{"CUSTOM_HANDMADE"}, out.Unowned)
		assert.Equal(t, []string{"CUSTOM_LEGACY"}, out.Ungrouped)
		writes, _ := h.WriteLines()
		assert.Equal(t, []string{"DELETE v1/runbooks/a0000000-0000-4000-8000-000000000003"}, writes)
	})
	t.Run("a request without a group is refused before any request", func(t *testing.T) {
		f := newFakeIronic(t, "1.96")
		ctx := fakeHost(t, f, nil, nil)
		_, err := pdk.Registered().Reconcile(ctx, &pdk.ReconcileRequest{Object: obj, Spec: []byte(`{"runbookName":"CUSTOM_X","steps":[{"interface":"deploy","step":"erase_devices_metadata","order":5}]}`)})
		require.ErrorContains(t, err, "the request names no credential group")
		assert.True(t, pdk.IsPermanent(err))
		err = pdk.Registered().Prune(ctx, &pdk.PruneRequest{DesiredSpecs: nil, AuthoritativeEmpty: true})
		require.ErrorContains(t, err, "the request names no credential group")
		assert.Empty(t, pdktest.Of(t, ctx).Calls())
	})
}
