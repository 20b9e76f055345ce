// Package runner drives one hook pass over a plan (docs/contract.md §5–§7): finalizer sync before any
// OpenStack connection, then per credential group connect, readiness, reconcile and status, then
// prune, then the release of deleted CRs' finalizers. It returns the run's exit code.
//
// Safety rules, in one place: a prune runs only when every CR reconciled (or failed terminally,
// its spec desired all the same) and every CR could be read (otherwise the desired state is
// unknown); a group's empty desired set is acted on only when
// a CR of that group is being deleted; a finalizer held for cleanup is released only after its
// group's prune succeeded.
package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/finalizer"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
	"github.com/openstack-sync/openstack-sync/host/internal/status"
)

// Kube is everything the runner asks of the Kubernetes API.
type Kube interface {
	finalizer.API
	MergePatchStatus(ctx context.Context, t kubeapi.Target, patch []byte) error
}

// Runner holds what one pass needs. A process runs one pass, so Run keeps that pass's sessions
// on the Runner and must not be called concurrently.
type Runner struct {
	Plugin    plugin.Plugin
	Connector plugin.Connector
	Kube      Kube
	Config    hookenv.Config
	// Log names the plugin; the runner adds kind and the CR to lines about a CR.
	Log *slog.Logger
	// Sleep waits between readiness attempts; nil sleeps for real (tests record instead).
	Sleep func(ctx context.Context, d time.Duration) error
	// Now stamps status times; nil is time.Now.
	Now func() time.Time
	// Spared are the live CRs other shards reconcile (docs/scaling.md): every prune of the pass
	// spares their specs too (a per-group prune those of its group), since ownership markers do
	// not name the shard.
	Spared []*resource.Resource
	// Deadline, when set, is when the run stops starting reconciles (<P>_RUN_BUDGET after it
	// began): the CRs left count as failed without a status write, so no prune runs and
	// shell-operator retries the run (budget.go).
	Deadline time.Time
	// Metrics and Events observe the run (observe.go); nil records nothing.
	Metrics metrics.Recorder
	Events  EventRecorder
	// Journal hears about each step of the pass once it is finished; Done are the steps an
	// earlier pass of the same plan finished, which this pass takes as done (resume.go).
	Journal Journal
	Done    []Step

	noun     string
	meta     plugin.Metadata
	done     steps
	sessions map[plugin.Credentials]plugin.Session
	// holder is the UID of the newest object the plan saw under each namespace/name.
	holder map[string]string
	// readySpent is how much of the run's readiness budget (Config.ReadyBudget) the probes and
	// the delays between them have used, over every credential group.
	readySpent time.Duration
	// budgetSpent records that outOfTime stopped the run (mu: workers of a group check it too).
	mu          sync.Mutex
	budgetSpent bool
	// statusFailed counts the status writes that failed for another reason than the CR being gone.
	statusFailed atomic.Int64
}

// Messages of the failures the framework itself reports on a CR.
const (
	MsgAddFinalizer    = "Unable to add finalizer before reconciling"
	MsgRemoveFinalizer = "Unable to remove disabled finalizer before reconciling"
)

// Run performs one pass and returns the exit code: 0 when everything succeeded, else 1. A status
// write the API server refused fails the run too (the CR's status, status.id for a lifecycle
// plugin, is not on record), without stopping any prune: the CR's spec was read either way.
func (rn *Runner) Run(ctx context.Context, plan planner.Plan) int {
	rn.statusFailed.Store(0)
	code := rn.run(ctx, plan)
	if n := rn.statusFailed.Load(); n > 0 {
		rn.Log.Error(MsgStatusWritesFailed, "kind", rn.Config.Kind, "count", n)
		return 1
	}
	return code
}

