package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// Outcome is what one run of a flow learned, for the status the host writes.
type Outcome struct {
	// ID is status.id: the resource the CR is bound to; "" when none is known. Once set, later
	// failures of the same run do not clear it, so a created resource is never forgotten.
	ID string
	// Resource is status.resource, the observed resource; nil when none was observed.
	Resource any
	// Available is the Available condition's status.
	Available ConditionStatus
	// Progress is the aggregate of every step: Done when the CR is converged (or, for Delete,
	// when the resource is confirmed gone and the finalizer may go).
	Progress Progress
}

// Driver runs the lifecycle flows of one resource type (ORC's generic controller) for CRs of
// type O with resource spec R, import filter F and OpenStack resource S.
type Driver[O, R, F, S any] struct {
	Factory Factory[O, R, F, S]
	Status  StatusWriter[O, S]
	// Noun names the resource in messages, e.g. "segment range".
	Noun string
}

func (d *Driver[O, R, F, S]) noun() string {
	if d.Noun == "" {
		return "resource"
	}
	return d.Noun
}

// Reconcile runs the create/update flow of one live CR:
//
//  1. an unmanaged CR without an import is a terminal error;
//  2. a CR with status.id is bound to that resource; when it is gone from OpenStack, a managed CR
//     with a resource spec creates it again (after adoption), anything else is a terminal error;
//  3. else spec.import.id must name an existing resource (missing: terminal), or
//     spec.import.filter must match exactly one (none: Progressing and retried; several: terminal);
//  4. else, for a managed CR, adoption runs first (one match is adopted, several are a terminal
//     error) and Create is called only when it found nothing;
//  5. on a managed CR, every reconciler runs and their results are aggregated;
//  6. the status writer reports Available and status.resource.
func (d *Driver[O, R, F, S]) Reconcile(ctx context.Context, obj O) Outcome {
	a := d.Factory.Adapter(obj)
	managed := a.ManagementPolicy() != Unmanaged
	if !managed && a.ImportID() == "" && a.ImportFilter() == nil {
		return Outcome{Available: ConditionFalse, Progress: Terminal(ReasonInvalidConfiguration,
			errors.New("spec.managementPolicy unmanaged needs spec.import (id or filter)"))}
	}
	act, p := d.Factory.NewCreateActuator(ctx, obj)
	if !p.IsDone() {
		return Outcome{Available: ConditionUnknown, Progress: p}
	}
	if act == nil {
		return Outcome{Available: ConditionUnknown, Progress: Transient(errors.New("the plugin built no create actuator"))}
	}
	res, out := d.find(ctx, a, act, obj, managed)
	if res == nil {
		return out
	}
	out.ID = act.ResourceID(res)
	if managed {
		if ra, ok := act.(ReconcileActuator[O, S]); ok {
			recs, p := ra.Reconcilers(ctx, obj, res)
			out.Progress = out.Progress.With(p)
			for _, r := range recs {
				out.Progress = out.Progress.With(r(ctx, obj, res))
			}
		}
	}
	out.Available = ConditionUnknown
	if d.Status != nil {
		st, p := d.Status.Available(obj, res)
		out.Available, out.Progress = st, out.Progress.With(p)
		out.Resource = d.Status.Observed(res)
	}
	return out
}

// find returns the resource the CR is bound to, importing, adopting or creating it. A nil
// resource comes with the Outcome to report.
func (d *Driver[O, R, F, S]) find(ctx context.Context, a Adapter[R, F], act CreateActuator[O, F, S], obj O, managed bool) (*S, Outcome) {
	fail := func(p Progress) (*S, Outcome) { return nil, Outcome{Available: ConditionFalse, Progress: p} }
	if id := a.StatusID(); id != "" {
		res, p := act.GetByID(ctx, id)
		switch {
		case !p.IsDone():
			return nil, Outcome{ID: id, Available: ConditionUnknown, Progress: p}
		case res != nil:
			return res, Outcome{}
		case !managed || a.ResourceSpec() == nil:
			return nil, Outcome{ID: id, Available: ConditionFalse, Progress: Terminal(ReasonUnrecoverableError,
				fmt.Errorf("%s %s (status.id) no longer exists in OpenStack", d.noun(), id))}
		}
		// A managed resource deleted outside: make it again, adopting first like any create.
	}
	if id := a.ImportID(); id != "" {
		res, p := act.GetByID(ctx, id)
		switch {
		case !p.IsDone():
			return fail(p)
		case res == nil:
			return fail(Terminal(ReasonUnrecoverableError, fmt.Errorf("spec.import.id: %s %s does not exist", d.noun(), id)))
		}
		return res, Outcome{}
	}
	if f := a.ImportFilter(); f != nil {
		seq, p := act.ListForImport(ctx, obj, *f)
		if !p.IsDone() {
			return fail(p)
		}
		matches, err := collect(seq, act)
		switch {
		case err != nil:
			return fail(Transient(fmt.Errorf("listing %ss for spec.import.filter: %w", d.noun(), err)))
		case len(matches) == 0:
			return fail(Progressing(fmt.Sprintf("waiting for a %s matching spec.import.filter", d.noun()), 0))
		case len(matches) > 1:
			return fail(Terminal(ReasonInvalidConfiguration, fmt.Errorf("spec.import.filter matches %d %ss (%s); it must match one",
				len(matches), d.noun(), ids(matches, act))))
		}
		return matches[0], Outcome{}
	}
	if !managed {
		return fail(Terminal(ReasonInvalidConfiguration, errors.New("spec.managementPolicy unmanaged needs spec.import (id or filter)")))
	}
	if a.ResourceSpec() == nil {
		return fail(Terminal(ReasonInvalidConfiguration, errors.New("a managed CR needs spec.resource or spec.import")))
	}
	res, p := d.adopt(ctx, act, obj)
	if !p.IsDone() || res != nil {
		return res, Outcome{Available: ConditionFalse, Progress: p}
	}
	res, p = act.Create(ctx, obj)
	switch {
	case res != nil:
		// Whatever Create reported beside the resource is kept; the resource is recorded.
		return res, Outcome{Progress: p}
	case p.IsDone():
		return fail(Transient(fmt.Errorf("creating the %s returned neither a resource nor a reason", d.noun())))
	}
	return fail(p)
}

