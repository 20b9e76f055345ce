package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// rangeCR is the lifecycle driver's view of one NeutronSegmentRange, with the group's client and
// index.
type rangeCR struct {
	spec     Spec
	statusID string
	svc      *pdk.ServiceClient
	idx      *index
	own      ownership
}

// ResourceSpec is the range's own fields, nil while the CR imports.
func (c *rangeCR) ResourceSpec() *Spec { return c.adapter().ResourceSpec() }

// adapter: the range's fields are the resource spec; the plugin never deletes a range, so deleting
// a CR always detaches.
func (c *rangeCR) adapter() *lifecycle.Flat[Spec, ImportFilter] {
	return &lifecycle.Flat[Spec, ImportFilter]{SharedFields: c.spec.SharedFields, Resource: &c.spec, ID: c.statusID,
		OnDelete: lifecycle.OnDeleteDetach}
}

// factory builds the actuator of one CR; the create actuator refuses a spec that can never
// converge before any request.
type factory struct{}

func (factory) Adapter(c *rangeCR) lifecycle.Adapter[Spec, ImportFilter] { return c.adapter() }

func (factory) NewCreateActuator(_ context.Context, c *rangeCR) (lifecycle.CreateActuator[*rangeCR, ImportFilter, segmentRange], lifecycle.Progress) {
	err := c.spec.validateLifecycle()
	if err == nil && c.ResourceSpec() != nil {
		err = c.spec.validate()
	}
	if err != nil {
		return nil, lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, invalidspec.WithReason(err))
	}
	return actuator{c.svc, c.idx}, lifecycle.Done()
}

func (factory) NewDeleteActuator(_ context.Context, c *rangeCR) (lifecycle.DeleteActuator[*rangeCR, segmentRange], lifecycle.Progress) {
	return nil, lifecycle.Terminal(lifecycle.ReasonUnrecoverableError, errors.New("segment ranges are never deleted"))
}

var driver = &lifecycle.Driver[*rangeCR, Spec, ImportFilter, segmentRange]{Factory: factory{}, Status: actuator{}, Noun: "segment range"}

// actuator reaches segment ranges through the group's index: a converged group still costs one
// list, and a GET only for an id the list does not hold.
type actuator struct {
	svc *pdk.ServiceClient
	idx *index
}

var (
	_ lifecycle.CreateActuator[*rangeCR, ImportFilter, segmentRange] = actuator{}
	_ lifecycle.ReconcileActuator[*rangeCR, segmentRange]            = actuator{}
	_ lifecycle.AdoptionConflict[segmentRange]                       = actuator{}
)

func (a actuator) ResourceID(r *segmentRange) string { return r.ID }

func (a actuator) GetByID(_ context.Context, id string) (*segmentRange, lifecycle.Progress) {
	if r, ok := a.idx.byID(id); ok {
		return &r, lifecycle.Done()
	}
	var resp struct {
		Range segmentRange `json:"network_segment_range"`
	}
	err := a.svc.Call("GET", rangesPath+"/"+url.PathEscape(id), nil, nil, &resp)
	switch {
	case pdk.IsNotFound(err):
		return nil, lifecycle.Done()
	case err != nil:
		return nil, lifecycle.Transient(fmt.Errorf("get segment range %s: %w", id, err))
	}
	a.idx.put(resp.Range)
	return &resp.Range, lifecycle.Done()
}

func (a actuator) each(match func(segmentRange) bool) iter.Seq2[*segmentRange, error] {
	return func(yield func(*segmentRange, error) bool) {
		for _, r := range a.idx.ranges {
			if match(r) && !yield(&r, nil) {
				return
			}
		}
	}
}

// ListForAdoption is the plugin's match since before the lifecycle: the exact name and, for an
// unshared range, the project.
func (a actuator) ListForAdoption(_ context.Context, c *rangeCR) (iter.Seq2[*segmentRange, error], bool) {
	s := c.ResourceSpec()
	if s == nil {
		return nil, false
	}
	matches := a.idx.find(*s)
	return func(yield func(*segmentRange, error) bool) {
		for i := range matches {
			if !yield(&matches[i], nil) {
				return
			}
		}
	}, true
}

// AdoptionConflict keeps the plugin's wording, with the hint that picks one.
func (a actuator) AdoptionConflict(matches []*segmentRange) error {
	ids := make([]string, 0, len(matches))
	for _, m := range matches {
		ids = append(ids, m.ID)
	}
	hint := "set spec.project_id and spec.shared=false to pick one, or rename the extras in Neutron"
	if !matches[0].Shared {
		hint = "rename or delete the extras in Neutron"
	}
	return fmt.Errorf("%d segment ranges are named %q (%s); %s", len(matches), matches[0].Name, strings.Join(ids, ", "), hint)
}

func (a actuator) ListForImport(_ context.Context, _ *rangeCR, f ImportFilter) (iter.Seq2[*segmentRange, error], lifecycle.Progress) {
	return a.each(f.matches), lifecycle.Done()
}

func (a actuator) Create(_ context.Context, c *rangeCR) (*segmentRange, lifecycle.Progress) {
	if err := foreign(c.own, a.idx, c.spec); err != nil {
		return nil, lifecycle.Transient(err)
	}
	r, err := create(a.svc, a.idx, c.spec)
	if err != nil {
		return nil, lifecycle.Transient(invalidspec.WithReason(err))
	}
	return r, lifecycle.Done()
}

func (a actuator) Reconcilers(context.Context, *rangeCR, *segmentRange) ([]lifecycle.Reconciler[*rangeCR, segmentRange], lifecycle.Progress) {
	return []lifecycle.Reconciler[*rangeCR, segmentRange]{a.bounds}, lifecycle.Done()
}

// bounds converges minimum and maximum; a field Neutron cannot change in place is terminal.
func (a actuator) bounds(_ context.Context, c *rangeCR, r *segmentRange) lifecycle.Progress {
	err := update(a.svc, a.idx, *r, c.spec)
	var ie *immutableError
	switch {
	case err == nil:
		return lifecycle.Done()
	case errors.As(err, &ie):
		return lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, pdk.WithReason("ImmutableFieldChanged", err))
	}
	return lifecycle.Transient(err)
}

// Available: a segment range has no build state; it is usable once it exists.
func (actuator) Available(*rangeCR, *segmentRange) (lifecycle.ConditionStatus, lifecycle.Progress) {
	return lifecycle.ConditionTrue, lifecycle.Done()
}

// Observed is status.resource: what Neutron holds for the range.
func (actuator) Observed(r *segmentRange) any {
	out := map[string]any{"name": r.Name, "network_type": r.NetworkType, "minimum": r.Minimum, "maximum": r.Maximum,
		"shared": r.Shared}
	if r.PhysicalNetwork != nil {
		out["physical_network"] = *r.PhysicalNetwork
	}
	if r.ProjectID != "" {
		out["project_id"] = r.ProjectID
	}
	return out
}
