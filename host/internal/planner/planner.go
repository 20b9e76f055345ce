// Package planner turns one run's binding contexts into a Plan (docs/contract.md §2): which CRs to converge,
// which survive a prune, which are being deleted, which credential groups a prune may sweep and
// which CRs could not be read.
//
// # Feedback-loop rule (docs/contract.md Decision 3)
//
// A Modified event whose CR status already records its current generation as Synced or Failed
// (status.observedGeneration == metadata.generation, syncStatus either value) is the hook's own
// status write echoed back, and is skipped: reconciling it again could only repeat the outcome
// already recorded. A spec change bumps the generation and is reconciled; a Failed CR is retried
// by the next Synchronization, Schedule (periodic sync) or Added event, which always reconcile
// every live CR they carry. Such an echo also cancels an earlier changed event of the same CR in
// the batch (typically the hook's own finalizer write): the newest state already records the
// outcome of the generation that event would have reconciled.
//
// # Lifecycle rules
//
// A CR whose Progressing condition records a terminal reason (InvalidConfiguration or
// UnrecoverableError) for its current generation is not reconciled again by any run: no retry
// can change the outcome until the spec does, and a spec change bumps the generation. It stays
// desired, so a prune keeps what it names. A Progressing CR's own status echo is skipped like a
// Synced or Failed one; the progress binding (Options.ProgressBinding) picks it up instead: a run
// that carries only that binding's contexts reconciles only Progressing CRs, continues only the
// deletes that are in progress, and plans no prune.
package planner

import (
	"cmp"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
	"github.com/openstack-sync/openstack-sync/host/internal/status"
)

// The planner's log messages: constant, with the CR and the details as attributes.
const (
	MsgUnreadable   = "Ignoring an unreadable CR"
	MsgNoWatchEvent = "Ignoring an event without a watchEvent"
	MsgNoObject     = "Ignoring an event without an object"
	MsgLaterDeleted = "Not reconciling; a later event in this batch deleted the CR"
	MsgEcho         = "Skipping a Modified event; the CR already records the outcome of its generation"
	MsgLaterEcho    = "Not reconciling; a later event in this batch records the outcome of the CR's generation"
	MsgCollapsed    = "Collapsed the batch's changed events"
	MsgTerminal     = "Not reconciling; the CR's generation failed in a way no retry fixes until the spec changes"
)

// Plan is what one run does.
type Plan struct {
	// Reconcile are the live CRs to converge, sorted by spec.name.
	Reconcile []*resource.Resource
	// Desired is every live CR: the specs a prune must keep, sorted by spec.name.
	Desired []*resource.Resource
	// Deleted are CRs being deleted (Deleted event or deletionTimestamp), never reconciled.
	Deleted []*resource.Resource
	// PruneCredentials are the groups a prune may sweep, sorted.
	PruneCredentials []plugin.Credentials
	// Unreadable names (namespace/name) the CRs that could not be read, sorted.
	Unreadable []string
	// UnreadableScopes are what is known of each unreadable CR's credential group, in the order
	// of Unreadable: a plugin that prunes per group skips only the prunes they cover.
	UnreadableScopes []resource.Scope
	// Progress is set for a run of the progress binding: only Progressing CRs, no prune.
	Progress bool
}

// Options name the binding and say how to read its CRs.
type Options struct {
	Binding      string
	Kind         string
	PodNamespace string
	// ProgressBinding is the schedule binding whose runs pick up Progressing CRs; "" when the
	// plugin has none.
	ProgressBinding string
	// Log names the plugin; lines about a CR add kind and namespace/name.
	Log *slog.Logger
}

type planner struct {
	Options
	unreadable map[string]resource.Scope
}

// Build plans a run. Its only errors are binding-context errors (the run exits 1); unreadable CRs
// are part of the plan.
func Build(contexts []bindingctx.Context, opts Options) (Plan, error) {
	p := &planner{Options: opts, unreadable: map[string]resource.Scope{}}
	var plan Plan
	var err error
	switch {
	case slices.ContainsFunc(contexts, func(c bindingctx.Context) bool { return c.IsEventOf(opts.Binding) }):
		plan, err = p.events(contexts)
	case p.progressOnly(contexts):
		plan, err = p.progress(contexts)
	default:
		plan, err = p.full(contexts)
	}
	if err != nil {
		return Plan{}, err
	}
	plan.Reconcile = p.skipTerminal(plan.Reconcile)
	plan.Unreadable = slices.Sorted(maps.Keys(p.unreadable))
	for _, ref := range plan.Unreadable {
		plan.UnreadableScopes = append(plan.UnreadableScopes, p.unreadable[ref])
	}
	return plan, nil
}