func (rn *Runner) run(ctx context.Context, plan planner.Plan) int {
	rn.meta = rn.Plugin.Metadata()
	rn.noun = rn.meta.Noun
	rn.sessions = map[plugin.Credentials]plugin.Session{}
	rn.readySpent = 0
	rn.holder = nameHolders(plan)
	rn.done = indexSteps(rn.Done)
	policy := rn.Plugin.CleanupPolicy(rn.Config.Prune)
	rn.Log.Info(MsgFound, "kind", rn.Config.Kind, "count", len(plan.Reconcile))
	metrics.Set(rn.Metrics, metrics.Unreadable, float64(len(plan.Unreadable)), rn.pluginName())
	if len(plan.Unreadable) > 0 {
		rn.Log.Error(MsgIgnoredUnreadable, "kind", rn.Config.Kind, "count", len(plan.Unreadable),
			"crs", strings.Join(plan.Unreadable, ", "))
	}

	rn.logUnreadableScopes(ctx, plan)
	scope := newFailureScope(plan)
	failures := 0
	rn.foreignFinalizersOfDeleted(ctx, plan.Deleted)
	// Finalizers first: a CR must be protected before anything is created for it in OpenStack.
	fin := rn.finalizer()
	var ready []*resource.Resource
	for _, cr := range plan.Reconcile {
		if o, ok := rn.finishedCR(StepFinalizer, cr); ok {
			// An earlier pass of this plan wrote it (or its failure, with the CR's status).
			if o != OutcomeOK {
				failures++
				scope.fail(cr.Credentials, 1)
				continue
			}
			ready = append(ready, cr)
			continue
		}
		if msg := rn.foreignFinalizer(cr); msg != "" {
			// Another profile's operator (or a migrate under way) claims the CR: adding this
			// hook's finalizer beside it would leave the CR to whichever releases last.
			rn.crLog(cr).Error(MsgForeignFinalizer, "finalizer", rn.Config.Profile.Other().Finalizer(), "error", msg)
			rn.patchStatus(ctx, cr, status.Outcome{Message: msg})
			rn.observeReconcile(1, 0, nil)
			failures++
			scope.fail(cr.Credentials, 1)
			rn.noteCR(StepFinalizer, cr, OutcomeFailed)
			continue
		}
		if cr.HasFinalizer(fin) == policy.UsesFinalizer() {
			ready = append(ready, cr)
			continue
		}
		action, msg := finalizer.Add, MsgAddFinalizer
		if cr.HasFinalizer(fin) {
			action, msg = finalizer.Remove, MsgRemoveFinalizer
		}
		if err := rn.writeFinalizer(ctx, cr, action); err != nil {
			rn.crLog(cr).Error(err.Error())
			rn.patchStatus(ctx, cr, status.Outcome{Message: msg})
			rn.observeReconcile(1, 0, nil)
			failures++
			scope.fail(cr.Credentials, 1)
			rn.noteCR(StepFinalizer, cr, OutcomeFailed)
			continue
		}
		rn.noteCR(StepFinalizer, cr, OutcomeOK)
		ready = append(ready, cr)
	}

	byCreds := groupByCredentials(ready)
	terminal := 0
	for _, creds := range sortedKeys(byCreds) {
		f, t := rn.reconcileGroup(ctx, creds, byCreds[creds])
		failures, terminal = failures+f, terminal+t
		// A terminal failure stops no prune (docs/contract.md, Decision 17): its CR is read and
		// desired, so every prune spares what its spec claims, as in every later run, where
		// the planner no longer reconciles it.
		scope.fail(creds, f)
	}

	// A per-CR delete concerns only its own CR, so it does not wait for the others to converge.
	deleter, perCR := rn.Plugin.(plugin.Deleter)
	perCR = perCR && rn.meta.HasDelete && policy.UsesFinalizer()
	var deletedOK []*resource.Resource
	deleteFailures := 0
	if perCR {
		deletedOK, deleteFailures = rn.deleteAll(ctx, deleter, plan.Deleted)
	}

	summary := func(msg string) {
		rn.Log.Error(msg, "kind", rn.Config.Kind, "failed", failures, "unreadable", len(plan.Unreadable), "terminal", terminal)
	}
	const withErrors = MsgFinishedWithErrors
	if scope.any() && !rn.meta.PrunePerGroup {
		// Only a policy that prunes has a prune to skip: a plugin without one is told what failed.
		what := MsgSkippingPrune
		if !policy.RunsPrune() || (rn.meta.HasDelete && !rn.meta.HasPrune) {
			what = withErrors
		}
		summary(what)
		rn.observeSkippedPrunes(policy, plan)
		code := 0
		switch {
		case perCR:
			code = rn.release(ctx, deletedOK)
			rn.observeHeld(heldCount(plan.Deleted, deletedOK, fin))
		case !policy.UsesFinalizer():
			// Such a finalizer guards no cleanup; holding it would only wedge the CR in Terminating.
			code = rn.release(ctx, plan.Deleted)
			rn.observeHeld(0)
		default:
			rn.holdAll(ctx, plan.Deleted, "prune was skipped because another CR failed to reconcile or could not be read")
		}
		if failures > 0 || len(plan.Unreadable) > 0 || deleteFailures > 0 {
			return 1
		}
		// A terminal failure is recorded and final until the spec changes: a failing exit would
		// only make shell-operator repeat the run with the same outcome. A failed release is not.
		return code
	}
	if scope.any() || terminal > 0 {
		// Each group's prune below is skipped only when a failure could hide a claim on what it
		// deletes (failureScope).
		summary(withErrors)
	}
	region := trace.StartRegion(ctx, "prune")
	pruned, failed, skipped := rn.prune(ctx, policy, plan, scope, terminal > 0)
	region.End()
	releasable := plan.Deleted
	held := 0
	switch {
	case perCR:
		// The plugin's delete confirmed each of these gone (or detached) by id; that, not the set
		// prune, is what the finalizer waited for.
		releasable = deletedOK
		held = deleteFailures
	case policy.UsesFinalizer():
		// Release rests on the prune that actually ran for the CR's group, not on the plan listing
		// every deleted CR's group for prune.
		releasable = slices.DeleteFunc(slices.Clone(plan.Deleted), func(cr *resource.Resource) bool {
			if pruned[cr.Credentials] {
				return false
			}
			if !failed[cr.Credentials] && !skipped[cr.Credentials] && cr.HasFinalizer(fin) {
				held++
				rn.crLog(cr).Error(MsgKeepingFinalizer)
				rn.heldEvent(ctx, cr, actionPrune, "its credential group was not pruned")
			}
			switch {
			case failed[cr.Credentials] && cr.HasFinalizer(fin):
				rn.heldEvent(ctx, cr, actionPrune, "the prune of its credential group failed; the next run retries")
			case skipped[cr.Credentials] && cr.HasFinalizer(fin):
				rn.heldEvent(ctx, cr, actionPrune, "the prune of its credential group was skipped because a CR of the group failed")
			}
			return true
		})
	}
	code := rn.release(ctx, releasable)
	rn.observeHeld(heldCount(plan.Deleted, releasable, fin))
	if len(failed) > 0 || held > 0 || failures > 0 || len(plan.Unreadable) > 0 {
		return 1
	}
	return code
}

