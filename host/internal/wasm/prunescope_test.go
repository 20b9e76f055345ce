package wasm

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
