package statemachine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

// The knobs: OPENSTACK_SYNC_STATEMACHINE_RUNS sequences (default 500) from
// OPENSTACK_SYNC_STATEMACHINE_SEED (default 1); a failure prints the seed of its sequence, which
// OPENSTACK_SYNC_STATEMACHINE_RUNS=1 OPENSTACK_SYNC_STATEMACHINE_SEED=<seed> replays with its trace.
const (
	envRuns      = "OPENSTACK_SYNC_STATEMACHINE_RUNS"
	envSeed      = "OPENSTACK_SYNC_STATEMACHINE_SEED"
	defaultRuns  = 500
	passesPerSeq = 8
)

var (
	namespaces = []string{"team-a", "team-b", "team-c"}
	secrets    = []string{"s1", "s2"}
	specNames  = []string{"alpha", "bravo", "charlie", "delta", "echo"}
	projects   = []string{"p1", "p2", "p3"}
)

// released is a finalizer the runner took off a CR being deleted.
type released struct {
	group plugin.Credentials
	name  string
}

// world is one sequence: the Kubernetes store, the cloud, the faults of the current pass and
// what the doubles observed during it.
type world struct {
	rng     *rand.Rand
	srv     *fakekube.Server
	res     fakekube.Resource
	project map[plugin.Credentials]string
	cloud   map[string][]*osResource
	nextID  int
	trace   []string

	// per pass
	down map[plugin.Credentials]bool
	// failures fail the pass (exit 1 expected); blocked are the groups whose prune they stop.
	failures   []string
	blocked    map[plugin.Credentials]bool
	unreadable []resource.Scope
	// reconciling are the groups the runner connects to before any prune: those with a CR to
	// reconcile whose finalizer write did not fail.
	reconciling map[plugin.Credentials]bool
	released    []released
	violations  []string
	plan        planner.Plan
	settled     bool
	// finalizerFailed are the CRs (namespace/name) whose finalizer write failed.
	finalizerFailed map[string]bool
	policy          plugin.CleanupPolicy
}

func (w *world) logf(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf(format, args...))
}

// stats counts what the sequences exercised, so a run that exercises nothing shows.
type stats struct {
	passes, failedPasses, prunes, deletes, creates, releases, faults, kills int
}

var counts stats

// pick returns one of kinds with probability p (each equally likely), else "".
func (w *world) pick(what string, p float64, kinds ...string) string {
	if w.rng.Float64() >= p {
		return ""
	}
	k := kinds[w.rng.IntN(len(kinds))]
	counts.faults++
	w.logf("  fault: %s %s", what, k)
	return k
}

func (w *world) failure(what string) {
	w.failures = append(w.failures, what)
}

// groupFailure is a failure in group c: it stops c's prune (and, for a plugin that prunes across
// groups, every prune) when it happens before the prunes, i.e. to a group being reconciled.
func (w *world) groupFailure(c plugin.Credentials, what string) {
	w.failure(what + " in " + groupName(c))
	if w.reconciling[c] {
		w.blocked[c] = true
	}
}

func (w *world) violate(format string, args ...any) {
	v := fmt.Sprintf(format, args...)
	w.violations = append(w.violations, v)
	w.logf("  VIOLATION: %s", v)
}

func (w *world) projectOf(c plugin.Credentials) string {
	p, ok := w.project[c]
	if !ok {
		p = projects[w.rng.IntN(len(projects))]
		w.project[c] = p
	}
	return p
}

func (w *world) create(project, name, owner string) {
	w.nextID++
	counts.creates++
	w.cloud[project] = append(w.cloud[project], &osResource{id: w.nextID, name: name, owner: owner})
	w.logf("  openstack: created %s/%s #%d owned by %s", project, name, w.nextID, owner)
}

// delete removes r, first checking invariant 1: nothing a live CR claims is deleted. A live CR
// claims the resource of its spec.name in its group's project, when the resource's owner is one
// its plugin would reconcile (any owner across groups; its own group per group).
func (w *world) delete(project string, r *osResource) {
	for _, obj := range w.live() {
		g := groupOf(obj)
		if w.projectOf(g) == project && specName(obj) == r.name && (r.owner == "openstack-sync" || r.owner == groupName(g)) {
			w.violate("deleted %s/%s #%d (owner %s) which live CR %s claims", project, r.name, r.id, r.owner, ref(obj))
		}
	}
	counts.deletes++
	w.cloud[project] = slices.DeleteFunc(w.cloud[project], func(x *osResource) bool { return x == r })
	w.logf("  openstack: deleted %s/%s #%d", project, r.name, r.id)
}

