package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ownTag = "openstack-sync.io/managed-by=neutron-subnet-pools"

// groupTag records pdktest's credential group (pdktest.Group), which its requests name.
const groupTag = "openstack-sync.io/credential-group=pdktest/clouds/pdktest"

// originalSpec is the original's reconcile test spec (_spec of test_subnet_pools_reconcile.py):
// pool-a in project-a, one /8 prefix from Nautobot, scope-a.
func originalSpec(overrides map[string]any) map[string]any {
	s := spec(map[string]any{"name": "pool-a", "project_id": "project-a", "address_scope": map[string]any{"name": "scope-a"},
		"default_prefix_length": 24, "minimum_prefix_length": 24, "maximum_prefix_length": 28, "shared": false,
		"description": "pool desc", "tags": []any{"tenant"}})
	nautobotSpec(s, map[string]any{"prefix_refs": []any{map[string]any{"id": publicID}}})
	for k, v := range overrides {
		if v == nil {
			delete(s, k)
			continue
		}
		s[k] = v
	}
	return s
}

// reconcileWorld answers prefix publicID with cidr and has scope-a (IPv4) when withScope.
func reconcileWorld(t *testing.T, cidrs ...string) *world {
	w := newWorld(t)
	w.nautobot.prefixes = nil
	ids := []string{publicID, publicID2}
	for i, c := range cidrs {
		w.nautobot.prefixes = append(w.nautobot.prefixes, nbPrefix{ID: ids[i], Prefix: c, Status: "Active", Type: "pool",
			Namespace: "Rackspace", Tags: []string{"openstack-subnet-pool"}, Locations: []string{"iad3-dev"}})
	}
	return w
}

func writes(w *world) []string {
	lines, _ := w.host().WriteLines()
	return lines
}

func bodyOf(t *testing.T, w *world, line string) map[string]any {
	t.Helper()
	lines, bodies := w.host().WriteLines()
	for i, l := range lines {
		if l == line {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(bodies[i]), &m))
			return m
		}
	}
	t.Fatalf("no write %q among %v", line, lines)
	return nil
}

