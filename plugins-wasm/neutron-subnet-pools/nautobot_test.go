package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// resolve runs the Nautobot half of a reconcile on spec, as the original's resolve_spec.
func (w *world) resolve(s map[string]any) (*resolved, *Spec, error) {
	w.t.Helper()
	raw, err := json.Marshal(s)
	require.NoError(w.t, err)
	var sp Spec
	require.NoError(w.t, experimental.DecodeJSON(raw, &sp))
	res, err := resolveSpec(w.context(), &sp, w.config["SITE"])
	return res, &sp, err
}

func singleRef(s map[string]any) map[string]any {
	return nautobotSpec(s, map[string]any{"prefix_refs": []any{map[string]any{"id": publicID}}})
}

// Every case of the original's tests/test_subnet_pools_nautobot.py, by name.
func TestResolveFromNautobot(t *testing.T) {
	t.Run("test_resolve_spec_attaches_cidrs_and_ip_version", func(t *testing.T) {
		res, _, err := newWorld(t).resolve(spec(nil))
		require.NoError(t, err)
		assert.Equal(t, []string{"204.232.163.128/25", "10.4.88.0/24"}, res.Prefixes)
		assert.Equal(t, 4, res.IPVersion)
	})
	t.Run("test_resolve_spec_leaves_policy_fields_untouched", func(t *testing.T) {
		_, sp, err := newWorld(t).resolve(spec(nil))
		require.NoError(t, err)
		assert.Equal(t, "PUBLIC-IP-POOL", sp.Name)
		assert.Equal(t, "publicnet-ip4", sp.AddressScope.Name)
		assert.Equal(t, 27, *sp.MinimumPrefixLength)
		assert.Equal(t, 28, *sp.DefaultPrefixLength)
		assert.Equal(t, 30, *sp.MaximumPrefixLength)
	})
	t.Run("test_resolve_spec_requires_name", func(t *testing.T) {
		_, _, err := newWorld(t).resolve(singleRef(spec(map[string]any{"name": nil})))
		assert.ErrorContains(t, err, "name must be set")
	})
	t.Run("test_resolve_spec_rejects_mixed_ip_versions", func(t *testing.T) {
		w := newWorld(t)
		w.nautobot.prefixes[1].Prefix = "2001:db8::/64"
		_, _, err := w.resolve(spec(nil))
		assert.ErrorContains(t, err, "Nautobot subnet pool 'PUBLIC-IP-POOL' contains mixed IP versions: 204.232.163.128/25, 2001:db8::/64")
	})
	t.Run("test_resolve_spec_filters_lookup_by_require_location", func(t *testing.T) {
		w := newWorld(t)
		_, _, err := w.resolve(spec(nil))
		require.NoError(t, err)
		calls := w.host().SourceCalls()
		require.Len(t, calls, 2)
		for _, c := range calls {
			assert.Equal(t, "iad3-dev", c.Query.Get("location"))
			assert.NotEmpty(t, c.Query.Get("id"))
			assert.Equal(t, "1", c.Query.Get("depth"), "status, namespace and tags by name in the same answer")
			assert.Equal(t, []string{"application/json; version=2.0"}, c.Header["Accept"])
		}
	})
	t.Run("test_resolve_spec_rejects_prefix_not_under_required_location", func(t *testing.T) {
		w := newWorld(t)
		w.nautobot.prefixes[0].Locations = []string{"other-site"}
		_, _, err := w.resolve(singleRef(spec(nil)))
		assert.EqualError(t, err, "Nautobot prefix "+publicID+" ("+nbURL+"/ipam/prefixes/"+publicID+"/) was not found under location "+
			"'iad3-dev': it does not exist or is not associated with that location (spec.nautobot.require.location)")
		assert.Equal(t, prefixMissingReason, pdk.Reason(err))
	})
	t.Run("test_resolve_spec_reports_invalid_location_choice", func(t *testing.T) {
		s := nautobotSpec(singleRef(spec(nil)), map[string]any{"require": map[string]any{"location": "iad"}})
		_, _, err := newWorld(t).resolve(s)
		assert.EqualError(t, err, "spec.nautobot.require.location 'iad' is not a valid Nautobot location; use the exact leaf Site name (for example 'iad3-dev')")
	})
	t.Run("test_resolve_spec_omits_location_filter_when_not_required", func(t *testing.T) {
		w := newWorld(t)
		_, _, err := w.resolve(nautobotSpec(singleRef(spec(nil)), map[string]any{"require": map[string]any{}}))
		require.NoError(t, err)
		calls := w.host().SourceCalls()
		require.Len(t, calls, 1)
		assert.NotContains(t, calls[0].Query, "location")
	})
	t.Run("test_resolve_spec_defaults_location_from_site_env", func(t *testing.T) {
		w := newWorld(t)
		w.config["SITE"] = "iad3-dev" // the original's UNDERSTACK_SITE: the hook's <P>_SITE here
		_, _, err := w.resolve(nautobotSpec(singleRef(spec(nil)), map[string]any{"require": map[string]any{}}))
		require.NoError(t, err)
		assert.Equal(t, "iad3-dev", w.host().SourceCalls()[0].Query.Get("location"))
	})
	t.Run("test_resolve_spec_require_location_overrides_site_env", func(t *testing.T) {
		w := newWorld(t)
		w.config["SITE"] = "other-site"
		_, _, err := w.resolve(singleRef(spec(nil)))
		require.NoError(t, err)
		assert.Equal(t, "iad3-dev", w.host().SourceCalls()[0].Query.Get("location"))
	})
	t.Run("test_resolve_spec_reuses_cached_client", func(t *testing.T) {
		// What the original keeps per group is the client; here it is each lookup's answer, so
		// a second CR naming the same prefixes costs Nautobot nothing.
		w := newWorld(t)
		_, _, err := w.resolve(spec(nil))
		require.NoError(t, err)
		first := len(w.host().SourceCalls())
		_, _, err = w.resolve(spec(nil))
		require.NoError(t, err)
		assert.Equal(t, 2, first)
		assert.Empty(t, w.host().SourceCalls(), "the second resolve is answered from the group's cache")
	})
	t.Run("test_resolve_spec_rejects_missing_prefix", func(t *testing.T) {
		w := newWorld(t)
		w.nautobot.prefixes = nil
		_, _, err := w.resolve(nautobotSpec(spec(nil), map[string]any{"require": map[string]any{}}))
		assert.EqualError(t, err, "Nautobot prefix "+publicID+" ("+nbURL+"/ipam/prefixes/"+publicID+"/) was not found")
		assert.Equal(t, prefixMissingReason, pdk.Reason(err))
	})
	t.Run("test_resolve_spec_rejects_prefix_that_fails_requirements", func(t *testing.T) {
		w := newWorld(t)
		w.nautobot.prefixes[1].Status = "Reserved"
		_, _, err := w.resolve(spec(nil))
		assert.EqualError(t, err, "Nautobot prefix "+publicID2+" does not satisfy spec.nautobot.require: status is 'Reserved', expected 'Active'")
		assert.Equal(t, "", pdk.Reason(err), "a failed guardrail is not a missing prefix")
	})
	t.Run("test_resolve_spec_rejects_prefix_missing_required_tag", func(t *testing.T) {
		w := newWorld(t)
		w.nautobot.prefixes[0].Tags = nil
		_, _, err := w.resolve(singleRef(spec(nil)))
		assert.ErrorContains(t, err, "missing tags ['openstack-subnet-pool']")
	})
	t.Run("test_field_text_reads_choice_value_not_label", func(t *testing.T) {
		assert.Equal(t, "pool", fieldText(json.RawMessage(`{"value": "pool", "label": "Pool"}`)))
	})
	t.Run("test_field_text_falls_back_to_str_for_display_only_records", func(t *testing.T) {
		assert.Equal(t, "openstack-subnet-pool", fieldText(json.RawMessage(`{"id": "x", "display": "openstack-subnet-pool"}`)))
	})
	t.Run("test_resolve_spec_accepts_choice_type_and_display_tags", func(t *testing.T) {
		w := newWorld(t)
		w.nautobot.prefixes[0].Raw = map[string]any{"id": publicID, "prefix": "10.0.0.0/24",
			"status": map[string]any{"name": "Active"}, "namespace": map[string]any{"name": "Rackspace"},
			"type": map[string]any{"value": "pool", "label": "Pool"}, "tags": []any{map[string]any{"display": "openstack-subnet-pool"}}}
		w.nautobot.prefixes[0].Locations = []string{"iad3-dev"}
		res, _, err := w.resolve(singleRef(spec(nil)))
		require.NoError(t, err)
		assert.Equal(t, []string{"10.0.0.0/24"}, res.Prefixes)
	})
	t.Run("test_prefix_refs_require_id", func(t *testing.T) {
		_, _, err := newWorld(t).resolve(nautobotSpec(spec(nil), map[string]any{"prefix_refs": []any{map[string]any{}}}))
		assert.ErrorContains(t, err, "prefix_refs[0].id")
	})
	t.Run("test_prefix_refs_must_be_non_empty", func(t *testing.T) {
		_, _, err := newWorld(t).resolve(nautobotSpec(spec(nil), map[string]any{"prefix_refs": []any{}}))
		assert.ErrorContains(t, err, "prefix_refs must be a non-empty list")
		var ie *invalidspec.Error
		assert.ErrorAs(t, err, &ie)
	})
}

