package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
)

// widgetSpec is spec.resource of the fake CR; widgetFilter its spec.import.filter.
type widgetSpec struct{ Name, Description string }
type widgetFilter struct{ Name string }

// widget is the fake OpenStack resource.
type widget struct{ ID, Name, Description, State string }

// cloud is an in-memory OpenStack with a journal of every call and injectable failures.
type cloud struct {
	items   map[string]*widget
	next    int
	journal []string

	failGet, failList, failImport, failCreate, failDelete error
	// createWaits makes Create return no resource and a Progressing status.
	createWaits bool
	// createsNothing makes Create break its contract: no resource and no reason.
	createsNothing bool
	// slowDelete keeps a deleted widget for one more GET, like an asynchronous delete.
	slowDelete bool
	// newState is the state of a created widget ("" is ACTIVE).
	newState string
	// reconcilers are what the create actuator returns as reconcilers.
	reconcilers []lifecycle.Progress
	recsErr     lifecycle.Progress
}

func newCloud(ws ...widget) *cloud {
	c := &cloud{items: map[string]*widget{}}
	for _, w := range ws {
		c.items[w.ID] = &w
	}
	return c
}

func (c *cloud) log(format string, args ...any) {
	c.journal = append(c.journal, fmt.Sprintf(format, args...))
}

func (c *cloud) sorted() []*widget {
	out := make([]*widget, 0, len(c.items))
	for _, w := range c.items {
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b *widget) int {
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	return out
}

// cr is the fake CR.
type cr struct {
	fields *lifecycle.Fields[widgetSpec, widgetFilter]
}

func managedCR(name, statusID string) cr {
	return cr{&lifecycle.Fields[widgetSpec, widgetFilter]{ID: statusID,
		Spec: lifecycle.Spec[widgetSpec, widgetFilter]{Resource: &widgetSpec{Name: name, Description: "d"}}}}
}

func importCR(id string, filter *widgetFilter, statusID string) cr {
	return cr{&lifecycle.Fields[widgetSpec, widgetFilter]{ID: statusID, Spec: lifecycle.Spec[widgetSpec, widgetFilter]{
		ManagementPolicy: lifecycle.Unmanaged, Import: &lifecycle.Import[widgetFilter]{ID: id, Filter: filter}}}}
}

type factory struct{ c *cloud }

func (f factory) Adapter(o cr) lifecycle.Adapter[widgetSpec, widgetFilter] { return o.fields }
func (f factory) NewCreateActuator(context.Context, cr) (lifecycle.CreateActuator[cr, widgetFilter, widget], lifecycle.Progress) {
	return actuator(f), lifecycle.Done()
}
func (f factory) NewDeleteActuator(context.Context, cr) (lifecycle.DeleteActuator[cr, widget], lifecycle.Progress) {
	return actuator(f), lifecycle.Done()
}

type actuator struct{ c *cloud }

func (a actuator) ResourceID(w *widget) string { return w.ID }

func (a actuator) GetByID(_ context.Context, id string) (*widget, lifecycle.Progress) {
	a.c.log("get %s", id)
	if a.c.failGet != nil {
		return nil, lifecycle.Transient(a.c.failGet)
	}
	w, ok := a.c.items[id]
	if !ok {
		return nil, lifecycle.Done()
	}
	if w.State == "DELETING" {
		delete(a.c.items, id)
	}
	cp := *w
	return &cp, lifecycle.Done()
}

func (a actuator) list(match func(*widget) bool, fail error) iter.Seq2[*widget, error] {
	return func(yield func(*widget, error) bool) {
		if fail != nil {
			yield(nil, fail)
			return
		}
		for _, w := range a.c.sorted() {
			if match(w) {
				cp := *w
				if !yield(&cp, nil) {
					return
				}
			}
		}
	}
}

func (a actuator) ListForAdoption(_ context.Context, o cr) (iter.Seq2[*widget, error], bool) {
	spec := o.fields.ResourceSpec()
	if spec == nil {
		return nil, false
	}
	a.c.log("list-adopt %s", spec.Name)
	return a.list(func(w *widget) bool { return w.Name == spec.Name }, a.c.failList), true
}

func (a actuator) ListForImport(_ context.Context, _ cr, f widgetFilter) (iter.Seq2[*widget, error], lifecycle.Progress) {
	a.c.log("list-import %s", f.Name)
	return a.list(func(w *widget) bool { return w.Name == f.Name }, a.c.failImport), lifecycle.Done()
}

func (a actuator) Create(_ context.Context, o cr) (*widget, lifecycle.Progress) {
	spec := o.fields.ResourceSpec()
	a.c.log("create %s", spec.Name)
	switch {
	case a.c.failCreate != nil:
		return nil, lifecycle.Transient(a.c.failCreate)
	case a.c.createWaits:
		return nil, lifecycle.Progressing("waiting for a quota", 30*time.Second)
	case a.c.createsNothing:
		return nil, lifecycle.Done()
	}
	a.c.next++
	w := &widget{ID: fmt.Sprintf("new-%d", a.c.next), Name: spec.Name, Description: spec.Description, State: a.c.newState}
	if w.State == "" {
		w.State = "ACTIVE"
	}
	a.c.items[w.ID] = w
	cp := *w
	return &cp, lifecycle.Done()
}

func (a actuator) Delete(_ context.Context, _ cr, w *widget) lifecycle.Progress {
	a.c.log("delete %s", w.ID)
	if a.c.failDelete != nil {
		return lifecycle.Transient(a.c.failDelete)
	}
	if cur, ok := a.c.items[w.ID]; ok && a.c.slowDelete {
		cur.State = "DELETING"
		return lifecycle.Done()
	}
	delete(a.c.items, w.ID)
	return lifecycle.Done()
}

func (a actuator) Reconcilers(context.Context, cr, *widget) ([]lifecycle.Reconciler[cr, widget], lifecycle.Progress) {
	var out []lifecycle.Reconciler[cr, widget]
	for i, p := range a.c.reconcilers {
		out = append(out, func(_ context.Context, _ cr, w *widget) lifecycle.Progress {
			a.c.log("reconciler %d %s", i, w.ID)
			return p
		})
	}
	return out, a.c.recsErr
}

type statusWriter struct{}

func (statusWriter) Available(_ cr, w *widget) (lifecycle.ConditionStatus, lifecycle.Progress) {
	if w.State != "ACTIVE" {
		return lifecycle.ConditionFalse, lifecycle.Progressing("waiting for the widget to be ACTIVE", 5*time.Second)
	}
	return lifecycle.ConditionTrue, lifecycle.Done()
}

func (statusWriter) Observed(w *widget) any {
	return map[string]any{"name": w.Name, "state": w.State}
}

func driver(c *cloud) *lifecycle.Driver[cr, widgetSpec, widgetFilter, widget] {
	return &lifecycle.Driver[cr, widgetSpec, widgetFilter, widget]{Factory: factory{c}, Status: statusWriter{}, Noun: "widget"}
}

var errUnavailable = errors.New("503 Service Unavailable")