func (p *planner) crLog(r *resource.Resource) *slog.Logger {
	return p.Log.With("kind", p.Kind, "cr", r.Ref())
}

// read parses obj; an unreadable CR is logged and remembered once per batch.
func (p *planner) read(obj any, description string) *resource.Resource {
	r, err := resource.Parse(obj, p.PodNamespace)
	if err != nil {
		reason, ref := err.Error(), resource.Ref(obj)
		var re *resource.Error
		if errors.As(err, &re) {
			reason = re.Reason
		}
		p.Log.Error(MsgUnreadable, "kind", p.Kind, "cr", ref, "from", description, "reason", reason)
		scope := resource.ScopeOf(obj, p.PodNamespace)
		if seen, ok := p.unreadable[ref]; ok {
			scope = seen.Widen(scope)
		}
		p.unreadable[ref] = scope
		return nil
	}
	return r
}

// events plans a run that carries at least one Event of the binding (docs/contract.md §2.1).
func (p *planner) events(contexts []bindingctx.Context) (Plan, error) {
	var changedOrder, deletedOrder []string
	changed := map[string]*resource.Resource{}
	deleted := map[string]*resource.Resource{}
	// seen keeps an identity's first place even when a Deleted event dropped it in between.
	seen := map[string]bool{}
	changedEvents := 0
	for _, c := range contexts {
		if !c.IsEventOf(p.Binding) {
			continue
		}
		ev := c.WatchEvent()
		if ev == "" {
			p.Log.Warn(MsgNoWatchEvent, "kind", p.Kind)
			continue
		}
		obj, err := c.Object()
		if err != nil {
			return Plan{}, err
		}
		if obj == nil {
			p.Log.Warn(MsgNoObject, "kind", p.Kind, "event", ev)
			continue
		}
		r := p.read(obj, ev+" CR")
		if r == nil {
			continue
		}
		id := r.Identity()
		switch {
		case r.Deleting || ev == bindingctx.Deleted:
			if _, ok := deleted[id]; !ok {
				deletedOrder = append(deletedOrder, id)
			}
			deleted[id] = r
			if _, ok := changed[id]; ok {
				delete(changed, id)
				p.crLog(r).Info(MsgLaterDeleted, "name", r.Display())
			}
		case ev == bindingctx.Modified && recordsOwnOutcome(r):
			recorded := []any{"name", r.Display(), "generation", *r.Generation, "sync_status", r.Status()["syncStatus"]}
			p.crLog(r).Info(MsgEcho, recorded...)
			// The CR's newest state already records the outcome of its current generation, so an
			// earlier event of the batch (such as the hook's own finalizer write) needs no pass.
			if _, ok := changed[id]; ok {
				delete(changed, id)
				p.crLog(r).Info(MsgLaterEcho, recorded...)
			}
		default:
			if _, ok := deleted[id]; ok {
				delete(deleted, id)
				deletedOrder = slices.DeleteFunc(deletedOrder, func(s string) bool { return s == id })
			}
			changedEvents++
			if !seen[id] {
				seen[id] = true
				changedOrder = append(changedOrder, id)
			}
			changed[id] = r
		}
	}
	// Identities seen as changed, including those a later Deleted cancelled.
	if changedEvents > len(changedOrder) {
		p.Log.Info(MsgCollapsed, "kind", p.Kind, "events", changedEvents, "crs", len(changedOrder))
	}
	var plan Plan
	for _, id := range changedOrder {
		if r, ok := changed[id]; ok {
			plan.Reconcile = append(plan.Reconcile, r)
		}
	}
	items, err := bindingctx.EventSnapshot(contexts, p.Binding)
	if err != nil {
		return Plan{}, err
	}
	live, snapDeleted, err := p.readAll(items)
	if err != nil {
		return Plan{}, err
	}
	plan.Desired = live
	for _, id := range deletedOrder {
		plan.Deleted = append(plan.Deleted, deleted[id])
	}
	plan.Deleted = dedupe(append(plan.Deleted, snapDeleted...))
	sortByName(plan.Reconcile)
	plan.PruneCredentials = credentials(plan.Reconcile, plan.Deleted)
	return plan, nil
}

// full plans a Synchronization, Schedule or any other non-event run (docs/contract.md §2.2): every live CR
// is reconciled.
func (p *planner) full(contexts []bindingctx.Context) (Plan, error) {
	items, err := bindingctx.FullSnapshot(contexts, p.Binding)
	if err != nil {
		return Plan{}, err
	}
	live, deleted, err := p.readAll(items)
	if err != nil {
		return Plan{}, err
	}
	return Plan{
		Reconcile:        slices.Clone(live),
		Desired:          live,
		Deleted:          dedupe(deleted),
		PruneCredentials: credentials(live, deleted),
	}, nil
}

