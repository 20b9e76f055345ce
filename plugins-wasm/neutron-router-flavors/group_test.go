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

// Under this project's profile the markers record the credential group (prune_scope group,
// docs/contract.md §7.1): a flavor marked before they did is given the group of the CR that names
// it (the migration), another group's flavor is never taken over nor its profiles adopted, and a
// group's prune deletes only its own flavors and profiles: never another group's, nor a flavor
// whose group is unknown.
func TestTheMarkersRecordTheGroup(t *testing.T) {
	teamB, err := markersOf[compat.OpenStackSync].InGroup(pdk.Credentials{Namespace: "team-b", SecretName: "clouds", CloudName: "prod"})
	require.NoError(t, err)
	legacy := markersOf[compat.OpenStackSync]
	metainfo := func(m markerSet, meta map[string]any) string {
		s, err := m.markedMetainfo(meta)
		require.NoError(t, err)
		return s
	}
	addFlavor := func(f *fakeNeutron, id, name, desc string, profiles ...any) {
		f.Flavors = append(f.Flavors, map[string]any{"id": id, "name": name, "service_type": l3Service, "enabled": true,
			"description": desc, "service_profiles": profiles})
	}
	writesOf := func(ctx *pdk.Context) []string {
		var out []string
		for _, w := range pdktest.Of(t, ctx).Writes() {
			out = append(out, w.Method+" "+w.Path)
		}
		return out
	}

	t.Run("a flavor marked without a group is given the CR's", func(t *testing.T) {
		f := loadFake(t)
		find(f.Flavors, "f-owned")["description"] = "ASA routers " + legacy.flavor
		ctx := host(t, f, nil)
		res, err := pdktest.Reconcile(ctx, nil, obj, asa())
		require.NoError(t, err)
		assert.Equal(t, "Success", res.Lifecycle.Reason, res.Lifecycle.Message)
		assert.Equal(t, []string{"PUT v2.0/flavors/f-owned"}, writesOf(ctx))
		assert.Equal(t, "ASA routers "+ours.flavorMarker(), find(f.Flavors, "f-owned")["description"])
	})
	t.Run("another group's flavor fails the CR, untouched", func(t *testing.T) {
		f := loadFake(t)
		find(f.Flavors, "f-owned")["description"] = "ASA routers " + teamB.flavorMarker()
		ctx := host(t, f, nil)
		res, err := pdktest.Reconcile(ctx, nil, obj, asa())
		require.NoError(t, err, "a lifecycle plugin reports failures in its result")
		assert.Contains(t, res.Lifecycle.Message, `router flavor "asa" (f-owned) is owned by credential group team-b/clouds/prod`)
		assert.Empty(t, writesOf(ctx))
	})
	t.Run("another group's profile is not adopted", func(t *testing.T) {
		f := loadFake(t)
		// p-free is the unowned match of this spec; marked for team-b it is passed over.
		find(f.Profiles, "p-free")["metainfo"] = metainfo(teamB, map[string]any{"vni_alloc": "on"})
		ctx := host(t, f, nil)
		res, err := pdktest.Reconcile(ctx, nil, obj, Spec{Name: "edge", ServiceProfiles: []ProfileSpec{{Driver: dvr, MetaInfo: map[string]any{"vni_alloc": "on"}}}})
		require.NoError(t, err)
		assert.Equal(t, "Success", res.Lifecycle.Reason, res.Lifecycle.Message)
		assert.NotContains(t, writesOf(ctx), "PUT v2.0/service_profiles/p-free")
		assert.Contains(t, writesOf(ctx), "POST v2.0/service_profiles")
	})
	t.Run("a group's prune deletes only its own", func(t *testing.T) {
		f := loadFake(t)
		addFlavor(f, "f-legacy", "legacy", legacy.flavor)
		addFlavor(f, "f-team-b", "team-b", teamB.flavorMarker())
		f.Profiles = append(f.Profiles, map[string]any{"id": "p-team-b", "driver": dvr, "enabled": true, "description": "",
			"metainfo": metainfo(teamB, nil)})
		raw, _ := json.Marshal(Spec{Name: "asa"})
		require.NoError(t, pdk.Registered().Prune(host(t, f, map[string]string{"PRUNE": "true"}),
			&pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}, Credentials: pdktest.Group}))
		assert.Nil(t, find(f.Flavors, "f-orphan"), "this group's orphan")
		assert.NotNil(t, find(f.Flavors, "f-legacy"), "a flavor whose group is unknown")
		assert.NotNil(t, find(f.Flavors, "f-team-b"), "another group's flavor")
		assert.NotNil(t, find(f.Profiles, "p-team-b"), "another group's unbound profile")
		assert.Nil(t, find(f.Profiles, "p-stray"), "an unbound profile marked before markers recorded groups")
	})
}
