package wasm

import (
	"testing"

	"github.com/tetratelabs/wazero/api"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// A plugin may declare a cleanup policy of its own under a profile (docs/abi.md, "Profiles"): a
// plugin whose resources carry an ownership marker only under the original operator's
// identifiers prunes only there. The host checks each profile's section by the rules of the
// metadata's own.
func TestProfileCleanupMetadata(t *testing.T) {
	const base = `{"abi_version":1,"name":"mock","env_prefix":"MOCK","noun":"mock","binding_name":"mock"`
	for _, c := range []struct {
		name, raw string
		// want is whenPrune, whenNoPrune per profile.
		want map[profile.Profile][2]plugin.CleanupPolicy
		err  string
	}{
		{name: "none declared", raw: base + `,"has_prune":true}`, want: map[profile.Profile][2]plugin.CleanupPolicy{
			profile.OpenStackSync: {plugin.CleanupFinalizedPrune, plugin.CleanupNone},
			profile.Understack:    {plugin.CleanupFinalizedPrune, plugin.CleanupNone}}},
		{name: "pruned only under understack", raw: base + `,"has_prune":true,"cleanup":{"when_prune":"NONE","when_no_prune":"NONE"},` +
			`"profiles":{"understack":{"cleanup":{"when_prune":"FINALIZED_PRUNE"}}}}`, want: map[profile.Profile][2]plugin.CleanupPolicy{
			profile.OpenStackSync: {plugin.CleanupNone, plugin.CleanupNone},
			profile.Understack:    {plugin.CleanupFinalizedPrune, plugin.CleanupNone}}},
		{name: "a profile this host does not know is ignored", raw: base + `,"has_prune":true,"profiles":{"future":{"cleanup":{}}}}`,
			want: map[profile.Profile][2]plugin.CleanupPolicy{profile.Understack: {plugin.CleanupFinalizedPrune, plugin.CleanupNone}}},
		{name: "profile prune without a prune step", raw: base + `,"profiles":{"understack":{"cleanup":{"when_prune":"FINALIZED_PRUNE"}}}}`,
			err: "metadata profiles.understack.cleanup.when_prune is FINALIZED_PRUNE but the plugin has neither a prune nor a delete step"},
		{name: "unknown profile policy", raw: base + `,"has_prune":true,"profiles":{"understack":{"cleanup":{"when_no_prune":"SOMETIMES"}}}}`,
			err: `metadata profiles.understack.cleanup.when_no_prune: unknown cleanup policy "SOMETIMES"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := parseMetadata("mock.wasm", []byte(c.raw))
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			for p, want := range c.want {
				wp, wn := m.cleanupFor(p)
				assert.Equal(t, want, [2]plugin.CleanupPolicy{wp, wn}, p.String())
			}
		})
	}
}

func TestProfileVariableIsCheckedAtLoad(t *testing.T) {
	const raw = `{"abi_version":1,"name":"mock","env_prefix":"MOCK","noun":"mock","binding_name":"mock","has_prune":true,` +
		`"cleanup":{"when_prune":"NONE"},"profiles":{"understack":{"cleanup":{"when_prune":"FINALIZED_PRUNE"}}}}`
	use := func(env ...string) (*Plugin, error) {
		o, _ := testOptions(t, env...)
		p := &Plugin{path: "mock.wasm", opts: o}
		return p, p.useMetadata([]byte(raw), map[string]api.FunctionDefinition{abi.EntryPrune: nil})
	}
	_, err := use("MOCK_PROFILE=rackspace")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MOCK_PROFILE is invalid: must be openstack-sync or understack; got "rackspace"`)
	p, err := use("MOCK_PROFILE=understack")
	require.NoError(t, err)
	assert.Equal(t, plugin.CleanupFinalizedPrune, p.CleanupPolicy(true), "the profile's own policy")
	p, err = use()
	require.NoError(t, err)
	assert.Equal(t, plugin.CleanupNone, p.CleanupPolicy(true))
}