// Nautobot answers a prefix in several shapes (depth 0 references, depth 1 objects, a bare
// string); a next page link is followed only within the list.
func TestNautobotShapesAndPages(t *testing.T) {
	w := newWorld(t)
	pages := 0
	w.nautobot.answer = func(c pdktest.SourceCall) (int, any, bool) {
		pages++
		if c.Query.Get("offset") == "" {
			return 200, map[string]any{"count": 1, "results": []any{},
				"next": nbURL + "/api/ipam/prefixes/?depth=1&id=" + publicID + "&limit=1&offset=1"}, true
		}
		return 200, map[string]any{"count": 1, "next": nil, "results": []any{map[string]any{"id": publicID, "prefix": "10.9.0.0/16",
			"status": "Active", "type": "pool", "namespace": map[string]any{"name": "Rackspace"}, "tags": []any{"openstack-subnet-pool"}}}}, true
	}
	res, _, err := w.resolve(nautobotSpec(singleRef(spec(nil)), map[string]any{"require": map[string]any{"status": "Active", "type": "pool", "tags": []any{"openstack-subnet-pool"}}}))
	require.NoError(t, err)
	assert.Equal(t, []string{"10.9.0.0/16"}, res.Prefixes)
	assert.Equal(t, 2, pages)

	w = newWorld(t)
	w.nautobot.answer = func(pdktest.SourceCall) (int, any, bool) {
		return 200, map[string]any{"count": 1, "results": []any{}, "next": "https://elsewhere.example/api/ipam/prefixes/?offset=1"}, true
	}
	_, _, err = w.resolve(singleRef(spec(nil)))
	assert.ErrorContains(t, err, "leaves spec.nautobot.url")
}