// Every case of the original's tests/test_subnet_pools_reconcile.py, by name.
func TestReconcile(t *testing.T) {
	t.Run("test_sync_subnet_pool_creates_with_resolved_address_scope_and_tags", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		_, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		assert.Equal(t, []string{"POST v2.0/subnetpools", "PUT v2.0/subnetpools/pool-1/tags"}, writes(w))
		create := bodyOf(t, w, "POST v2.0/subnetpools")["subnetpool"].(map[string]any)
		assert.Equal(t, "scope-id", create["address_scope_id"])
		assert.EqualValues(t, 24, create["default_prefixlen"])
		assert.EqualValues(t, 24, create["min_prefixlen"])
		assert.EqualValues(t, 28, create["max_prefixlen"])
		assert.Equal(t, false, create["shared"])
		assert.NotContains(t, create, "ip_version", "the family follows the prefixes")
		assert.Equal(t, []any{groupTag, ownTag, "tenant"}, bodyOf(t, w, "PUT v2.0/subnetpools/pool-1/tags")["tags"])
	})
	t.Run("test_sync_subnet_pool_creates_without_address_scope_when_absent", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"address_scope": nil}))
		require.NoError(t, err)
		assert.NotContains(t, bodyOf(t, w, "POST v2.0/subnetpools")["subnetpool"], "address_scope_id")
		for _, l := range w.host().Lines() {
			assert.NotContains(t, l, "address-scopes", "no scope is looked up")
		}
	})
	t.Run("test_sync_subnet_pool_updates_mutable_drift", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		w.neutron.addPool(map[string]any{"id": "pool-id", "name": "pool-a", "address_scope_id": "old-scope",
			"prefixes": []string{"10.1.0.0/16"}, "description": "pool desc", "tags": []string{groupTag, ownTag, "tenant"}})
		_, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		update := bodyOf(t, w, "PUT v2.0/subnetpools/pool-id")["subnetpool"].(map[string]any)
		assert.Equal(t, "scope-id", update["address_scope_id"])
		assert.Equal(t, []any{"10.0.0.0/8"}, update["prefixes"])
		assert.Equal(t, []string{"PUT v2.0/subnetpools/pool-id"}, writes(w), "the tags were right already")
	})
	t.Run("test_sync_adopts_ansible_created_pool_without_shrinking", func(t *testing.T) {
		// A pool the retired Ansible role made: untagged, unscoped, shared.
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		w.neutron.addPool(map[string]any{"id": "pool-id", "name": "pool-a", "prefixes": []string{"10.0.0.0/8"},
			"description": "pool desc", "shared": true})
		res, err := w.reconcile(originalSpec(map[string]any{"shared": true}))
		require.NoError(t, err)
		assert.Empty(t, res.Notes)
		update := bodyOf(t, w, "PUT v2.0/subnetpools/pool-id")["subnetpool"].(map[string]any)
		assert.Equal(t, "scope-id", update["address_scope_id"])
		assert.NotContains(t, update, "prefixes", "unchanged, so not pushed")
		assert.Equal(t, []any{groupTag, ownTag, "tenant"}, bodyOf(t, w, "PUT v2.0/subnetpools/pool-id/tags")["tags"])
	})
	t.Run("test_sync_reports_note_and_keeps_prefixes_when_pool_would_shrink", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		w.neutron.addPool(map[string]any{"id": "pool-id", "name": "pool-a", "address_scope_id": "scope-id",
			"prefixes": []string{"10.0.0.0/8", "192.0.2.0/24"}, "description": "pool desc", "tags": []string{groupTag, ownTag, "tenant"}})
		res, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		require.Len(t, res.Notes, 1)
		assert.Equal(t, "Neutron subnet pool 'pool-a' still holds prefixes no longer referenced in Nautobot (192.0.2.0/24); "+
			"Neutron does not allow removing prefixes from a pool, so drain and delete the pool to remove them", res.Notes[0])
		assert.Empty(t, writes(w), "nothing else differs, and the prefixes are not pushed")
	})
	t.Run("test_sync_subnet_pool_reports_resolved_prefix_links", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		res, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"prefixes": []any{map[string]any{"id": publicID, "cidr": "10.0.0.0/8",
			"url": nbURL + "/ipam/prefixes/" + publicID + "/"}}}, res.ExtraStatus)
	})
	t.Run("test_ensure_address_scope_by_id_uses_exact_lookup", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-by-id", "scope-a", 4)
		_, err := w.reconcile(originalSpec(map[string]any{"address_scope": map[string]any{"id": "scope-by-id"}}))
		require.NoError(t, err)
		assert.Contains(t, w.host().Lines(), "GET v2.0/address-scopes/scope-by-id")
		assert.NotContains(t, w.host().Lines(), "GET v2.0/address-scopes?ip_version=4&name=scope-a&project_id=project-a")
		assert.Equal(t, "scope-by-id", bodyOf(t, w, "POST v2.0/subnetpools")["subnetpool"].(map[string]any)["address_scope_id"])
	})
	t.Run("test_ensure_address_scope_returns_none_when_absent", func(t *testing.T) {
		n := newNeutron(newWorld(t).context())
		s, err := n.ensureAddressScope(&Spec{Name: "pool-a"}, 4)
		require.NoError(t, err)
		assert.Nil(t, s)
	})
	t.Run("test_ensure_address_scope_rejects_ambiguous_name", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-a", "scope-a", 4)
		w.neutron.addScope("scope-b", "scope-a", 4)
		_, err := w.reconcile(originalSpec(nil))
		assert.EqualError(t, err, "Address scope name 'scope-a' matched 2 scopes; set spec.address_scope.id or project_id")
		assert.Empty(t, writes(w))
	})
	t.Run("test_ensure_address_scope_adopts_existing_named_scope", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("existing", "scope-a", 4)
		_, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		assert.NotContains(t, writes(w), "POST v2.0/address-scopes", "reused, never recreated")
		assert.Equal(t, "existing", bodyOf(t, w, "POST v2.0/subnetpools")["subnetpool"].(map[string]any)["address_scope_id"])
	})
	t.Run("test_ensure_address_scope_creates_named_scope_when_absent", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"address_scope": map[string]any{"name": "scope-a", "shared": true}}))
		require.NoError(t, err)
		create := bodyOf(t, w, "POST v2.0/address-scopes")["address_scope"].(map[string]any)
		assert.Equal(t, map[string]any{"name": "scope-a", "ip_version": 4.0, "shared": true, "project_id": "project-a"}, create)
	})
	t.Run("test_ensure_address_scope_creates_scope_in_pool_ip_family", func(t *testing.T) {
		w := reconcileWorld(t, "2001:db8::/48")
		_, err := w.reconcile(originalSpec(map[string]any{"default_prefix_length": 64, "minimum_prefix_length": 56,
			"maximum_prefix_length": 64}))
		require.NoError(t, err)
		assert.EqualValues(t, 6, bodyOf(t, w, "POST v2.0/address-scopes")["address_scope"].(map[string]any)["ip_version"])
	})
	t.Run("test_ensure_address_scope_create_false_requires_existing_scope", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"address_scope": map[string]any{"name": "scope-a", "create": false}}))
		assert.EqualError(t, err, "Address scope 'scope-a' was not found for IPv4 and spec.address_scope.create is false")
		assert.Empty(t, writes(w))
	})
	t.Run("test_sync_subnet_pool_creates_address_scope_then_links_it", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		assert.Equal(t, []string{"POST v2.0/address-scopes", "POST v2.0/subnetpools", "PUT v2.0/subnetpools/pool-2/tags"}, writes(w))
		assert.Equal(t, "scope-1", bodyOf(t, w, "POST v2.0/subnetpools")["subnetpool"].(map[string]any)["address_scope_id"])
	})
	t.Run("test_validate_prefixes_rejects_mixed_families", func(t *testing.T) {
		// Nautobot's mixed families stop resolution first (its own message); the pool-level check
		// stays for prefixes of one family that do not parse as one network list.
		w := reconcileWorld(t, "10.0.0.0/8", "fd00::/48")
		_, err := w.reconcile(nautobotSpec(originalSpec(nil), map[string]any{"prefix_refs": []any{
			map[string]any{"id": publicID}, map[string]any{"id": publicID2}}}))
		assert.ErrorContains(t, err, "mixed IP versions")
		assert.Empty(t, writes(w))
	})
	t.Run("test_validate_prefixes_rejects_length_exceeding_family_max", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"maximum_prefix_length": 64}))
		assert.EqualError(t, err, "Subnet pool 'pool-a' maximum_prefix_length=64 exceeds IPv4 maximum prefix length 32")
		assert.Empty(t, writes(w))
	})
	t.Run("test_validate_prefixes_requires_all_prefix_lengths", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"default_prefix_length": nil, "minimum_prefix_length": nil,
			"maximum_prefix_length": nil}))
		assert.EqualError(t, err, "Subnet pool 'pool-a' is missing prefix length(s) ['minimum_prefix_length', 'default_prefix_length', "+
			"'maximum_prefix_length']: set minimum_prefix_length, default_prefix_length, and maximum_prefix_length on the CR spec")
	})
	t.Run("test_validate_prefixes_rejects_min_greater_than_max", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"minimum_prefix_length": 28, "maximum_prefix_length": 24}))
		assert.ErrorContains(t, err, "minimum_prefix_length must be less")
	})
	t.Run("test_sync_rejects_second_default_for_same_family", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		w.neutron.addPool(map[string]any{"id": "other-id", "name": "other-default", "prefixes": []string{"172.16.0.0/12"}, "is_default": true})
		_, err := w.reconcile(originalSpec(map[string]any{"is_default": true}))
		assert.EqualError(t, err, "Subnet pool 'pool-a' requests is_default=true for IPv4, but pool 'other-default' (other-id) is already "+
			"the default for that family. Neutron allows only one default subnet pool per IP family; clear is_default on the other pool or on this CR.")
		assert.Empty(t, writes(w))
	})
	t.Run("test_sync_allows_default_when_no_other_default_exists", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"is_default": true}))
		require.NoError(t, err)
		assert.Equal(t, true, bodyOf(t, w, "POST v2.0/subnetpools")["subnetpool"].(map[string]any)["is_default"])
	})
	t.Run("test_sync_default_does_not_conflict_with_itself", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		w.neutron.addPool(map[string]any{"id": "pool-id", "name": "pool-a", "address_scope_id": "scope-id", "prefixes": []string{"10.0.0.0/8"},
			"description": "pool desc", "is_default": true, "tags": []string{groupTag, ownTag, "tenant"}})
		_, err := w.reconcile(originalSpec(map[string]any{"is_default": true}))
		require.NoError(t, err)
		assert.Empty(t, writes(w))
	})
	t.Run("test_sync_skips_default_check_when_not_default", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addPool(map[string]any{"id": "other-id", "name": "other-default", "prefixes": []string{"172.16.0.0/12"}, "is_default": true})
		_, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		for _, l := range w.host().Lines() {
			assert.NotContains(t, l, "is_default", "no query for defaults")
		}
	})
}