// progressOnly reports whether every context of the run is the progress binding's.
func (p *planner) progressOnly(contexts []bindingctx.Context) bool {
	return p.ProgressBinding != "" && len(contexts) > 0 && !slices.ContainsFunc(contexts, func(c bindingctx.Context) bool {
		return c.Binding() != p.ProgressBinding
	})
}

// progress plans a run of the progress binding: the CRs (live or being deleted) whose status is
// Progressing, and no prune. Everything else waits for its events or the periodic sync.
func (p *planner) progress(contexts []bindingctx.Context) (Plan, error) {
	items, err := bindingctx.FullSnapshot(contexts, p.Binding)
	if err != nil {
		return Plan{}, err
	}
	live, deleted, err := p.readAll(items)
	if err != nil {
		return Plan{}, err
	}
	isProgressing := func(r *resource.Resource) bool { return r.Status()["syncStatus"] == status.Progressing }
	plan := Plan{Desired: live, Progress: true}
	for _, r := range live {
		if isProgressing(r) {
			plan.Reconcile = append(plan.Reconcile, r)
		}
	}
	for _, r := range dedupe(deleted) {
		if isProgressing(r) {
			plan.Deleted = append(plan.Deleted, r)
		}
	}
	return plan, nil
}

// skipTerminal drops the CRs whose current generation already failed terminally.
func (p *planner) skipTerminal(rs []*resource.Resource) []*resource.Resource {
	return slices.DeleteFunc(rs, func(r *resource.Resource) bool {
		reason, ok := terminalOutcome(r)
		if ok {
			p.crLog(r).Info(MsgTerminal, "name", r.Display(), "generation", *r.Generation, "reason", reason)
		}
		return ok
	})
}

// terminalOutcome returns the terminal reason the CR's Progressing condition records for its
// current generation.
func terminalOutcome(r *resource.Resource) (string, bool) {
	if r.Generation == nil {
		return "", false
	}
	st := r.Status()
	if st == nil || !generationIs(st["observedGeneration"], *r.Generation) {
		return "", false
	}
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m == nil || m["type"] != status.ConditionProgressing || m["status"] != "False" {
			continue
		}
		reason, _ := m["reason"].(string)
		if status.TerminalReason(reason) && generationIs(m["observedGeneration"], *r.Generation) {
			return reason, true
		}
	}
	return "", false
}

func generationIs(v any, gen int64) bool {
	n, ok := v.(json.Number)
	if !ok {
		return false
	}
	g, err := n.Int64()
	return err == nil && g == gen
}

// readAll splits a snapshot's CRs into live and deleting ones, each sorted by spec.name. The CRs
// are decoded one at a time and only what the run needs of each is kept (resource.Resource).
func (p *planner) readAll(items *bindingctx.List) (live, deleting []*resource.Resource, err error) {
	live = make([]*resource.Resource, 0, items.Len())
	err = items.Each(func(obj any) {
		r := p.read(obj, "CR")
		switch {
		case r == nil:
		case r.Deleting:
			deleting = append(deleting, r)
		default:
			live = append(live, r)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if len(live) == 0 {
		live = nil
	}
	sortByName(live)
	sortByName(deleting)
	return live, deleting, nil
}

// recordsOwnOutcome reports whether the CR's status already records its current generation as
// Synced or Failed: the hook wrote that status, so the Modified event is its echo.
func recordsOwnOutcome(r *resource.Resource) bool {
	if r.Generation == nil {
		return false
	}
	st := r.Status()
	s, _ := st["syncStatus"].(string)
	if s != status.Synced && s != status.Failed && s != status.Progressing {
		return false
	}
	return generationIs(st["observedGeneration"], *r.Generation)
}

func sortByName(rs []*resource.Resource) {
	slices.SortStableFunc(rs, func(a, b *resource.Resource) int { return cmp.Compare(a.SpecName(), b.SpecName()) })
}

// dedupe keeps the first of each identity: an event-deleted CR may also sit, terminating, in the
// snapshot. Identity (the UID) rather than namespace/name keeps a different-UID object of the same
// name, whose finalizer still needs releasing.
func dedupe(rs []*resource.Resource) []*resource.Resource {
	seen := map[string]bool{}
	return slices.DeleteFunc(rs, func(r *resource.Resource) bool {
		id := r.Identity()
		if seen[id] {
			return true
		}
		seen[id] = true
		return false
	})
}

// credentials is the sorted set of groups of the given CRs.
func credentials(lists ...[]*resource.Resource) []plugin.Credentials {
	var out []plugin.Credentials
	for _, rs := range lists {
		for _, r := range rs {
			out = append(out, r.Credentials)
		}
	}
	slices.SortFunc(out, plugin.Credentials.Compare)
	return slices.Compact(out)
}
