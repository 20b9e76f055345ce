package main

import (
	"fmt"
	"slices"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// remarkCR moves the pool a CR names from one profile's ownership tag to the other's
// (openstack-sync migrate, docs/abi.md "remark"): one PUT of the pool's whole tag list, so it
// carries one profile's tag or the other's at every moment, and every other tag is kept. A pool
// already carrying only the target's tag is left alone; one carrying neither is reported.
func remarkCR(ctx *pdk.Context, req *pdk.RemarkRequest) (*pdk.RemarkResult, error) {
	var spec Spec
	move, err := compat.ReadRemark(req, &spec)
	if err != nil {
		return nil, err
	}
	n := newNeutron(ctx)
	p, err := n.findPool(&spec)
	if err != nil {
		return nil, err
	}
	from, to := markingOf[move.From], markingOf[move.To]
	res := &pdk.RemarkResult{}
	switch {
	case p == nil:
		res.Notes = append(res.Notes, fmt.Sprintf("no subnet pool named %s: nothing to re-mark (the CR's next reconcile creates it)", spec.Name))
	case from.owns(p):
		tags := slices.DeleteFunc(slices.Clone(p.Tags), func(t string) bool { return t == from.tag })
		tags = append(tags, to.tag)
		slices.Sort(tags)
		tags = slices.Compact(tags)
		res.Changes = append(res.Changes, fmt.Sprintf("subnet pool %s (%s): tag %s -> %s", p.Name, p.ID, from.tag, to.tag))
		if !req.DryRun {
			if err := n.setTags(p.ID, tags); err != nil {
				return nil, fmt.Errorf("re-tag subnet pool %q (%s): %w", p.Name, p.ID, err)
			}
		}
	case to.owns(p):
	default:
		res.Notes = append(res.Notes, fmt.Sprintf("subnet pool %s (%s) carries no ownership tag of either profile: left alone", p.Name, p.ID))
	}
	return res, nil
}
