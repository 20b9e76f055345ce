package main

import (
	"fmt"
	"net/url"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// remarkCR renames the range a CR names from one profile's name to the other's (openstack-sync
// migrate), e.g. understack-sr:edge to edge: one PUT, so the range carries one profile's name or
// the other's at every moment. A range already under the target's name is left alone; ranges
// under both names are a conflict an operator must resolve.
func remarkCR(ctx *pdk.Context, req *pdk.RemarkRequest) (*pdk.RemarkResult, error) {
	var spec Spec
	move, err := compat.ReadRemark(req, &spec)
	if err != nil {
		return nil, err
	}
	svc := network(ctx)
	idx, err := loadIndex(svc)
	if err != nil {
		return nil, err
	}
	from, to := spec, spec
	from.Name = namingOf[move.From].neutronName(spec.Name)
	to.Name = namingOf[move.To].neutronName(spec.Name)
	res := &pdk.RemarkResult{}
	have, want := idx.find(from), idx.find(to)
	switch {
	case from.Name == to.Name:
	case len(have) > 1 || len(want) > 1:
		return nil, fmt.Errorf("several segment ranges are named %q or %q; rename or delete the extras, then run migrate again", from.Name, to.Name)
	case len(have) == 1 && len(want) == 1:
		return nil, fmt.Errorf("segment ranges %q (%s) and %q (%s) both exist; delete the one no CR should own, then run migrate again",
			from.Name, have[0].ID, to.Name, want[0].ID)
	case len(have) == 1:
		r := have[0]
		res.Changes = append(res.Changes, fmt.Sprintf("segment range %s (%s): name %s -> %s", from.Name, r.ID, from.Name, to.Name))
		if !req.DryRun {
			body := map[string]any{"network_segment_range": map[string]any{"name": to.Name}}
			if err := svc.Call("PUT", rangesPath+"/"+url.PathEscape(r.ID), nil, body, nil); err != nil {
				return nil, fmt.Errorf("rename segment range %q (%s): %w", from.Name, r.ID, err)
			}
		}
	case len(want) == 0:
		res.Notes = append(res.Notes, fmt.Sprintf("no segment range named %s: nothing to re-mark (the CR's next reconcile creates it)", from.Name))
	}
	return res, nil
}