// crLog is the logger of lines about cr. Call it only for a line that is written: slog's With
// formats its attributes at once, and two With per converged CR that logged nothing were a third
// of the runner's own CPU in a converged pass (BenchmarkConvergedPass).
func (rn *Runner) crLog(cr *resource.Resource) *slog.Logger {
	return rn.Log.With("kind", rn.Config.Kind, "cr", cr.Ref())
}

func groupLog(log *slog.Logger, creds plugin.Credentials) *slog.Logger {
	return log.With("namespace", creds.Namespace, "secret", creds.SecretName, "cloud", creds.CloudName)
}

// reconcileGroup converges one credential group's CRs and returns how many failed, and how many
// of a lifecycle plugin failed terminally (not retried until their spec changes).
func (rn *Runner) reconcileGroup(ctx context.Context, creds plugin.Credentials, crs []*resource.Resource) (failures, terminal int) {
	log := groupLog(rn.Log, creds)
	// The CRs an earlier pass of this plan finished keep its outcome; only the others are
	// reconciled (and the group connected for them).
	left := crs[:0:0]
	for _, cr := range crs {
		o, ok := rn.finishedCR(StepReconcile, cr)
		switch {
		case !ok:
			left = append(left, cr)
		case o == OutcomeFailed:
			failures++
		case o == OutcomeTerminal:
			terminal++
		}
	}
	if crs = left; len(crs) == 0 {
		return failures, terminal
	}
	done := failures
	failAll := func(msg string) (int, int) {
		for _, cr := range crs {
			rn.patchStatus(ctx, cr, status.Outcome{Message: msg})
			rn.observeReconcile(1, 0, nil)
			rn.noteCR(StepReconcile, cr, OutcomeFailed)
		}
		return done + len(crs), terminal
	}
	region := trace.StartRegion(ctx, "connect")
	s, err := rn.Connector.Connect(ctx, creds)
	region.End()
	if err != nil {
		log.Error(MsgConnectFailed, "error", err.Error())
		return failAll("OpenStack connection failed: " + err.Error())
	}
	rn.sessions[creds] = s
	region = trace.StartRegion(ctx, "wait for API")
	err = rn.waitForAPI(ctx, log, s)
	region.End()
	if err != nil {
		log.Error(MsgAPIUnavailable, "error", err.Error())
		return failAll("OpenStack API unavailable: " + err.Error())
	}
	workers := 1
	if c, ok := rn.Plugin.(plugin.Concurrent); ok {
		workers = max(1, min(c.ReconcileConcurrency(), len(crs)))
	}
	// Each worker has a cache of its own (for a wasm plugin: an instance pinned to this group),
	// used by that worker alone, one CR at a time; every cache closes with the group.
	caches := make([]plugin.Cache, 0, workers)
	defer func() {
		for _, cache := range caches {
			if err := cache.Close(ctx); err != nil {
				log.Warn(MsgCacheCloseFailed, "error", err.Error())
			}
		}
	}()
	defer trace.StartRegion(ctx, "reconcile group").End()
	for range workers {
		cache, err := rn.Plugin.NewCache(ctx)
		if err != nil {
			if len(caches) > 0 {
				// Fewer workers than asked for still reconcile everything.
				log.Warn(MsgFewerCaches, "caches", len(caches), "asked", workers, "error", err.Error())
				break
			}
			log.Error(MsgCacheStartFailed, "error", err.Error())
			return failAll("Unable to start reconciling: " + err.Error())
		}
		caches = append(caches, cache)
	}
	if len(caches) == 1 {
		for i, cr := range crs {
			if rn.outOfTime(log, len(crs)-i) {
				return failures + len(crs) - i, terminal
			}
			f, t := rn.reconcileOne(ctx, s, caches[0], cr)
			failures, terminal = failures+f, terminal+t
		}
		return failures, terminal
	}
	nFailures, nTerminal := atomic.Int64{}, atomic.Int64{}
	nFailures.Store(int64(failures))
	nTerminal.Store(int64(terminal))
	next := make(chan *resource.Resource)
	var wg sync.WaitGroup
	for _, cache := range caches {
		wg.Go(func() {
			for cr := range next {
				f, t := rn.reconcileOne(ctx, s, cache, cr)
				nFailures.Add(int64(f))
				nTerminal.Add(int64(t))
			}
		})
	}
	for i, cr := range crs {
		if rn.outOfTime(log, len(crs)-i) {
			nFailures.Add(int64(len(crs) - i))
			break
		}
		next <- cr
	}
	close(next)
	wg.Wait()
	return int(nFailures.Load()), int(nTerminal.Load())
}

