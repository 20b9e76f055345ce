package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
)

const theirTag = "understack-operator-neutron-subnet-pool"

// The profile decides the tag a pool is owned by (docs/abi.md section 6, "Profiles"): under
// understack exactly the original's, and neither profile takes over a pool tagged only by the
// other.
func TestProfiles(t *testing.T) {
	t.Run("under understack the original's tag is written, and no status.prefixes", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.config["PROFILE"] = "understack"
		res, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		assert.Nil(t, res.ExtraStatus)
		assert.Equal(t, []any{"tenant", theirTag}, bodyOf(t, w, "PUT v2.0/subnetpools/pool-2/tags")["tags"])
	})
	t.Run("under understack a pool the original converged is adopted with no write", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.config["PROFILE"] = "understack"
		w.neutron.addPool(map[string]any{"name": "pool-a", "prefixes": []string{"10.0.0.0/8"}, "description": "pool desc",
			"tags": []string{"tenant", theirTag}})
		_, err := w.reconcile(originalSpec(map[string]any{"address_scope": nil}))
		require.NoError(t, err)
		assert.Empty(t, writes(w))
	})
	t.Run("an unknown profile is refused naming the key", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.config["PROFILE"] = "theirs"
		_, err := w.reconcile(originalSpec(nil))
		assert.ErrorContains(t, err, `config PROFILE (the hook's <PREFIX>_PROFILE) must be openstack-sync or understack; got "theirs"`)
		assert.True(t, pdk.IsPermanent(err))
		assert.Empty(t, w.host().Calls())
	})
	foreign := []struct{ profile, tag, other string }{
		{"openstack-sync", theirTag, "understack"},
		{"understack", ownTag, "openstack-sync"},
	}
	for _, c := range foreign {
		t.Run("under "+c.profile+" a pool tagged only by "+c.other+" is not taken over", func(t *testing.T) {
			w := reconcileWorld(t, "10.0.0.0/8")
			w.config["PROFILE"] = c.profile
			w.neutron.addPool(map[string]any{"id": "p1", "name": "pool-a", "prefixes": []string{"10.0.0.0/8"}, "tags": []string{c.tag}})
			_, err := w.reconcile(originalSpec(nil))
			require.Error(t, err)
			assert.Contains(t, err.Error(), `subnet pool "pool-a" (p1) carries the ownership marker of the `+c.other+` profile (tag "`+c.tag+`")`)
			assert.Empty(t, writes(w))
		})
	}
	for _, profile := range []string{"openstack-sync", "understack"} {
		t.Run("under "+profile+" a pool tagged by both is reconciled keeping both, and pruned once", func(t *testing.T) {
			w := reconcileWorld(t, "10.0.0.0/8")
			w.config["PROFILE"] = profile
			w.neutron.addPool(map[string]any{"id": "p1", "name": "pool-a", "prefixes": []string{"10.0.0.0/8"},
				"description": "pool desc", "tags": []string{theirTag, ownTag, groupTag, "tenant"}})
			_, err := w.reconcile(originalSpec(map[string]any{"address_scope": nil}))
			require.NoError(t, err)
			assert.Empty(t, writes(w), "both tags are already there")
			require.NoError(t, w.prune([]string{"other"}, false))
			assert.Equal(t, []string{"DELETE v2.0/subnetpools/p1"}, writes(w))
			assert.Empty(t, w.poolNames())
		})
	}
	for _, c := range foreign {
		t.Run("under "+c.profile+" spec.tags may not hold the "+c.other+" tag", func(t *testing.T) {
			w := reconcileWorld(t, "10.0.0.0/8")
			w.config["PROFILE"] = c.profile
			_, err := w.reconcile(originalSpec(map[string]any{"tags": []any{"tenant", c.tag}}))
			assert.EqualError(t, err, `spec.tags: "`+c.tag+`" is the ownership tag of the `+c.other+` profile; remove it`)
			assert.Empty(t, w.host().Calls())
			assert.Empty(t, w.host().SourceCalls())
		})
	}
	t.Run("under understack prune deletes the original's pools, not this project's", func(t *testing.T) {
		w := newWorld(t)
		w.config["PROFILE"] = "understack"
		w.neutron.addPool(owned("ours"))
		w.neutron.addPool(map[string]any{"name": "theirs", "prefixes": []string{"10.0.0.0/8"}, "tags": []string{theirTag}})
		require.NoError(t, w.prune([]string{"kept"}, false))
		assert.Equal(t, []string{"ours"}, w.poolNames())
	})
}

// Under understack a failure names only the reason the original named (NautobotPrefixMissing);
// the host writes ReconcileError for the rest, as the original did.
func TestOriginalReasons(t *testing.T) {
	cases := []struct {
		name, profile, reason string
		change                func(w *world, s map[string]any)
	}{
		{"a missing prefix, this project's profile", "", prefixMissingReason, func(w *world, _ map[string]any) { w.nautobot.prefixes = nil }},
		{"a missing prefix, understack", "understack", prefixMissingReason, func(w *world, _ map[string]any) { w.nautobot.prefixes = nil }},
		{"an invalid spec, this project's profile", "", "InvalidSpec", func(_ *world, s map[string]any) { s["maximum_prefix_length"] = 64 }},
		{"an invalid spec, understack", "understack", "", func(_ *world, s map[string]any) { s["maximum_prefix_length"] = 64 }},
		{"a URL not allow-listed, understack", "understack", "", func(_ *world, s map[string]any) {
			nautobotSpec(s, map[string]any{"url": "https://nautobot.evil.example"})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.config["PROFILE"] = c.profile
			s := spec(nil)
			c.change(w, s)
			_, err := w.reconcile(s)
			require.Error(t, err)
			assert.Equal(t, c.reason, pdk.Reason(err))
		})
	}
}
