package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

func (w *world) prune(names []string, authoritative bool) error {
	w.t.Helper()
	var specs []json.RawMessage
	for _, n := range names {
		raw, _ := json.Marshal(map[string]any{"name": n, "nautobot": map[string]any{"prefix_refs": []any{map[string]any{"id": "x"}}}})
		specs = append(specs, raw)
	}
	if specs == nil {
		specs = []json.RawMessage{}
	}
	return pdk.Registered().Prune(w.context(), &pdk.PruneRequest{DesiredSpecs: specs, AuthoritativeEmpty: authoritative,
		Credentials: pdktest.Group})
}

func (w *world) poolNames() []string {
	var out []string
	for _, p := range w.neutron.pools {
		out = append(out, p["name"].(string))
	}
	return out
}

func owned(name string) map[string]any {
	return map[string]any{"id": name + "-id", "name": name, "prefixes": []string{"10.0.0.0/8"}, "tags": []string{ownTag, groupTag}}
}

// Every case of the original's tests/test_subnet_pools_prune.py, by name, and its hook test's
// prune wiring (test_subnet_pools_hook.py).
func TestPrune(t *testing.T) {
	t.Run("test_prune_deletes_removed_owned_subnet_pool", func(t *testing.T) {
		w := newWorld(t)
		w.neutron.addPool(owned("removed-pool"))
		w.neutron.addPool(owned("kept-pool"))
		require.NoError(t, w.prune([]string{"kept-pool"}, false))
		assert.Equal(t, []string{"kept-pool"}, w.poolNames())
		assert.Empty(t, w.host().SourceCalls(), "prune reads nothing from Nautobot")
	})
	t.Run("test_prune_keeps_unowned_subnet_pool", func(t *testing.T) {
		w := newWorld(t)
		w.neutron.addPool(map[string]any{"name": "manual-pool", "prefixes": []string{"10.0.0.0/8"}})
		w.neutron.addPool(map[string]any{"name": "theirs", "prefixes": []string{"10.0.0.0/8"}, "tags": []string{"understack-operator-neutron-subnet-pool"}})
		require.NoError(t, w.prune([]string{"kept-pool"}, false))
		assert.Equal(t, []string{"manual-pool", "theirs"}, w.poolNames(), "the other profile's marker is not this profile's")
	})
	t.Run("test_prune_keeps_owned_pools_when_desired_list_is_empty", func(t *testing.T) {
		w := newWorld(t)
		w.neutron.addPool(owned("managed-pool"))
		require.NoError(t, w.prune(nil, false))
		assert.Equal(t, []string{"managed-pool"}, w.poolNames())
		assert.Empty(t, w.host().Lines(), "nothing is even listed")
	})
	t.Run("test_prune_deletes_when_empty_desired_is_authoritative", func(t *testing.T) {
		w := newWorld(t)
		w.neutron.addPool(owned("managed-pool"))
		require.NoError(t, w.prune(nil, true))
		assert.Empty(t, w.poolNames())
	})
	t.Run("test_plugin_prune_resolves_desired_names_before_deleting", func(t *testing.T) {
		// The names come from spec.name alone: a spec without one spares nothing and is skipped.
		w := newWorld(t)
		w.neutron.addPool(owned("a"))
		w.neutron.addPool(owned("b"))
		require.NoError(t, w.prune([]string{"a", ""}, false))
		assert.Equal(t, []string{"a"}, w.poolNames())
	})
	t.Run("test_plugin_prune_forwards_authoritative_empty_when_enabled", func(t *testing.T) {
		w := newWorld(t)
		w.neutron.addPool(owned("a"))
		require.NoError(t, w.prune([]string{""}, true))
		assert.Empty(t, w.poolNames())
	})
	t.Run("a pool with subnets is kept and the prune fails", func(t *testing.T) {
		w := newWorld(t)
		p := w.neutron.addPool(owned("busy"))
		w.neutron.inUse[p["id"].(string)] = true
		err := w.prune([]string{"other"}, false)
		assert.EqualError(t, err, "subnet pools still present: busy")
		assert.Equal(t, []string{"busy"}, w.poolNames())
	})
}

// The hook wiring of the original's tests/test_subnet_pools_hook.py that is the plugin's: its
// cleanup policy per PRUNE setting. (The rest runs the built module through the host:
// host/internal/pluginpass.)
func TestCleanupPolicy(t *testing.T) {
	m := pdk.Registered().Metadata
	t.Run("test_plugin_cleanup_policy_has_no_prune_step_when_disabled", func(t *testing.T) {
		assert.Equal(t, pdk.CleanupNone, m.Cleanup.WhenNoPrune)
	})
	t.Run("test_plugin_uses_finalized_prune_when_enabled", func(t *testing.T) {
		assert.Equal(t, pdk.CleanupFinalizedPrune, m.Cleanup.WhenPrune)
		assert.True(t, m.HasPrune)
	})
	t.Run("an address scope is never deleted, whatever the code does", func(t *testing.T) {
		for _, g := range m.Grants {
			for _, p := range g.Paths {
				if p == scopesPath || p == scopesPath+"/*" {
					assert.NotContains(t, g.Methods, "DELETE")
					assert.NotContains(t, g.Methods, "*")
				}
			}
		}
	})
}