// forget removes an object the way another actor would: every finalizer stripped.
func (w *world) forget(ns, name string) {
	_, _ = w.srv.Patch(w.res, ns, name, "", fakekube.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	w.logf("  kube: %s/%s vanished", ns, name)
}

func ref(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	n, _ := md["name"].(string)
	return ns + "/" + n
}

func (w *world) objects() []map[string]any {
	objs, err := w.srv.List(w.res, "", "")
	if err != nil {
		panic(err)
	}
	return objs
}

func (w *world) live() []map[string]any {
	return slices.DeleteFunc(w.objects(), func(o map[string]any) bool {
		return o["metadata"].(map[string]any)["deletionTimestamp"] != nil
	})
}

// checkPruneAllowed is invariant 3: no prune with a failed or unreadable CR in its scope.
func (w *world) checkPruneAllowed(c plugin.Credentials, perGroup bool) {
	if !perGroup {
		if len(w.blocked) > 0 || len(w.unreadable) > 0 {
			w.violate("prune of %s ran after a failure or with an unreadable CR (blocked %v, %d unreadable)",
				groupName(c), slices.Sorted(mapsKeys(w.blocked)), len(w.unreadable))
		}
		return
	}
	if w.blocked[c] {
		w.violate("prune of %s ran although a CR of its group failed", groupName(c))
	}
	for _, s := range w.unreadable {
		if covers(s, c) {
			w.violate("prune of %s ran with an unreadable CR in its scope (%s)", groupName(c), s)
		}
	}
}

// covers is the oracle's own reading of docs/contract.md §7.1 (not resource.Scope.Covers, which
// it checks): an unreadable CR may belong to the group its credentials name, else to any group
// of its namespace, else to any group.
func covers(s resource.Scope, c plugin.Credentials) bool {
	switch {
	case s.Group != nil:
		return s.Group.Namespace == c.Namespace && s.Group.SecretName == c.SecretName && s.Group.CloudName == c.CloudName
	case s.Namespace != "":
		return s.Namespace == c.Namespace
	}
	return true
}

// checkPruneInput: a per-group prune receives only its own group's live specs.
func (w *world) checkPruneInput(req plugin.PruneRequest) {
	mine := map[string]int{}
	for _, obj := range w.live() {
		if groupOf(obj) == req.Credentials {
			mine[specName(obj)]++
		}
	}
	for _, spec := range req.DesiredSpecs {
		n := rawSpecName(spec)
		if mine[n] == 0 {
			w.violate("per-group prune of %s received the spec %q of no live CR of its group", groupName(req.Credentials), n)
		}
		mine[n]--
	}
}

func mapsKeys(m map[plugin.Credentials]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(groupName(k)) {
				return
			}
		}
	}
}

// ---- the sequence ----

type sequence struct {
	*world
	perGroup bool
	cursor   int
	names    int
}

func newSequence(seed uint64) (*sequence, error) {
	res := fakekube.Resource{Group: "example.openstack-sync.io", Version: "v1alpha1", Plural: "widgets", Kind: "Widget",
		StatusSubresource: true}
	srv, err := fakekube.Start(res)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &sequence{world: &world{rng: rng, srv: srv, res: res, project: map[plugin.Credentials]string{},
		cloud: map[string][]*osResource{}}}
	s.perGroup = rng.IntN(2) == 0
	switch n := rng.IntN(10); {
	case n < 7:
		s.world.policy = plugin.CleanupFinalizedPrune
	case n < 9:
		s.world.policy = plugin.CleanupBestEffortPrune
	default:
		s.world.policy = plugin.CleanupNone
	}
	// Groups share projects at random, so two tenants can meet in one project.
	for _, ns := range namespaces {
		for _, sec := range secrets {
			s.projectOf(plugin.Credentials{Namespace: ns, SecretName: sec, CloudName: "c1"})
		}
	}
	s.logf("seed %d: perGroup=%t policy=%s projects=%v", seed, s.perGroup, s.policy, s.project)
	return s, nil
}

func (s *sequence) close() { s.srv.Close() }

