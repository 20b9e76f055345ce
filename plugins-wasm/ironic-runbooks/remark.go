package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// remarkCR moves the marker of the runbook a CR names from one profile's keys to the other's
// (openstack-sync migrate): one PATCH of extra, so the runbook carries one profile's marker or
// the other's at every moment, and every other key of extra is kept. A runbook already carrying
// only the target's marker is left alone; one carrying neither is reported and left alone.
func remarkCR(ctx *pdk.Context, req *pdk.RemarkRequest) (*pdk.RemarkResult, error) {
	move, err := compat.MoveOf(req)
	if err != nil {
		return nil, err
	}
	var key struct {
		RunbookName string `json:"runbookName"`
	}
	if err := experimental.DecodeJSON(req.Spec, &key); err != nil || key.RunbookName == "" {
		return nil, pdk.Permanent(fmt.Errorf("%s: spec.runbookName must be set", req.Object))
	}
	a, err := connect(ctx)
	if err != nil {
		return nil, err
	}
	rb, err := a.lookup(key.RunbookName)
	if err != nil {
		return nil, err
	}
	from, to := markersOf[move.From], markersOf[move.To]
	res := &pdk.RemarkResult{}
	switch {
	case rb == nil:
		res.Notes = append(res.Notes, fmt.Sprintf("no runbook named %s: nothing to re-mark (the CR's next reconcile creates it)", key.RunbookName))
	case from.marked(rb.Extra):
		if rb.UUID == "" {
			return nil, fmt.Errorf("runbook %q came back without a uuid, so it cannot be re-marked", rb.Name)
		}
		res.Changes = append(res.Changes, fmt.Sprintf("ironic runbook %s (%s): extra %s -> %s", rb.Name, rb.UUID,
			keyList(from), keyList(to)))
		if !req.DryRun {
			ops := []patchOp{{Op: "add", Path: "/extra", Value: swapped(rb.Extra, from, to)}}
			if err := a.svc.Patch(runbookPath(rb.UUID), ops, nil); err != nil {
				return nil, fmt.Errorf("re-mark runbook %q (%s): %w", rb.Name, rb.UUID, err)
			}
		}
	case to.marked(rb.Extra):
		// Already moved (a run that stopped after the PATCH): nothing to do.
	default:
		res.Notes = append(res.Notes, fmt.Sprintf("ironic runbook %s (%s) carries no marker of either profile: left alone "+
			"(the CR's next reconcile adopts it)", rb.Name, rb.UUID))
	}
	return res, nil
}

// keyList names a marker's keys for a change line.
func keyList(m markerSet) string {
	keys := slices.Sorted(maps.Keys(m.keys()))
	return strings.Join(keys, ",")
}