// reconcileOne converges one CR and records the outcome in its status. It returns 1, 0 when the
// CR failed in a way a retry may fix and 0, 1 when it failed terminally.
func (rn *Runner) reconcileOne(ctx context.Context, s plugin.Session, cache plugin.Cache, cr *resource.Resource) (failures, terminal int) {
	before := rn.statusFailed.Load()
	failures, terminal = rn.reconcileCR(ctx, s, cache, cr)
	// Only once the reconcile returned and its status is written: a pass that ends inside it
	// (killed, or a panic) has not finished the CR, nor has one whose status write failed.
	if rn.statusFailed.Load() == before {
		rn.noteCR(StepReconcile, cr, reconcileOutcome(failures, terminal))
	}
	return failures, terminal
}

func (rn *Runner) reconcileCR(ctx context.Context, s plugin.Session, cache plugin.Cache, cr *resource.Resource) (failures, terminal int) {
	var res plugin.Result
	defer func() { rn.observeReconcile(failures, terminal, res.Lifecycle) }()
	res, err := rn.Plugin.Reconcile(ctx, s, cache, plugin.ReconcileRequest{
		Object: cr.Object(), Spec: cr.Spec, Status: cr.Status(), Credentials: cr.Credentials,
	})
	if err != nil {
		rn.crLog(cr).Error(MsgReconcileFailed, "name", cr.Display(), "error", status.Text(err.Error()))
		if rn.patchStatus(ctx, cr, status.Outcome{Message: err.Error(), Reason: conditionReason(err)}) {
			rn.sandboxEvent(ctx, cr, actionReconcile, err)
		}
		return 1, 0
	}
	if l := res.Lifecycle; l != nil && l.Reason != plugin.ReasonSuccess {
		switch {
		case l.Terminal():
			terminal = 1
			rn.crLog(cr).Error(MsgReconcileTerminal, "name", cr.Display(), "reason", l.Reason, "error", status.Text(l.Message))
		case l.Reason == plugin.ReasonTransientError:
			failures = 1
			rn.crLog(cr).Error(MsgReconcileFailed, "name", cr.Display(), "error", status.Text(l.Message))
		default:
			rn.crLog(cr).Info(MsgProgressing, "name", cr.Display(), "message", status.Text(l.Message))
		}
		rn.patchLifecycle(ctx, cr, lifecycleOutcome(l, l.Message, res.ExtraStatus), l)
		return failures, terminal
	}
	// Notes are plugin text: cleaned, and bounded like one log message (status.Notes).
	notes := status.Notes(res.Notes)
	if len(notes) > 0 {
		// A converged CR with notes logs this line on every run: its kind and CR go with the line
		// (the same output) instead of through crLog, whose With formats them for one line.
		rn.Log.Warn(MsgNeedsManualAction, "kind", rn.Config.Kind, "cr", cr.Ref(), "name", cr.Display(),
			"notes", strings.Join(notes, "; "))
	}
	msg := status.SyncedMessage(rn.noun, notes)
	o := status.Outcome{Synced: true, Message: msg, Extra: res.ExtraStatus}
	if res.Lifecycle != nil {
		o = lifecycleOutcome(res.Lifecycle, msg, res.ExtraStatus)
	}
	if rn.patchLifecycle(ctx, cr, o, res.Lifecycle) {
		rn.noteEvent(ctx, cr, o, notes)
	}
	return 0, 0
}