// mutate makes one random change to the CRs.
func (s *sequence) mutate() {
	objs := s.objects()
	liveObjs := s.live()
	switch n := s.rng.IntN(10); {
	case n < 4 || len(objs) == 0:
		s.names++
		name := "w" + strconv.Itoa(s.names)
		if s.rng.IntN(4) == 0 && s.names > 1 {
			name = "w" + strconv.Itoa(1+s.rng.IntN(s.names-1)) // a recreate, when the name is free
		}
		ns := namespaces[s.rng.IntN(len(namespaces))]
		obj := map[string]any{"apiVersion": s.res.APIVersion(), "kind": "Widget",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"name": specNames[s.rng.IntN(len(specNames))],
				"cloudCredentialsRef": map[string]any{"secretName": secrets[s.rng.IntN(len(secrets))], "cloudName": "c1"}}}
		if _, err := s.srv.Create(s.res, ns, obj); err == nil {
			s.logf("kube: create %s/%s %s", ns, name, specName(obj))
		}
	case n < 6 && len(liveObjs) > 0:
		o := liveObjs[s.rng.IntN(len(liveObjs))]
		name := specNames[s.rng.IntN(len(specNames))]
		s.patchSpec(o, `{"spec":{"name":`+strconv.Quote(name)+`}}`)
		s.logf("kube: rename %s to %s", ref(o), name)
	case n < 7 && len(liveObjs) > 0:
		o := liveObjs[s.rng.IntN(len(liveObjs))]
		sec := secrets[s.rng.IntN(len(secrets))]
		s.patchSpec(o, `{"spec":{"cloudCredentialsRef":{"secretName":`+strconv.Quote(sec)+`}}}`)
		s.logf("kube: move %s to secret %s", ref(o), sec)
	default:
		o := objs[s.rng.IntN(len(objs))]
		md := o["metadata"].(map[string]any)
		_, gone, _ := s.srv.Delete(s.res, md["namespace"].(string), md["name"].(string), fakekube.DeleteOptions{})
		s.logf("kube: delete %s (gone=%t)", ref(o), gone)
	}
}

func (s *sequence) patchSpec(o map[string]any, patch string) {
	md := o["metadata"].(map[string]any)
	_, _ = s.srv.Patch(s.res, md["namespace"].(string), md["name"].(string), "", fakekube.MergePatchType, []byte(patch))
}

// unreadableObject is a CR the hook cannot read, with what is known of its group: its
// credentials, its namespace only, or nothing.
func (s *sequence) unreadableObject() (any, resource.Scope) {
	ns := namespaces[s.rng.IntN(len(namespaces))]
	sec := secrets[s.rng.IntN(len(secrets))]
	md := map[string]any{"name": "broken", "namespace": ns, "uid": "uid-broken"}
	spec := map[string]any{"name": "alpha", "cloudCredentialsRef": map[string]any{"secretName": sec, "cloudName": "c1"}}
	obj := map[string]any{"apiVersion": s.res.APIVersion(), "kind": "Widget", "metadata": md, "spec": spec, "status": "broken"}
	switch s.rng.IntN(3) {
	case 0:
		g := plugin.Credentials{Namespace: ns, SecretName: sec, CloudName: "c1"}
		return obj, resource.Scope{Namespace: ns, Group: &g}
	case 1:
		spec["cloudCredentialsRef"] = sec
		return obj, resource.Scope{Namespace: ns}
	default:
		md["namespace"] = 7
		return obj, resource.Scope{}
	}
}

func items(objs []map[string]any, extra []any) []any {
	out := make([]any, 0, len(objs)+len(extra))
	for _, o := range objs {
		out = append(out, map[string]any{"object": o})
	}
	for _, o := range extra {
		out = append(out, map[string]any{"object": o})
	}
	return out
}

