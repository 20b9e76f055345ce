package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// Under this project's profile the pool's tags record the credential group (prune_scope group,
// docs/contract.md §7.1): a pool tagged before they did is given the group of the CR that names
// it (the migration), another group's pool is never taken over, a spec cannot claim a group, and a
// group's prune deletes only its own pools: never another group's, nor one whose group is unknown.
func TestTheTagsRecordTheGroup(t *testing.T) {
	const teamB = "openstack-sync.io/credential-group=team-b/clouds/prod"
	pool := func(id, name string, tags ...string) map[string]any {
		return map[string]any{"id": id, "name": name, "prefixes": []string{"10.0.0.0/8"}, "description": "pool desc", "tags": tags}
	}
	spec := originalSpec(map[string]any{"address_scope": nil})

	t.Run("a pool tagged without a group is given the CR's", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addPool(pool("p1", "pool-a", ownTag, "tenant"))
		_, err := w.reconcile(spec)
		require.NoError(t, err)
		assert.Equal(t, []string{"PUT v2.0/subnetpools/p1/tags"}, writes(w))
		assert.Equal(t, []any{groupTag, ownTag, "tenant"}, bodyOf(t, w, "PUT v2.0/subnetpools/p1/tags")["tags"])
	})
	t.Run("another group's pool fails the CR, untouched", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addPool(pool("p1", "pool-a", ownTag, teamB, "tenant"))
		_, err := w.reconcile(spec)
		var og *compat.OtherGroupError
		require.ErrorAs(t, err, &og)
		assert.ErrorContains(t, err, `subnet pool "pool-a" (p1) is owned by credential group team-b/clouds/prod (tag "`+teamB+
			`"), not this CR's pdktest/clouds/pdktest`)
		assert.Empty(t, writes(w))
	})
	t.Run("spec.tags may not record a group", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"tags": []any{"tenant", teamB}}))
		assert.EqualError(t, err, `spec.tags: "`+teamB+`" records a credential group, which only the plugin writes; remove it`)
		assert.Empty(t, w.host().Calls())
	})
	t.Run("a group's prune deletes only its own", func(t *testing.T) {
		w := newWorld(t)
		w.neutron.addPool(pool("p1", "mine", ownTag, groupTag))
		w.neutron.addPool(pool("p2", "theirs", ownTag, teamB))
		w.neutron.addPool(pool("p3", "legacy", ownTag))
		require.NoError(t, w.prune([]string{"other"}, false))
		assert.Equal(t, []string{"theirs", "legacy"}, w.poolNames())
	})
}