// lifecycleOutcome is the status of a lifecycle result: Synced exactly when its reason is
// Success, and the Ready condition's reason is the lifecycle reason otherwise.
func lifecycleOutcome(l *plugin.Lifecycle, msg string, extra map[string]any) status.Outcome {
	sl := &status.Lifecycle{ID: l.ID, Available: l.Available, Reason: l.Reason, Message: l.Message}
	if r, ok := l.Resource.(map[string]any); ok {
		sl.Resource = r
	}
	o := status.Outcome{Synced: l.Reason == plugin.ReasonSuccess, Message: msg, Extra: extra, Lifecycle: sl}
	if !o.Synced {
		o.Reason = l.Reason
		if r := l.ReadyReason; r != "" && len(r) <= maxReasonLen && reasonPattern.MatchString(r) {
			o.Reason = r
		}
	}
	return o
}

// originalOutcome is o as the original operator writes it (the understack profile): its CRDs
// declare no lifecycle field, so a lifecycle outcome is Synced or Failed with one Ready condition
// whose reason is the plugin's own (ReadyReason) or ReconcileError, never a lifecycle reason the
// original never wrote.
func originalOutcome(o status.Outcome, l *plugin.Lifecycle) status.Outcome {
	o.Original, o.Lifecycle = true, nil
	if l != nil && !o.Synced {
		o.Reason = ""
		if r := l.ReadyReason; r != "" && len(r) <= maxReasonLen && reasonPattern.MatchString(r) {
			o.Reason = r
		}
	}
	return o
}

// deleteAll passes each CR being deleted to the plugin's per-CR delete, grouped by credentials,
// and returns those whose delete is done (their finalizer may go) and how many failed in a way a
// retry may fix. A Progressing or terminal delete keeps its finalizer without failing the run:
// the progress run, or a spec change, moves it on.
func (rn *Runner) deleteAll(ctx context.Context, d plugin.Deleter, crs []*resource.Resource) (done []*resource.Resource, failed int) {
	left := crs[:0:0]
	for _, cr := range crs {
		switch o, ok := rn.finishedCR(StepDelete, cr); {
		case !ok:
			left = append(left, cr)
		case o == OutcomeOK:
			done = append(done, cr)
		case o == OutcomeFailed:
			failed++
		}
	}
	byCreds := groupByCredentials(left)
	for _, creds := range sortedKeys(byCreds) {
		log := groupLog(rn.Log, creds)
		group := byCreds[creds]
		s, err := rn.session(ctx, log, creds)
		if err != nil {
			log.Error(MsgDeleteUnreachable, "count", len(group), "error", err.Error())
			failed += len(group)
			continue
		}
		counted := rn.countDeletions(s)
		for _, cr := range group {
			clog := rn.crLog(cr)
			own := &crDeletes{Session: counted.session()}
			res, err := d.Delete(ctx, keepSources(own, own.Session), nil, plugin.ReconcileRequest{Object: cr.Object(), Spec: cr.Spec, Status: cr.Status(),
				Credentials: cr.Credentials})
			rn.observeDelete(ctx, cr, res.Lifecycle, err)
			if err != nil {
				failed++
				clog.Error(MsgDeleteFailed, "name", cr.Display(), "error", status.Text(err.Error()))
				rn.patchStatus(ctx, cr, status.Outcome{Message: "Delete failed: " + err.Error(), Reason: conditionReason(err)})
				rn.noteCR(StepDelete, cr, OutcomeFailed)
				continue
			}
			l := res.Lifecycle
			switch {
			case l == nil:
				failed++
				clog.Error(MsgDeleteFailed, "name", cr.Display(), "error", "the plugin reported no outcome")
				rn.noteCR(StepDelete, cr, OutcomeFailed)
				continue
			case l.Reason == plugin.ReasonSuccess && own.count() == 0:
				// Nothing was bound and nothing found: say so, rather than claim a delete.
				clog.Info(MsgNothingToDelete, "name", cr.Display())
				done = append(done, cr)
				rn.noteCR(StepDelete, cr, OutcomeOK)
				continue
			case l.Reason == plugin.ReasonSuccess:
				clog.Info(MsgDeleted, "name", cr.Display(), "openstack_deletes", own.count())
				done = append(done, cr)
				rn.noteCR(StepDelete, cr, OutcomeOK)
				continue
			case l.Reason == plugin.ReasonProgressing:
				clog.Info(MsgBeingDeleted, "name", cr.Display(), "message", status.Text(l.Message))
			case l.Terminal():
				clog.Error(MsgDeleteTerminal, "name", cr.Display(), "reason", l.Reason, "error", status.Text(l.Message))
			default:
				failed++
				clog.Error(MsgDeleteFailed, "name", cr.Display(), "error", status.Text(l.Message))
			}
			rn.patchLifecycle(ctx, cr, lifecycleOutcome(l, l.Message, res.ExtraStatus), l)
			if l.Reason == plugin.ReasonProgressing || l.Terminal() {
				rn.noteCR(StepDelete, cr, OutcomeHeld)
			} else {
				rn.noteCR(StepDelete, cr, OutcomeFailed)
			}
		}
	}
	return done, failed
}