// contexts builds the pass's binding contexts: a Synchronization, a Schedule with or without a
// snapshot, or the events since the last pass, collapsed, duplicated or reordered.
func (s *sequence) contexts() []any {
	events, end := s.srv.Events(s.cursor)
	s.cursor = end
	var extra []any
	if s.rng.Float64() < 0.1 {
		obj, scope := s.unreadableObject()
		extra = append(extra, obj)
		s.unreadable = append(s.unreadable, scope)
		s.failure("unreadable CR")
		s.logf("  unreadable CR of scope %s", scope)
	}
	snapshot := items(s.objects(), extra)
	switch n := s.rng.IntN(20); {
	case n < 5:
		s.logf("pass: Synchronization")
		return []any{map[string]any{"binding": "widgets", "type": "Synchronization", "objects": snapshot}}
	case n < 8:
		s.logf("pass: Schedule")
		return []any{map[string]any{"binding": "sync", "type": "Schedule", "snapshots": map[string]any{"widgets": snapshot}}}
	case n < 9:
		s.logf("pass: Schedule without a snapshot")
		return []any{map[string]any{"binding": "sync", "type": "Schedule"}}
	}
	var ctxs []map[string]any
	for _, e := range events {
		ctxs = append(ctxs, map[string]any{"binding": "widgets", "type": "Event", "watchEvent": string(e.Type), "object": e.Object})
	}
	for _, o := range extra {
		ctxs = append(ctxs, map[string]any{"binding": "widgets", "type": "Event", "watchEvent": "Modified", "object": o})
	}
	var how []string
	if s.rng.IntN(4) == 0 {
		ctxs, how = collapse(ctxs), append(how, "collapsed")
	}
	if s.rng.IntN(4) == 0 {
		ctxs, how = s.duplicate(ctxs), append(how, "duplicated")
	}
	if s.rng.IntN(4) == 0 {
		ctxs, how = s.reorder(ctxs), append(how, "reordered")
	}
	withSnapshot := s.rng.IntN(20) != 0
	if !withSnapshot {
		how = append(how, "without a snapshot")
	}
	out := make([]any, 0, len(ctxs))
	for i, c := range ctxs {
		// shell-operator attaches the snapshot to every context; the runner reads the last one's,
		// so the others carry it only sometimes (JSON of every snapshot in every context is the
		// bulk of this test's time).
		if withSnapshot && (i == len(ctxs)-1 || s.rng.IntN(8) == 0) {
			c["snapshots"] = map[string]any{"widgets": snapshot}
		}
		out = append(out, c)
	}
	s.logf("pass: %d event(s) %s", len(out), strings.Join(how, ", "))
	if len(out) == 0 {
		// Nothing happened: shell-operator would not run the hook.
		return nil
	}
	return out
}

func objectKey(c map[string]any) string { return ref(c["object"].(map[string]any)) }

// collapse keeps each object's last event, as a queue compacted by shell-operator would.
func collapse(ctxs []map[string]any) []map[string]any {
	var out []map[string]any
	for i, c := range ctxs {
		later := slices.ContainsFunc(ctxs[i+1:], func(d map[string]any) bool { return objectKey(d) == objectKey(c) })
		if !later {
			out = append(out, c)
		}
	}
	return out
}

func (s *sequence) duplicate(ctxs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range ctxs {
		out = append(out, c)
		if s.rng.IntN(3) == 0 {
			dup := map[string]any{}
			for k, v := range c {
				dup[k] = v
			}
			out = append(out, dup)
		}
	}
	return out
}

// reorder interleaves different objects' events at random; one object's events keep their order,
// as a watch delivers them.
func (s *sequence) reorder(ctxs []map[string]any) []map[string]any {
	queues := map[string][]map[string]any{}
	var keys []string
	for _, c := range ctxs {
		k := objectKey(c)
		if _, ok := queues[k]; !ok {
			keys = append(keys, k)
		}
		queues[k] = append(queues[k], c)
	}
	var out []map[string]any
	for len(keys) > 0 {
		i := s.rng.IntN(len(keys))
		out = append(out, queues[keys[i]][0])
		if queues[keys[i]] = queues[keys[i]][1:]; len(queues[keys[i]]) == 0 {
			keys = slices.Delete(keys, i, i+1)
		}
	}
	return out
}

// pass runs the hook once and checks the invariants.
func (s *sequence) pass(ctx context.Context) {
	s.down = map[plugin.Credentials]bool{}
	s.failures, s.blocked, s.unreadable, s.released = nil, map[plugin.Credentials]bool{}, nil, nil
	s.reconciling = map[plugin.Credentials]bool{}
	s.plan, s.settled, s.finalizerFailed = planner.Plan{}, false, map[string]bool{}
	for _, ns := range namespaces {
		for _, sec := range secrets {
			if g := (plugin.Credentials{Namespace: ns, SecretName: sec, CloudName: "c1"}); s.rng.Float64() < 0.03 {
				s.down[g] = true
				s.logf("  fault: cloud of %s down", groupName(g))
			}
		}
	}
	raw := s.contexts()
	if raw == nil {
		return
	}
	data, err := json.Marshal(raw)
	if err != nil {
		panic(err)
	}
	code := 1
	doc, err := bindingctx.Parse(data)
	if err == nil {
		var plan planner.Plan
		plan, err = planner.Build(doc.Contexts, planner.Options{Binding: "widgets", Kind: "Widget", Log: slog.New(slog.DiscardHandler)})
		if err == nil {
			code = s.run(ctx, plan)
		}
	}
	if err != nil {
		s.failure("binding context: " + err.Error())
		s.logf("  %v", err)
	}
	counts.passes++
	counts.releases += len(s.released)
	if code != 0 {
		counts.failedPasses++
	}
	s.check(code)
}

