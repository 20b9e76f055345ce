package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// ImportFilter is spec.import.filter: the flavor's exact name.
type ImportFilter struct {
	Name string `json:"name"`
}

// flavorCR is the lifecycle driver's view of one NeutronRouterFlavor, with the group's state. It
// is its own lifecycle.Adapter: the flavor's fields are the resource spec. It also carries what
// the steps of one run share: the profiles to bind and the notes.
type flavorCR struct {
	spec     Spec
	statusID string
	st       *state
	log      logf

	profilesDone bool
	profilesErr  error
	want         []string
	fieldsFailed bool
	notes        []string
}

// ResourceSpec is the flavor's own fields, nil while the CR imports.
func (c *flavorCR) ResourceSpec() *Spec { return c.adapter().ResourceSpec() }

// adapter: the flavor's fields are the resource spec. Deleting flavors is the set prune's job.
func (c *flavorCR) adapter() *lifecycle.Flat[Spec, ImportFilter] {
	return &lifecycle.Flat[Spec, ImportFilter]{SharedFields: c.spec.SharedFields, Resource: &c.spec, ID: c.statusID}
}

// validateLifecycle checks the shared fields as the CRD's rules do. service_type and is_enabled are
// left out of the resource fields: the API server fills in their defaults.
func (s Spec) validateLifecycle() error {
	hasResource := s.Name != "" || s.Description != "" || len(s.ServiceProfiles) > 0
	if err := s.SharedFields.Validate(hasResource); err != nil {
		return invalidspec.Errorf("%v", err)
	}
	return nil
}

type factory struct{}

func (factory) Adapter(c *flavorCR) lifecycle.Adapter[Spec, ImportFilter] { return c.adapter() }

func (factory) NewCreateActuator(_ context.Context, c *flavorCR) (lifecycle.CreateActuator[*flavorCR, ImportFilter, flavor], lifecycle.Progress) {
	err := c.spec.validateLifecycle()
	if err == nil && c.ResourceSpec() != nil {
		err = c.spec.validate()
	}
	if err != nil {
		return nil, lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, invalidspec.WithReason(err))
	}
	if err := c.st.load(); err != nil {
		return nil, lifecycle.Transient(err)
	}
	return actuator{c.st}, lifecycle.Done()
}

func (factory) NewDeleteActuator(context.Context, *flavorCR) (lifecycle.DeleteActuator[*flavorCR, flavor], lifecycle.Progress) {
	return nil, lifecycle.Terminal(lifecycle.ReasonUnrecoverableError, errors.New("router flavors are deleted by the prune, not per CR"))
}

var driver = &lifecycle.Driver[*flavorCR, Spec, ImportFilter, flavor]{Factory: factory{}, Status: actuator{}, Noun: "router flavor"}

// actuator reaches flavors through the group's state: a converged group still costs two lists.
type actuator struct{ st *state }

var (
	_ lifecycle.CreateActuator[*flavorCR, ImportFilter, flavor] = actuator{}
	_ lifecycle.ReconcileActuator[*flavorCR, flavor]            = actuator{}
	_ lifecycle.AdoptionConflict[flavor]                        = actuator{}
)

func (a actuator) ResourceID(f *flavor) string { return f.ID }

func (a actuator) GetByID(_ context.Context, id string) (*flavor, lifecycle.Progress) {
	if f, ok := a.st.flavor(id); ok {
		return &f, lifecycle.Done()
	}
	var resp struct {
		Flavor flavor `json:"flavor"`
	}
	err := a.st.svc.Call("GET", flavorsPath+"/"+url.PathEscape(id), nil, nil, &resp)
	switch {
	case pdk.IsNotFound(err):
		return nil, lifecycle.Done()
	case err != nil:
		return nil, lifecycle.Transient(fmt.Errorf("get flavor %s: %w", id, err))
	}
	a.st.putFlavor(resp.Flavor)
	return &resp.Flavor, lifecycle.Done()
}

func (a actuator) named(name string) iter.Seq2[*flavor, error] {
	return func(yield func(*flavor, error) bool) {
		for _, f := range a.st.named(name) {
			if !yield(&f, nil) {
				return
			}
		}
	}
}