// reasonPattern and maxReasonLen are what the API server accepts as a condition reason
// (metav1.Condition).
var reasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

const maxReasonLen = 1024

// conditionReason is the reason the plugin named, when the API server would accept it.
func conditionReason(err error) string {
	if r := plugin.Reason(err); len(r) <= maxReasonLen && reasonPattern.MatchString(r) {
		return r
	}
	return ""
}

// waitForAPI runs the plugin's readiness probe up to READY_RETRIES times. A permanent error
// (configuration, refused credentials) is not retried: waiting cannot fix it.
func (rn *Runner) waitForAPI(ctx context.Context, log *slog.Logger, s plugin.Session) error {
	n := rn.Config.ReadyRetries
	budget := rn.Config.ReadyBudget
	var err error
	for i := 1; i <= n; i++ {
		// One run's readiness waits share one budget: without it, N groups of an unreachable
		// cloud hold the hook (and its shell-operator queue) N x READY_RETRIES x (probe + delay).
		if budget > 0 && rn.readySpent >= budget {
			if err == nil {
				err = errors.New("no probe was left in the budget")
			}
			return fmt.Errorf("OpenStack API did not become ready within this run's readiness budget of %s "+
				"(%s_READY_BUDGET), after %d attempt(s) for this group: %w", budget, rn.Config.Prefix, i-1, err)
		}
		start := time.Now()
		err = rn.Plugin.WaitForAPI(ctx, s)
		rn.readySpent += time.Since(start)
		if err == nil || plugin.IsPermanent(err) {
			return err
		}
		if i == n {
			break
		}
		log.Info(MsgWaitingForAPI, "attempt", i, "attempts", n, "error", err.Error())
		delay := rn.Config.ReadyDelay
		if budget > 0 {
			delay = max(0, min(delay, budget-rn.readySpent))
		}
		if serr := rn.sleep(ctx, delay); serr != nil {
			return serr
		}
		rn.readySpent += delay
	}
	if err != nil {
		return fmt.Errorf("OpenStack API did not become ready after %d attempt(s): %w", n, err)
	}
	return nil
}