func (s *sequence) run(ctx context.Context, plan planner.Plan) int {
	p := &fakePlugin{w: s.world, perGroup: s.perGroup, policy: s.policy}
	// Until the runner reaches OpenStack (settle), every group with a CR to reconcile counts as
	// being reconciled: a failed finalizer write stops its group's prune.
	s.plan = plan
	for _, cr := range plan.Reconcile {
		s.reconciling[cr.Credentials] = true
	}
	// One pass in ten is killed from outside at one of its plugin calls, as the hook's supervisor
	// kills the child whose guest overran a deadline, and runs again with what the killed pass
	// finished taken as done (host/internal/runner, resume.go): the call it was killed in times out.
	if calls := len(plan.Reconcile) + len(plan.PruneCredentials); calls > 0 && s.rng.Float64() < 0.1 {
		p.kill = &killPoint{at: 1 + s.rng.IntN(calls)}
		counts.kills++
		s.logf("  fault: the hook process is killed at plugin call %d", p.kill.at)
	}
	journal := &stepLog{}
	code, killedHere := s.runOnce(ctx, plan, p, journal, nil)
	if !killedHere {
		return code
	}
	p.kill.again = true
	finished := map[string]bool{}
	for _, st := range journal.steps {
		if st.Kind == runner.StepReconcile {
			finished[st.Key] = true
		}
	}
	p.reconciled = nil
	s.logf("  the pass runs again with %d finished step(s)", len(journal.steps))
	code, _ = s.runOnce(ctx, plan, p, nil, journal.steps)
	// Invariant 7: the pass run again after a kill does not reconcile a CR the killed pass finished.
	for _, uid := range p.reconciled {
		if finished[uid] {
			s.violate("the pass run again after a kill reconciled %s, which the killed pass had finished", uid)
		}
	}
	return code
}

// runOnce runs the runner over plan and reports whether the pass was killed (the plugin's kill
// point panics, as a SIGKILL ends the process: nothing after it runs).
func (s *sequence) runOnce(ctx context.Context, plan planner.Plan, p *fakePlugin, journal runner.Journal, done []runner.Step) (code int, killed bool) {
	k := &kube{w: s.world, pending: map[string]pendingWrite{}}
	rn := &runner.Runner{Plugin: p, Connector: connector{w: s.world}, Kube: k,
		Config: hookenv.Config{Prefix: "WIDGET", BindingName: "widgets", Enabled: true, APIVersion: s.res.APIVersion(),
			Kind: "Widget", Resource: "widgets." + s.res.Group, StatusEnabled: true, Prune: true, ReadyRetries: 2},
		Log:     slog.New(slog.DiscardHandler),
		Sleep:   func(context.Context, time.Duration) error { return nil },
		Journal: journal, Done: done}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(killSignal); !ok {
				panic(r)
			}
			killed = true
		}
		for key, pw := range k.pending {
			s.violate("finalizer write of %s failed and was never verified (%+v)", key, pw)
		}
	}()
	return rn.Run(ctx, plan), false
}

// stepLog is the supervisor's record of the steps the killed pass finished.
type stepLog struct{ steps []runner.Step }

func (l *stepLog) Done(st runner.Step) { l.steps = append(l.steps, st) }

// settle is called by every double: once the runner reaches OpenStack, the finalizer writes
// are done, and the groups it reconciles are those with a CR whose write did not fail (a group
// whose every write failed is connected only for its prune).
func (w *world) settle(openstack bool) {
	if !openstack || w.settled {
		return
	}
	w.settled = true
	w.reconciling = map[plugin.Credentials]bool{}
	for _, cr := range w.plan.Reconcile {
		if !w.finalizerFailed[cr.Ref()] {
			w.reconciling[cr.Credentials] = true
		}
	}
}

// writeOf says what a finalizer write to ref is, from the plan: a write that removes the
// finalizer of a deleted CR is its release, unless a live CR of the plan holds the name (the
// runner then releases nothing and the write is the live CR's).
func (w *world) writeOf(ref string, add bool) pendingWrite {
	pw := pendingWrite{wanted: add}
	for _, cr := range w.plan.Reconcile {
		if cr.Ref() == ref {
			pw.group, pw.name = cr.Credentials, cr.SpecName()
			return pw
		}
	}
	for _, cr := range w.plan.Deleted {
		if cr.Ref() == ref && !add {
			pw.release, pw.group, pw.name = true, cr.Credentials, cr.SpecName()
		}
	}
	return pw
}

