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

// replayScenario: a converged runbook's runs are replayed (docs/abi.md, "The run replay") until
// the runbook is edited in Ironic behind the operator's back; the next run finds the edit and
// reverts it. Runs are triggered by touching a label of the CR, which no decision of a run reads.
func replayScenario(t *testing.T, ctx context.Context, h *harness, cr *unstructured.Unstructured) {
	const hook = "ironic-runbooks"
	name := cr.GetName()
	touch := func(n int) {
		h.edit(t, ctx, runbooks, name, func(u *unstructured.Unstructured) {
			labels := u.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels["e2e.openstack-sync.io/touched"] = fmt.Sprint(n)
			u.SetLabels(labels)
		})
	}
	count := func(msg string) int { return len(h.hookLines(hook, msg)) }
	recorded, replayed := "recorded the converged run for a replay", "replayed a converged run: every answer unchanged"
	missed := "not replaying the last converged run; running the plugin"

	// The first touched run is a full one (its CRs differ from the last run's) and is recorded.
	r0 := count(recorded)
	touch(1)
	h.waitFor(t, syncWait, "a converged run of the runbooks recorded for a replay", func() (bool, string) {
		return count(recorded) > r0, fmt.Sprintf("%d recorded", count(recorded))
	})
	// The next touched run is the same run: replayed, the module not loaded.
	p0 := count(replayed)
	touch(2)
	h.waitFor(t, syncWait, "the runbooks' run replayed", func() (bool, string) {
		return count(replayed) > p0, fmt.Sprintf("%d replayed, %d missed", count(replayed), count(missed))
	})
	line := h.hookLines(hook, replayed)[p0]
	assert.Equal(t, "ironic-runbooks", line["plugin"])
	assert.EqualValues(t, 1, line["crs"], "%v", line)
	assert.Contains(t, fmt.Sprint(line["groups"]), h.examples.secret.GetName(), "%v", line)
	synced := readStatus(h.get(t, ctx, runbooks, name))
	assert.Equal(t, "Synced", synced.syncStatus)

	// Someone edits the runbook in Ironic: the next run's answer differs, the replay misses, and
	// the plugin puts the extra back.
	require.NoError(t, h.cloud.patchRunbookExtra(ctx, osName(cr), "team", "tampered"))
	m0 := count(missed)
	touch(3)
	h.waitFor(t, syncWait, "the runbook's edit in Ironic found and reverted", func() (bool, string) {
		rb, err := h.cloud.runbook(ctx, osName(cr))
		if err != nil || rb == nil {
			return false, fmt.Sprintf("runbook: %v", err)
		}
		extra, _ := rb["extra"].(map[string]any)
		return count(missed) > m0 && extra["team"] == "metal", fmt.Sprintf("%d missed, extra %v", count(missed), extra)
	})
	miss := h.hookLines(hook, missed)[m0]
	assert.Contains(t, fmt.Sprint(miss["reason"]), "changed", "%v", miss)
	assert.Equal(t, p0+1, count(replayed), "the run after the edit was not replayed")
}