func (rn *Runner) sleep(ctx context.Context, d time.Duration) error {
	if rn.Sleep != nil {
		return rn.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prune sweeps each prune credential group and returns the groups whose prune succeeded, those
// whose prune failed and those a failure in their scope skipped.
func (rn *Runner) prune(ctx context.Context, policy plugin.CleanupPolicy, plan planner.Plan, scope *failureScope, terminal bool) (pruned, failed, skipped map[plugin.Credentials]bool) {
	pruned, failed, skipped = map[plugin.Credentials]bool{}, map[plugin.Credentials]bool{}, map[plugin.Credentials]bool{}
	finished := func() {
		if !scope.any() && !terminal {
			rn.Log.Info(MsgFinished, "kind", rn.Config.Kind)
		}
	}
	if plan.Progress || (rn.meta.HasDelete && !rn.meta.HasPrune) {
		// A progress run only moves Progressing CRs on; a plugin that deletes per CR and has no
		// prune step has nothing to sweep.
		finished()
		return pruned, failed, skipped
	}
	if !policy.RunsPrune() {
		finished()
		return pruned, failed, skipped
	}
	desired := groupByCredentials(plan.Desired)
	deleted := groupByCredentials(plan.Deleted)
	for _, creds := range plan.PruneCredentials {
		log := groupLog(rn.Log, creds)
		if o, ok := rn.finished(StepPrune, GroupKey(creds)); ok {
			// An earlier pass of this plan pruned the group (its Events recorded then).
			if o == OutcomeOK {
				pruned[creds] = true
			} else {
				failed[creds] = true
			}
			continue
		}
		if rn.skipPrune(ctx, log, scope, creds) {
			skipped[creds] = true
			rn.observePrune("skipped")
			continue
		}
		authoritative := len(desired[creds]) == 0 && len(deleted[creds]) > 0
		if len(desired[creds]) == 0 && !authoritative {
			log.Info(MsgPruneNothingDesired)
			rn.observePrune("skipped")
			continue
		}
		s, err := rn.session(ctx, log, creds)
		if err != nil {
			failed[creds] = true
			rn.observePrune("failed")
			log.Error(MsgPruneUnreachable, "error", err.Error())
			continue
		}
		// Without PrunePerGroup, ownership markers record no credential and what a token can list
		// depends on its scope, so every group's prune protects every group's desired names.
		counted := rn.countDeletions(s)
		err = rn.Plugin.Prune(ctx, counted.session(), plugin.PruneRequest{Credentials: creds, DesiredSpecs: rn.pruneSpecs(plan, desired, creds),
			AuthoritativeEmpty: authoritative})
		if err != nil {
			failed[creds] = true
			rn.observePrune("failed")
			log.Error(MsgPruneFailed, "error", err.Error())
			rn.note(StepPrune, GroupKey(creds), OutcomeFailed)
			continue
		}
		rn.observePrune("ok")
		pruned[creds] = true
		rn.note(StepPrune, GroupKey(creds), OutcomeOK)
		if policy.UsesFinalizer() {
			rn.pruneEvents(ctx, deleted[creds], counted)
		}
	}
	if len(failed) == 0 {
		finished()
	}
	return pruned, failed, skipped
}

// session reuses the group's reconcile session, else connects and waits for the API.
func (rn *Runner) session(ctx context.Context, log *slog.Logger, creds plugin.Credentials) (plugin.Session, error) {
	if s, ok := rn.sessions[creds]; ok {
		return s, nil
	}
	s, err := rn.Connector.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	rn.sessions[creds] = s
	if err := rn.waitForAPI(ctx, log, s); err != nil {
		return nil, err
	}
	return s, nil
}

// release takes the finalizer off deleted CRs; 1 when any release failed.
func (rn *Runner) release(ctx context.Context, crs []*resource.Resource) int {
	code := 0
	for _, cr := range crs {
		if !cr.HasFinalizer(rn.finalizer()) {
			continue
		}
		if h := rn.holder[cr.Ref()]; h != "" && cr.UID != "" && h != cr.UID {
			// Releases are addressed by name: patching now would strip the finalizer from the newer
			// object, which may hold it at the same index. The old object is gone, nothing to release.
			rn.crLog(cr).Info(MsgNotReleasingRenamed, "uid", cr.UID, "holder_uid", h)
			continue
		}
		if o, ok := rn.finishedCR(StepRelease, cr); ok {
			if o != OutcomeOK {
				code = 1
			}
			continue
		}
		if err := rn.writeFinalizer(ctx, cr, finalizer.Release); err != nil {
			rn.crLog(cr).Error(err.Error())
			code = 1
			rn.noteCR(StepRelease, cr, OutcomeFailed)
			continue
		}
		rn.noteCR(StepRelease, cr, OutcomeOK)
	}
	return code
}

// errNoNamespace: a cluster-scoped object seen by a hook without POD_NAMESPACE cannot be addressed.
var errNoNamespace = errors.New("no namespace to address it in")

// target addresses cr in its namespace, else POD_NAMESPACE.
func (rn *Runner) target(cr *resource.Resource) (kubeapi.Target, error) {
	ns := cmp.Or(cr.Namespace, rn.Config.PodNamespace)
	if ns == "" {
		return kubeapi.Target{}, errNoNamespace
	}
	if err := rn.Config.CheckTarget(); err != nil {
		return kubeapi.Target{}, err
	}
	return kubeapi.Target{Group: rn.Config.Group(), Version: rn.Config.Version(), Plural: rn.Config.Plural(),
		Namespace: ns, Name: cr.Name}, nil
}

func (rn *Runner) writeFinalizer(ctx context.Context, cr *resource.Resource, action finalizer.Action) error {
	if cr.Name == "" {
		return fmt.Errorf("Unable to patch finalizers on %s; Kubernetes metadata.name is missing", rn.Config.Kind)
	}
	t, err := rn.target(cr)
	if errors.Is(err, errNoNamespace) {
		return fmt.Errorf("unable to %s %s %s; %w", action, rn.Config.Kind, cr.Name, err)
	}
	if err != nil {
		return err
	}
	return finalizer.Apply(ctx, rn.Kube, rn.crLog(cr), t, cr, rn.Config.Kind, action, rn.finalizer())
}

// finalizer is the finalizer of the hook's profile.
func (rn *Runner) finalizer() string { return rn.Config.Profile.Finalizer() }

// foreignFinalizer says why a live CR carrying the other profile's finalizer is not this hook's
// to reconcile: its status message, "" when it carries none.
func (rn *Runner) foreignFinalizer(cr *resource.Resource) string {
	own, other := rn.Config.Profile, rn.Config.Profile.Other()
	if !cr.HasFinalizer(other.Finalizer()) {
		return ""
	}
	if cr.HasFinalizer(own.Finalizer()) {
		return fmt.Sprintf("Carries both finalizers %s and %s: two operators or profiles claim this CR; "+
			"finish openstack-sync migrate, or remove the finalizer of the one that no longer runs", own.Finalizer(), other.Finalizer())
	}
	return fmt.Sprintf("Carries the finalizer %s of the %s profile, not this hook's %s; set %s_%s=%s (chart: compatibility.profile) "+
		"if the operator of those identifiers is replaced, or move the CR with openstack-sync migrate",
		other.Finalizer(), other, own.Finalizer(), rn.Config.Prefix, profile.Variable, other)
}

// foreignFinalizersOfDeleted says which deleted CRs keep another profile's finalizer: this hook
// never releases it, so such a CR stays until that profile's operator (or a person) does.
func (rn *Runner) foreignFinalizersOfDeleted(ctx context.Context, deleted []*resource.Resource) {
	other := rn.Config.Profile.Other().Finalizer()
	for _, cr := range deleted {
		if cr.HasFinalizer(other) {
			rn.crLog(cr).Warn(MsgForeignFinalizerKept, "finalizer", other)
			rn.event(ctx, cr, kubeapi.EventWarning, EventForeignFinalizer, actionDelete,
				"The finalizer "+other+" belongs to the operator of another profile; this hook does not release it")
		}
	}
}

// patchStatus records o on cr unless status writes are off or the CR already says the same, and
// reports whether it wrote a change (the Events of a change go with it). Failures are logged and
// never change the exit code.
func (rn *Runner) patchStatus(ctx context.Context, cr *resource.Resource, o status.Outcome) bool {
	if cr.Name == "" {
		rn.crLog(cr).Error(MsgStatusNoName)
		rn.statusFailed.Add(1)
		return false
	}
	if !rn.Config.StatusEnabled {
		return false
	}
	if rn.Config.Profile.OriginalStatus() {
		o = originalOutcome(o, nil)
	} else if rn.meta.Lifecycle && o.Lifecycle == nil && !o.Synced {
		// A failure the plugin never saw (connection, finalizer, a trap) still leaves the CR's
		// lifecycle conditions consistent: not settled, retried.
		o.Lifecycle = &status.Lifecycle{Available: "Unknown", Reason: status.ReasonTransientError, Message: o.Message}
	}
	current := cr.Status()
	if status.IsCurrent(o, cr.Generation, current) {
		if rn.Log.Enabled(ctx, slog.LevelDebug) {
			rn.crLog(cr).Debug(MsgStatusCurrent)
		}
		return false
	}
	t, err := rn.target(cr)
	if errors.Is(err, errNoNamespace) {
		rn.crLog(cr).Error(MsgStatusPatchFailed, "error", err.Error())
		rn.statusFailed.Add(1)
		return false
	}
	if err != nil {
		rn.crLog(cr).Error(err.Error())
		rn.statusFailed.Add(1)
		return false
	}
	now := time.Now
	if rn.Now != nil {
		now = rn.Now
	}
	body, err := json.Marshal(status.Body(o, cr.Generation, current, now()))
	if err != nil {
		rn.crLog(cr).Error(MsgStatusPatchFailed, "error", fmt.Sprintf("%T: %v", err, err))
		rn.statusFailed.Add(1)
		return false
	}
	err = rn.Kube.MergePatchStatus(ctx, t, body)
	if err == nil {
		rn.statusEvents(ctx, cr, o)
		return true
	}
	if ae, ok := kubeapi.AsAPIError(err); ok {
		if ae.ObjectGone(cr.Name) {
			rn.crLog(cr).Info(MsgStatusCRGone, "error", ae.Error())
			return false
		}
		rn.crLog(cr).Error(MsgStatusPatchFailed, "error", ae.Error())
		rn.statusFailed.Add(1)
		return false
	}
	rn.crLog(cr).Error(MsgStatusPatchFailed, "error", fmt.Sprintf("%T: %v", err, err))
	rn.statusFailed.Add(1)
	return false
}

// patchLifecycle records the outcome of a result that may carry the lifecycle status l.
func (rn *Runner) patchLifecycle(ctx context.Context, cr *resource.Resource, o status.Outcome, l *plugin.Lifecycle) bool {
	if rn.Config.Profile.OriginalStatus() {
		o = originalOutcome(o, l)
	}
	return rn.patchStatus(ctx, cr, o)
}

// nameHolders maps each namespace/name of the plan to the UID of the newest object seen under it.
// A Deleted event carries the object's last stored state, finalizer included, and the name may
// have been taken again within the same batch. Deleted CRs are listed oldest first (events in
// order, then the snapshot), and a live CR outranks any deleted one: a name cannot belong to a live
// object while an older object of that name still exists.
func nameHolders(plan planner.Plan) map[string]string {
	h := map[string]string{}
	for _, list := range [][]*resource.Resource{plan.Deleted, plan.Desired, plan.Reconcile} {
		for _, cr := range list {
			if cr.UID != "" {
				h[cr.Ref()] = cr.UID
			}
		}
	}
	return h
}

func groupByCredentials(crs []*resource.Resource) map[plugin.Credentials][]*resource.Resource {
	out := map[plugin.Credentials][]*resource.Resource{}
	for _, cr := range crs {
		out[cr.Credentials] = append(out[cr.Credentials], cr)
	}
	return out
}

func sortedKeys(m map[plugin.Credentials][]*resource.Resource) []plugin.Credentials {
	keys := make([]plugin.Credentials, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, plugin.Credentials.Compare)
	return keys
}