// check tests the invariants that hold after a pass.
func (s *sequence) check(code int) {
	// Invariant 4: the exit code is non-zero exactly when something failed.
	if want := min(1, len(s.failures)); code != want {
		s.violate("exit code %d, want %d (failures: %v)", code, want, s.failures)
	}
	// Invariant 5: no duplicate OpenStack resources.
	for _, p := range projects {
		seen := map[string]int{}
		for _, r := range s.cloud[p] {
			if prev, dup := seen[r.name]; dup {
				s.violate("duplicate resources %s/%s: #%d and #%d", p, r.name, prev, r.id)
			}
			seen[r.name] = r.id
		}
	}
	// Invariant 2: no finalizer released before its cleanup. With FINALIZED_PRUNE a released
	// CR's group was pruned: its project holds nothing its plugin owns that the prune should
	// have deleted.
	if s.policy != plugin.CleanupFinalizedPrune {
		return
	}
	live := s.live()
	for _, rel := range s.released {
		claimed := map[string]bool{}
		for _, obj := range live {
			if !s.perGroup || groupOf(obj) == rel.group {
				claimed[specName(obj)] = true
			}
		}
		owner := "openstack-sync"
		if s.perGroup {
			owner = groupName(rel.group)
		}
		for _, r := range s.cloud[s.projectOf(rel.group)] {
			if r.owner == owner && !claimed[r.name] {
				s.violate("released the finalizer of a %s CR (%s) while %s/%s #%d, which no live CR claims, remains",
					groupName(rel.group), rel.name, s.projectOf(rel.group), r.name, r.id)
			}
		}
	}
}

func runs(t *testing.T) (n int, seed uint64) {
	n, seed = defaultRuns, 1
	if v := os.Getenv(envRuns); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", envRuns, v)
		}
	}
	if v := os.Getenv(envSeed); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want an unsigned integer", envSeed, v)
		}
	}
	return n, seed
}

// TestFrameworkStateMachine runs random sequences of changes, faults and hook passes and checks
// after every pass: nothing a live CR claims was deleted; no finalizer released before its
// cleanup; no prune with a failed or unreadable CR in its scope (a per-group prune also gets only
// its group's specs); the exit code is non-zero exactly when something failed; no duplicate
// OpenStack resources.
func TestFrameworkStateMachine(t *testing.T) {
	n, first := runs(t)
	perGroup := 0
	for i := range n {
		seed := first + uint64(i)
		s := play(t, seed)
		if s.perGroup {
			perGroup++
		}
		if len(s.violations) > 0 {
			trace := s.trace
			if n > 1 && len(trace) > 80 {
				trace = trace[len(trace)-80:]
			}
			t.Fatalf("sequence with seed %d broke an invariant: %s\nreplay: %s=1 %s=%d go test -run TestFrameworkStateMachine ./host/internal/statemachine/\n%s",
				seed, s.violations[0], envRuns, envSeed, seed, strings.Join(trace, "\n"))
		}
	}
	t.Logf("%d sequences (%d with a per-group prune), %d hook passes (%d exited 1, %d killed and run again), seeds %d-%d: "+
		"%d prunes, %d OpenStack creates and %d deletes, %d finalizers released, %d faults injected",
		n, perGroup, counts.passes, counts.failedPasses, counts.kills, first, first+uint64(n)-1, counts.prunes, counts.creates,
		counts.deletes, counts.releases, counts.faults)
}

// play runs one sequence to its end or its first violation.
func play(t *testing.T, seed uint64) *sequence {
	s, err := newSequence(seed)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for range passesPerSeq {
		for range 1 + s.rng.IntN(3) {
			s.mutate()
		}
		s.pass(context.Background())
		if len(s.violations) > 0 {
			break
		}
	}
	return s
}

// A seed replays its sequence exactly: what a failure prints is enough to debug it.
func TestASeedReplaysItsSequence(t *testing.T) {
	for _, seed := range []uint64{7, 4242} {
		a, b := play(t, seed), play(t, seed)
		assert.Equal(t, a.trace, b.trace)
		assert.Greater(t, len(a.trace), passesPerSeq)
	}
}