// adopt returns the one resource adoption finds, nil when there is none or adoption does not
// apply, and a terminal error when several match.
func (d *Driver[O, R, F, S]) adopt(ctx context.Context, act BaseActuator[O, S], obj O) (*S, Progress) {
	seq, ok := act.ListForAdoption(ctx, obj)
	if !ok || seq == nil {
		return nil, Done()
	}
	matches, err := collect(seq, act)
	switch {
	case err != nil:
		return nil, Transient(fmt.Errorf("listing %ss for adoption: %w", d.noun(), err))
	case len(matches) > 1:
		if ac, ok := act.(AdoptionConflict[S]); ok {
			return nil, Terminal(ReasonUnrecoverableError, ac.AdoptionConflict(matches))
		}
		return nil, Terminal(ReasonUnrecoverableError, fmt.Errorf("%d %ss match this CR (%s); delete or rename the extras in OpenStack",
			len(matches), d.noun(), ids(matches, act)))
	case len(matches) == 1:
		return matches[0], Done()
	}
	return nil, Done()
}

// Delete runs the delete flow of a CR being deleted. Done means the finalizer may go:
//
//   - an unmanaged CR, or one with onDelete detach, leaves OpenStack untouched;
//   - with status.id, that resource is deleted; without it, a CR with a resource spec adopts
//     first (the resource a lost status write forgot), an imported CR never owned anything;
//   - the delete is confirmed only when GetByID says not found, else the flow is Progressing.
func (d *Driver[O, R, F, S]) Delete(ctx context.Context, obj O) Outcome {
	a := d.Factory.Adapter(obj)
	id := a.StatusID()
	if a.ManagementPolicy() == Unmanaged || a.ManagedOptions().OnDelete == OnDeleteDetach {
		return Outcome{ID: id, Available: ConditionUnknown}
	}
	act, p := d.Factory.NewDeleteActuator(ctx, obj)
	if !p.IsDone() {
		return Outcome{ID: id, Available: ConditionUnknown, Progress: p}
	}
	if act == nil {
		return Outcome{ID: id, Available: ConditionUnknown, Progress: Transient(errors.New("the plugin built no delete actuator"))}
	}
	var res *S
	switch {
	case id != "":
		res, p = act.GetByID(ctx, id)
	case a.ResourceSpec() != nil && a.ImportID() == "" && a.ImportFilter() == nil:
		res, p = d.adopt(ctx, act, obj)
	}
	if !p.IsDone() {
		return Outcome{ID: id, Available: ConditionUnknown, Progress: p}
	}
	if res == nil {
		return Outcome{Available: ConditionFalse}
	}
	id = act.ResourceID(res)
	if p := act.Delete(ctx, obj, res); !p.IsDone() {
		return Outcome{ID: id, Available: ConditionUnknown, Progress: p}
	}
	left, p := act.GetByID(ctx, id)
	switch {
	case !p.IsDone():
		return Outcome{ID: id, Available: ConditionUnknown, Progress: p}
	case left != nil:
		return Outcome{ID: id, Available: ConditionFalse, Progress: Progressing(fmt.Sprintf("waiting for %s %s to be deleted", d.noun(), id), 0)}
	}
	return Outcome{Available: ConditionFalse}
}

func collect[S any](seq iter.Seq2[*S, error], act interface{ ResourceID(*S) string }) ([]*S, error) {
	var out []*S
	seen := map[string]bool{}
	for res, err := range seq {
		if err != nil {
			return nil, err
		}
		// A paginated listing may repeat an item across pages; one resource is one match.
		if res == nil || seen[act.ResourceID(res)] {
			continue
		}
		seen[act.ResourceID(res)] = true
		out = append(out, res)
	}
	return out, nil
}

func ids[S any](rs []*S, act interface{ ResourceID(*S) string }) string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, act.ResourceID(r))
	}
	return strings.Join(out, ", ")
}