// Beyond the original: what real Neutron answers (contract suite) that its mocks did not.
func TestReconcileAgainstNeutronsOwnShapes(t *testing.T) {
	t.Run("a converged pool writes nothing, its lengths read back as strings", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		_, err = w.reconcile(originalSpec(nil))
		require.NoError(t, err)
		assert.Empty(t, writes(w))
	})
	t.Run("adjacent prefixes Neutron merged are no shrink and no drift", func(t *testing.T) {
		// The original compared the CR's /24s with Neutron's merged /23 and found a shrink.
		w := reconcileWorld(t, "10.0.0.0/24", "10.0.1.0/24")
		s := nautobotSpec(originalSpec(nil), map[string]any{"prefix_refs": []any{map[string]any{"id": publicID}, map[string]any{"id": publicID2}}})
		_, err := w.reconcile(s)
		require.NoError(t, err)
		assert.Equal(t, []string{"10.0.0.0/23"}, prefixesOf(w.neutron.pool("pool-a")))
		res, err := w.reconcile(s)
		require.NoError(t, err)
		assert.Empty(t, res.Notes)
		assert.Empty(t, writes(w))
	})
	t.Run("a pool only grows", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/24", "10.0.8.0/24")
		_, err := w.reconcile(nautobotSpec(originalSpec(nil), map[string]any{"prefix_refs": []any{map[string]any{"id": publicID}}}))
		require.NoError(t, err)
		_, err = w.reconcile(nautobotSpec(originalSpec(nil), map[string]any{"prefix_refs": []any{map[string]any{"id": publicID}, map[string]any{"id": publicID2}}}))
		require.NoError(t, err)
		assert.Equal(t, []string{"10.0.0.0/24", "10.0.8.0/24"}, prefixesOf(w.neutron.pool("pool-a")))
	})
	t.Run("shared cannot change on an existing pool", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-id", "scope-a", 4)
		w.neutron.addPool(map[string]any{"id": "pool-id", "name": "pool-a", "prefixes": []string{"10.0.0.0/8"}, "shared": true})
		_, err := w.reconcile(originalSpec(nil))
		assert.EqualError(t, err, "Subnet pool 'pool-a' (pool-id) has shared=True; Neutron does not allow updating shared on an existing "+
			"subnet pool. Drain and delete the pool to let the operator recreate it, or set spec.shared to match.")
		assert.Empty(t, writes(w))
	})
	t.Run("another project's pool is not taken over", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addPool(map[string]any{"id": "pool-id", "name": "pool-a", "project_id": "project-b", "prefixes": []string{"10.0.0.0/8"}})
		_, err := w.reconcile(originalSpec(map[string]any{"project_id": nil}))
		require.NoError(t, err, "without spec.project_id the pool of the name is the CR's")
		w.neutron.pools[0]["project_id"] = "project-b"
		_, err = w.reconcile(originalSpec(nil))
		require.NoError(t, err, "with it, the lookup asks for the CR's project only")
		assert.Len(t, w.neutron.pools, 2)
	})
	t.Run("a scope of the other family is refused", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		w.neutron.addScope("scope-6", "scope-a", 6)
		_, err := w.reconcile(originalSpec(map[string]any{"address_scope": map[string]any{"id": "scope-6"}}))
		assert.EqualError(t, err, "Address scope 'scope-6' is IPv6, but subnet pool 'pool-a' is IPv4")
		assert.Empty(t, writes(w))
	})
	t.Run("a field the CRD does not declare is refused", func(t *testing.T) {
		w := reconcileWorld(t, "10.0.0.0/8")
		_, err := w.reconcile(originalSpec(map[string]any{"prefixes": []any{"10.0.0.0/8"}}))
		assert.ErrorContains(t, err, `unknown field "prefixes"`)
	})
}
