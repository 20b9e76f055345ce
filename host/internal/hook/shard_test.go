package hook_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

// TestShardSparesOtherShardsClaims: a shard's prune spares the specs of every live CR in its
// claims snapshot, the CRs other shards reconcile; without that, the prune of shard A would
// delete what shard B's CRs claim, since ownership markers name the plugin and not the shard. An
// unreadable claim skips the prune and fails the run, naming the CR.
func TestShardSparesOtherShardsClaims(t *testing.T) {
	deleting := widget("gone")
	deleting["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	run := func(t *testing.T, claims ...any) (*harness, int) {
		h := newHarness(t)
		h.enable()
		h.env["WIDGET_PRUNE"] = "true"
		h.env["OPENSTACK_SYNC_SHARD_LABEL_SELECTOR"] = `{"matchLabels": {"shard": "a"}}`
		h.contexts([]any{map[string]any{"binding": "widgets", "type": "Event", "watchEvent": "Modified", "object": widget("a"),
			"snapshots": map[string]any{"widgets": []any{map[string]any{"object": widget("a")}}, "widgets-claims": claims}}})
		h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a"), widget("a"))
		return h, h.main("--plugin", "widgets.wasm", "--binding", "widgets")
	}

	t.Run("other shards' live CRs are spared", func(t *testing.T) {
		h, code := run(t, map[string]any{"object": widget("a")}, map[string]any{"object": widget("b")}, map[string]any{"object": deleting})
		assert.Equal(t, 0, code, h.stderr.String())
		require.Len(t, h.plugin.Pruned(), 1)
		var names []any
		for _, raw := range h.plugin.Pruned()[0].DesiredSpecs {
			var s map[string]any
			require.NoError(t, json.Unmarshal(raw, &s))
			names = append(names, s["name"])
		}
		assert.ElementsMatch(t, []any{"a", "a", "b"}, names, "its own CR and the other shard's live one; never one being deleted")
	})

	t.Run("a per-group prune spares the other shards' CRs of its group", func(t *testing.T) {
		other := widget("c")
		other["spec"].(map[string]any)["cloudCredentialsRef"] = map[string]any{"secretName": "s2", "cloudName": "c"}
		h := newHarness(t)
		h.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets", PrunePerGroup: true}
		h.enable()
		h.env["WIDGET_PRUNE"] = "true"
		h.env["OPENSTACK_SYNC_SHARD_LABEL_SELECTOR"] = `{"matchLabels": {"shard": "a"}}`
		h.contexts([]any{map[string]any{"binding": "widgets", "type": "Event", "watchEvent": "Modified", "object": widget("a"),
			"snapshots": map[string]any{"widgets": []any{map[string]any{"object": widget("a")}},
				"widgets-claims": []any{map[string]any{"object": widget("b")}, map[string]any{"object": other}}}}})
		h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a"), widget("a"))
		require.Equal(t, 0, h.main("--plugin", "widgets.wasm", "--binding", "widgets"), h.stderr.String())
		require.Len(t, h.plugin.Pruned(), 1)
		var names []any
		for _, raw := range h.plugin.Pruned()[0].DesiredSpecs {
			var s map[string]any
			require.NoError(t, json.Unmarshal(raw, &s))
			names = append(names, s["name"])
		}
		assert.ElementsMatch(t, []any{"a", "b"}, names, "its group's: its own CR and the other shard's in the same group")
	})

	t.Run("an unreadable claim skips the prune", func(t *testing.T) {
		broken := widget("b")
		broken["spec"] = "not an object"
		h, code := run(t, map[string]any{"object": widget("a")}, map[string]any{"object": broken})
		assert.Equal(t, 1, code)
		assert.Empty(t, h.plugin.Pruned())
		assert.Contains(t, h.stderr.String(), "Ignoring unreadable CR of another shard ns/b")
		assert.Contains(t, h.stderr.String(), runner.MsgSkippingPrune)
	})

	t.Run("no claims snapshot skips the prune", func(t *testing.T) {
		h := newHarness(t)
		h.enable()
		h.env["WIDGET_PRUNE"] = "true"
		h.env["OPENSTACK_SYNC_SHARD_LABEL_SELECTOR"] = `{"matchLabels": {"shard": "a"}}`
		h.contexts(eventOf("widgets", "a", "a"))
		h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a"), widget("a"))
		assert.Equal(t, 1, h.main("--plugin", "widgets.wasm", "--binding", "widgets"))
		assert.Empty(t, h.plugin.Pruned())
		assert.Contains(t, h.stderr.String(), "Shard without the widgets-claims snapshot: skipping prune this run")
	})
}
