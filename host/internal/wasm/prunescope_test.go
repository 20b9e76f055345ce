package wasm

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// prune_scope "group" is the plugin's declaration that its ownership marker records the
// credential group (docs/contract.md §7.1); the host refuses anything it would misread.
func TestPruneScopeMetadata(t *testing.T) {
	const base = `{"abi_version":1,"name":"mock","env_prefix":"MOCK","noun":"mock","binding_name":"mock"`
	for _, c := range []struct {
		name, raw string
		perGroup  bool
		err       string
	}{
		{name: "absent", raw: base + `,"has_prune":true}`},
		{name: "all", raw: base + `,"has_prune":true,"prune_scope":"all"}`},
		{name: "group", raw: base + `,"has_prune":true,"prune_scope":"group"}`, perGroup: true},
		{name: "unknown", raw: base + `,"has_prune":true,"prune_scope":"tenant"}`, err: `prune_scope is "tenant"; want "all", "group" or absent`},
		{name: "group without prune", raw: base + `,"prune_scope":"group"}`, err: `prune_scope is "group" but the plugin has no prune step`},
		{name: "group under a profile", raw: base + `,"has_prune":true,"profiles":{"understack":{"prune_scope":"group"}}}`},
		{name: "unknown under a profile", raw: base + `,"has_prune":true,"profiles":{"understack":{"prune_scope":"tenant"}}}`,
			err: `profiles.understack.prune_scope is "tenant"; want "all", "group" or absent`},
		{name: "group under a profile without prune", raw: base + `,"profiles":{"understack":{"prune_scope":"group"}}}`,
			err: `profiles.understack.prune_scope is "group" but the plugin has no prune step`},
		{name: "skip status", raw: base + `,"skip_status":true}`},
		{name: "skip status with lifecycle", raw: base + `,"lifecycle":true,"skip_status":true}`,
			err: `skip_status is true but so is lifecycle: a lifecycle plugin finds its resource by status.id`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseMetadata("mock.wasm", []byte(c.raw))
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.perGroup, m.metadata().PrunePerGroup)
		})
	}
}

// A plugin may prune per group under one profile and not another (its own marker records the
// group; the original operator's, written as the original writes it, records none): the host
// takes the scope of the hook's profile, and sends the CR's credential group with every
// reconcile input of a plugin pruning per group, and only then.
func TestThePruneScopeFollowsTheProfile(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		profile  string
		perGroup bool
		notes    []string
	}{
		{"", false, []string{"//"}},
		{"openstack-sync", false, []string{"//"}},
		{"understack", true, []string{"team-a/s1/c1"}},
	} {
		t.Run("profile "+c.profile, func(t *testing.T) {
			o, _ := testOptions(t, "MOCK_PROFILE="+c.profile)
			p := loadTest(t, guest(t, "pdkmock"), o)
			assert.Equal(t, c.perGroup, p.Metadata().PrunePerGroup)
			res, err := p.Reconcile(ctx, &fakeSession{}, nil, plugin.ReconcileRequest{
				Object:      plugin.Object{Kind: "Mock", Namespace: "team-a", Name: "a", UID: "u"},
				Spec:        json.RawMessage(`{"action":"credentials"}`),
				Credentials: plugin.Credentials{Namespace: "team-a", SecretName: "s1", CloudName: "c1"}})
			require.NoError(t, err)
			assert.Equal(t, c.notes, res.Notes)
		})
	}
}