// ListForAdoption is the plugin's match since before the lifecycle: the exact name. An unowned
// flavor adopted this way is stamped with the marker by the fields reconciler.
func (a actuator) ListForAdoption(_ context.Context, c *flavorCR) (iter.Seq2[*flavor, error], bool) {
	if c.ResourceSpec() == nil {
		return nil, false
	}
	return a.named(c.spec.Name), true
}

func (a actuator) AdoptionConflict(matches []*flavor) error {
	return fmt.Errorf("%d Neutron flavors are named %q; rename or delete the extras", len(matches), matches[0].Name)
}

func (a actuator) ListForImport(_ context.Context, _ *flavorCR, f ImportFilter) (iter.Seq2[*flavor, error], lifecycle.Progress) {
	return a.named(f.Name), lifecycle.Done()
}

// Create makes the service profiles first (idempotent: found or made, never twice), then the
// flavor; binding them is the reconcilers' job.
func (a actuator) Create(_ context.Context, c *flavorCR) (*flavor, lifecycle.Progress) {
	if err := c.ensureProfiles(); err != nil {
		return nil, lifecycle.Transient(err)
	}
	f, err := a.st.createFlavor(c.spec)
	if err != nil {
		return nil, lifecycle.Transient(err)
	}
	return &f, lifecycle.Done()
}

// Reconcilers: profiles, the flavor's own fields, then the bindings, which wait for both.
func (a actuator) Reconcilers(context.Context, *flavorCR, *flavor) ([]lifecycle.Reconciler[*flavorCR, flavor], lifecycle.Progress) {
	return []lifecycle.Reconciler[*flavorCR, flavor]{a.profiles, a.fields, a.bindings}, lifecycle.Done()
}

func (a actuator) profiles(_ context.Context, c *flavorCR, _ *flavor) lifecycle.Progress {
	return lifecycle.Transient(c.ensureProfiles())
}

func (a actuator) fields(_ context.Context, c *flavorCR, f *flavor) lifecycle.Progress {
	_, err := a.st.updateFlavor(*f, c.spec)
	var ste *serviceTypeError
	switch {
	case err == nil:
		return lifecycle.Done()
	case errors.As(err, &ste):
		c.fieldsFailed = true
		return lifecycle.Terminal(lifecycle.ReasonInvalidConfiguration, err)
	}
	c.fieldsFailed = true
	return lifecycle.Transient(err)
}

// bindings binds the wanted profiles to the flavor, only when the profiles and the flavor's own
// fields converged: a flavor of the wrong service type gets no binding.
func (a actuator) bindings(_ context.Context, c *flavorCR, f *flavor) lifecycle.Progress {
	if c.profilesErr != nil || c.fieldsFailed {
		return lifecycle.Done()
	}
	err := a.st.bind(a.current(*f), c.want, c.log)
	// What the status shows is the flavor after this run's writes.
	*f = a.current(*f)
	return lifecycle.Transient(err)
}

// current is the group's view of f, which the plugin's own writes keep up to date.
func (a actuator) current(f flavor) flavor {
	if x, ok := a.st.flavor(f.ID); ok {
		return x
	}
	return f
}

// Available: a flavor is usable once it exists (enabled or not is the spec's choice).
func (actuator) Available(*flavorCR, *flavor) (lifecycle.ConditionStatus, lifecycle.Progress) {
	return lifecycle.ConditionTrue, lifecycle.Done()
}

// Observed is status.resource: what Neutron holds for the flavor, marker aside.
func (actuator) Observed(f *flavor) any {
	cur := *f
	profiles := cur.ServiceProfiles
	if profiles == nil {
		profiles = []string{}
	}
	return observedFlavor{Name: cur.Name, ServiceType: cur.ServiceType, Enabled: cur.Enabled,
		Description: withoutMarkers(cur.Description), ServiceProfiles: profiles}
}

// observedFlavor is status.resource. A struct, its members in the order a map's keys are
// written (sorted), so that the JSON is what a map of the same members gives
// (TestTheObservedFlavorIsWrittenAsAMap) without a map's allocations and sorting at every CR.
type observedFlavor struct {
	Description     string   `json:"description"`
	Enabled         bool     `json:"enabled"`
	Name            string   `json:"name"`
	ServiceProfiles []string `json:"service_profiles"`
	ServiceType     string   `json:"service_type"`
}
