//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// hookLines are the operator log's records of one hook with the message msg, in order.
func (h *harness) hookLines(hook, msg string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(h.operatorLog(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["hook"] != hook || rec["msg"] != msg {
			continue
		}
		out = append(out, rec)
	}
	return out
}

// patchRunbookExtra sets one extra key of a runbook in Ironic, as someone would by hand.
func (c *cloud) patchRunbookExtra(ctx context.Context, name, key, value string) error {
	rb, err := c.runbook(ctx, name)
	if err != nil || rb == nil {
		return fmt.Errorf("runbook %s: %v (found %t)", name, err, rb != nil)
	}
	ops := []map[string]any{{"op": "add", "path": "/extra/" + key, "value": value}}
	_, err = c.baremetal.Patch(ctx, c.baremetal.ServiceURL("runbooks", fmt.Sprint(rb["uuid"])), ops, nil,
		&gophercloud.RequestOpts{OkCodes: []int{200}, MoreHeaders: map[string]string{"Content-Type": "application/json"}})
	return err
}

// attr is a hook line's attribute: shell-operator prefixes the hook's own with "hook_".
func attr(rec map[string]any, key string) any {
	if v, ok := rec["hook_"+key]; ok {
		return v
	}
	return rec[key]
}

// replayScenario: a converged run of the runbooks is replayed (docs/abi.md, "The run replay")
// until a runbook is edited in Ironic behind the operator's back; the next run finds the edit and
// reverts it. The runs are the start-up Synchronization of a restarted shell-operator, which
// reconciles every CR: the only runs whose CRs are the same each time without a schedule.
func replayScenario(t *testing.T, ctx context.Context, h *harness, cr *unstructured.Unstructured, crs int) {
	const hook = "ironic-runbooks"
	recorded, replayed := "recorded the converged run for a replay", "replayed a converged run: every answer unchanged"
	missed := "not replaying the last converged run; running the plugin"
	notRecorded := "not recording the run for a replay"
	restart := func(what string, msgs ...string) map[string]any {
		h.stopOperator()
		require.NoError(t, h.startOperator(ctx))
		var rec map[string]any
		h.waitFor(t, syncWait, what, func() (bool, string) {
			for _, msg := range msgs {
				if lines := h.hookLines(hook, msg); len(lines) > 0 {
					rec = lines[0]
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d recorded, %d replayed, %d missed", len(h.hookLines(hook, recorded)),
				len(h.hookLines(hook, replayed)), len(h.hookLines(hook, missed)))
		})
		return rec
	}
	// The first Synchronization after the CRs were edited (or a run wrote) is a full run. While the
	// convergence memo still misses (the edits' runs made no records) it is not recorded, as a
	// replay of it would re-send reads the next full run does not make; the run after it is recorded.
	record := func() {
		if first := restart("the start-up run of the runbooks recorded for a replay, or not for a memo miss",
			recorded, notRecorded); first["msg"] == notRecorded {
			assert.Contains(t, fmt.Sprint(attr(first, "reason")), "convergence memo", "%v", first)
			restart("the start-up run of the runbooks recorded for a replay", recorded)
		}
	}
	record()
	// The next is the same run: replayed, without the module, its reads sent again.
	line := restart("the start-up run of the runbooks replayed", replayed)
	assert.Equal(t, "ironic-runbooks", attr(line, "plugin"), "%v", line)
	assert.EqualValues(t, crs, attr(line, "crs"), "%v", line)
	assert.Greater(t, attr(line, "requests"), float64(0), "%v", line)
	assert.Contains(t, fmt.Sprint(attr(line, "groups")), h.examples.secret.GetName(), "%v", line)
	assert.Empty(t, h.hookLines(hook, missed))
	assert.Equal(t, "Synced", readStatus(h.get(t, ctx, runbooks, cr.GetName())).syncStatus)

	// Someone edits the runbook in Ironic: the next run's answer differs, the replay misses, and
	// the plugin puts the extra back.
	require.NoError(t, h.cloud.patchRunbookExtra(ctx, osName(cr), "team", "tampered"))
	miss := restart("the start-up run of the runbooks not replayed after the edit", missed)
	assert.Contains(t, fmt.Sprint(attr(miss, "reason")), "changed", "%v", miss)
	assert.Empty(t, h.hookLines(hook, replayed), "the run after the edit is not replayed")
	h.waitFor(t, syncWait, "the runbook's edit in Ironic reverted", func() (bool, string) {
		rb, err := h.cloud.runbook(ctx, osName(cr))
		if err != nil || rb == nil {
			return false, fmt.Sprintf("runbook: %v", err)
		}
		extra, _ := rb["extra"].(map[string]any)
		return extra["team"] == "metal", fmt.Sprintf("extra %v", extra)
	})

	// A runbook of this group that no CR claims appears in Ironic. These few CRs read their own
	// runbooks by GET, so only the prune's list shows it, and that list asks Ironic for uuid, name
	// and extra alone: the replay misses on it, and the prune finds the group's marker in it and
	// deletes the runbook.
	record()
	stray := osName(cr) + "_STRAY"
	t.Cleanup(func() { assert.NoError(t, h.cloud.deleteRunbook(context.Background(), stray)) })
	// Public and owned as the CR's own runbook, so the group's credentials may delete it.
	own, err := h.cloud.runbook(ctx, osName(cr))
	require.NoError(t, err)
	require.NotNil(t, own)
	_, err = h.cloud.baremetal.Post(ctx, h.cloud.baremetal.ServiceURL("runbooks"), map[string]any{"name": stray,
		"steps":  []any{map[string]any{"interface": "deploy", "step": "erase_devices_metadata", "order": 5, "args": map[string]any{}}},
		"public": own["public"], "owner": own["owner"], "extra": map[string]any{markerKey: runbookMarkerValue,
			"openstack-sync.io/marker-version": "v1", "openstack-sync.io/source": "IronicRunbook", groupKey: h.groupOf(cr)}},
		nil, &gophercloud.RequestOpts{OkCodes: []int{201}})
	require.NoError(t, err)
	miss = restart("the start-up run of the runbooks not replayed after a runbook appeared", missed)
	assert.Contains(t, fmt.Sprint(attr(miss, "reason")), "the answer to GET baremetal v1/runbooks changed", "%v", miss)
	h.waitFor(t, syncWait, "the stray runbook pruned", func() (bool, string) {
		rb, err := h.cloud.runbook(ctx, stray)
		return err == nil && rb == nil, fmt.Sprintf("runbook %v, %v", rb, err)
	})
}
