package main

import (
	"fmt"
	"maps"
	"net/url"
	"slices"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/canon"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// remarkCR moves the markers of what a CR claims, its flavor and the service profiles bound to it,
// from one profile's to the other's (openstack-sync migrate). Each write swaps one resource's
// marker whole, so it carries one profile's marker or the other's at every moment. Neutron refuses
// to update a profile bound to a flavor, so a bound profile is unbound, re-marked and bound again:
// for those few requests the flavor lacks that profile, and a run that stops between them leaves
// the profile unbound but marked, which the next run finds (by the spec's entry) and binds again.
func remarkCR(ctx *pdk.Context, req *pdk.RemarkRequest) (*pdk.RemarkResult, error) {
	var spec Spec
	move, err := compat.ReadRemark(req, &spec)
	if err != nil {
		return nil, err
	}
	st := newState(network(ctx), ownershipOf(move.To))
	st.keepText = true
	if err := st.load(); err != nil {
		return nil, err
	}
	r := &remarker{st: st, from: markersOf[move.From], to: markersOf[move.To], dry: req.DryRun, res: &pdk.RemarkResult{}}
	flavors := st.named(spec.Name)
	switch len(flavors) {
	case 0:
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("no router flavor named %s: nothing to re-mark (the CR's next reconcile creates it)", spec.Name))
		return r.res, nil
	case 1:
	default:
		return nil, fmt.Errorf("%d Neutron flavors are named %q; rename or delete the extras, then run migrate again", len(flavors), spec.Name)
	}
	f := flavors[0]
	if !r.from.flavorMarked(f) && !r.to.flavorMarked(f) {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("router flavor %s (%s) carries no marker of either profile: left alone "+
			"(the CR's next reconcile adopts it)", f.Name, f.ID))
		return r.res, nil
	}
	// Bound profiles carrying the old marker, then the spec's entries whose profile a stopped run
	// left unbound, then the flavor itself.
	for _, id := range slices.Clone(f.ServiceProfiles) {
		if p, ok := st.profile(id); ok && r.from.markedProfile(p) {
			if err := r.profile(f, p, true); err != nil {
				return nil, err
			}
		}
	}
	for _, ps := range spec.ServiceProfiles {
		want, err := canon.JSON(orEmpty(ps.MetaInfo))
		if err != nil {
			return nil, fmt.Errorf("meta_info is not JSON: %w", err)
		}
		for _, i := range st.matching(ps.Driver, want) {
			p := st.profiles[i]
			if st.bound(p.ID) || !r.from.markedProfile(p) && !r.to.markedProfile(p) {
				continue
			}
			if err := r.profile(f, p, false); err != nil {
				return nil, err
			}
			break
		}
	}
	if r.from.flavorMarked(f) {
		desc := r.to.markedDescription(withoutMarkers(f.Description))
		r.res.Changes = append(r.res.Changes, fmt.Sprintf("router flavor %s (%s): description %s -> %s", f.Name, f.ID, r.from.flavor, r.to.flavor))
		if !r.dry {
			var resp struct {
				Flavor flavor `json:"flavor"`
			}
			body := map[string]any{"flavor": map[string]any{"description": desc}}
			if err := st.svc.Call("PUT", flavorsPath+"/"+url.PathEscape(f.ID), nil, body, &resp); err != nil {
				return nil, fmt.Errorf("re-mark router flavor %q (%s): %w", f.Name, f.ID, err)
			}
		}
	}
	return r.res, nil
}

type remarker struct {
	st       *state
	from, to markerSet
	dry      bool
	res      *pdk.RemarkResult
}

// profile re-marks p (when it carries the old marker) and binds it to f (when it is not).
func (r *remarker) profile(f flavor, p profile, bound bool) error {
	flavorProfile := flavorsPath + "/" + url.PathEscape(f.ID) + "/service_profiles"
	if r.from.markedProfile(p) {
		what := fmt.Sprintf("service profile %s of router flavor %s: metainfo %s,%s,%s -> %s,%s,%s", p.ID, f.Name,
			r.from.owner, r.from.version, r.from.source, r.to.owner, r.to.version, r.to.source)
		if bound {
			what += " (unbound and bound again: Neutron changes no bound profile)"
		}
		r.res.Changes = append(r.res.Changes, what)
		if r.dry {
			return nil
		}
		if bound {
			err := r.st.svc.Call("DELETE", flavorProfile+"/"+url.PathEscape(p.ID), nil, nil, nil)
			if err != nil && !pdk.IsNotFound(err) {
				return fmt.Errorf("unbind service profile %s from flavor %q to re-mark it: %w", p.ID, f.Name, err)
			}
		}
		meta := p.metaInfo()
		for _, k := range r.from.keys() {
			delete(meta, k)
		}
		metainfo, err := r.to.markedMetainfo(maps.Clone(meta))
		if err != nil {
			return err
		}
		body := map[string]any{"service_profile": map[string]any{"metainfo": metainfo}}
		if err := r.st.svc.Call("PUT", profilesPath+"/"+url.PathEscape(p.ID), nil, body, nil); err != nil {
			return fmt.Errorf("re-mark service profile %s: %w", p.ID, err)
		}
	} else if !bound {
		r.res.Changes = append(r.res.Changes, fmt.Sprintf("service profile %s of router flavor %s: bound again", p.ID, f.Name))
		if r.dry {
			return nil
		}
	}
	err := r.st.svc.Call("POST", flavorProfile, nil, map[string]any{"service_profile": map[string]any{"id": p.ID}}, nil)
	if err != nil && !pdk.IsConflict(err) {
		return fmt.Errorf("bind service profile %s to flavor %q again: %w", p.ID, f.Name, err)
	}
	return nil
}
