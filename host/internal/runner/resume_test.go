package runner_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

// recordingJournal keeps the steps a pass finished, as the supervisor's report pipe does.
type recordingJournal struct {
	mu    sync.Mutex
	steps []runner.Step
}

func (j *recordingJournal) Done(s runner.Step) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.steps = append(j.steps, s)
}

// killed is what the killing plugin panics with: the process ends there, nothing after runs.
type killed struct{}

// killingPlugin ends the pass (as the supervisor's kill of the child does) when it reaches the
// reconcile of CR kill, and times that CR out when the pass runs again (the termination checks).
type killingPlugin struct {
	*plugintest.Plugin
	kill  string
	again bool
}

func (p *killingPlugin) Reconcile(ctx context.Context, s plugin.Session, c plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	if req.Object.Name == p.kill {
		if !p.again {
			panic(killed{})
		}
		return plugin.Result{}, errors.New(`wasm plugin "widgets" reconcile: timeout: did not finish within 1s`)
	}
	return p.Plugin.Reconcile(ctx, s, c, req)
}

// A pass run again after its process was killed takes what the first pass finished as done: the
// CRs reconciled before the kill are not reconciled, status-patched or finalized again, and the
// run's outcome counts them as the first pass left them.
func TestAPassRunAgainSkipsWhatTheFirstFinished(t *testing.T) {
	e := newEnv(t, true)
	e.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("neutron said 500")}}
	p := &killingPlugin{Plugin: e.plugin, kill: "c"}
	journal := &recordingJournal{}
	crs := []cr{{name: "a"}, {name: "b"}, {name: "c"}, {name: "d"}, {name: "gone", deleting: true, finalizers: []string{F}}}
	plan := e.plan(crs...)
	e.configure = func(rn *runner.Runner) { rn.Plugin, rn.Journal = p, journal }
	func() {
		defer func() { require.Equal(t, killed{}, recover(), "the first pass was killed at c") }()
		e.run(plan)
	}()
	first := e.journal.Entries()
	assert.Contains(t, first, "reconcile ns/a via ns/s1/c1 cache 1")
	assert.Contains(t, first, "reconcile ns/b via ns/s1/c1 cache 1")
	assert.Equal(t, []runner.Step{
		{Kind: runner.StepFinalizer, Key: "uid-a", Outcome: runner.OutcomeOK},
		{Kind: runner.StepFinalizer, Key: "uid-b", Outcome: runner.OutcomeOK},
		{Kind: runner.StepFinalizer, Key: "uid-c", Outcome: runner.OutcomeOK},
		{Kind: runner.StepFinalizer, Key: "uid-d", Outcome: runner.OutcomeOK},
		{Kind: runner.StepReconcile, Key: "uid-a", Outcome: runner.OutcomeFailed},
		{Kind: runner.StepReconcile, Key: "uid-b", Outcome: runner.OutcomeOK},
	}, journal.steps)

	p.again = true
	e.configure = func(rn *runner.Runner) { rn.Plugin, rn.Done = p, slices.Clone(journal.steps) }
	code := e.run(plan)
	again := e.journal.Entries()[len(first):]
	t.Logf("the pass run again:\n%s", strings.Join(again, "\n"))
	for _, done := range []string{"ns/a", "ns/b"} {
		for _, entry := range again {
			assert.NotContains(t, entry, done, "%s was finished by the first pass", done)
		}
	}
	assert.True(t, slices.ContainsFunc(again, func(s string) bool { return strings.HasPrefix(s, "reconcile ns/d ") }),
		"what the first pass did not reach is reconciled")
	assert.Equal(t, 1, code, "a failed before the kill and c timed out: the run fails")
	assert.NotContains(t, strings.Join(again, "\n"), "prune", "a's failure still stops the prune")
	md, _ := e.srv.Object(path("gone"))["metadata"].(map[string]any)
	assert.Equal(t, []any{F}, md["finalizers"], "and gone keeps its finalizer")
}

// A prune and a release the first pass finished are not done again either.
func TestAPassRunAgainDoesNotPruneOrReleaseTwice(t *testing.T) {
	e := newEnv(t, true)
	journal := &recordingJournal{}
	plan := e.plan(cr{name: "a"}, cr{name: "gone", deleting: true, finalizers: []string{F}})
	e.configure = func(rn *runner.Runner) { rn.Journal = journal }
	require.Equal(t, 0, e.run(plan))
	kinds := map[runner.StepKind]int{}
	for _, s := range journal.steps {
		kinds[s.Kind]++
	}
	assert.Equal(t, map[runner.StepKind]int{runner.StepFinalizer: 1, runner.StepReconcile: 1, runner.StepPrune: 1,
		runner.StepRelease: 1}, kinds)
	first := len(e.journal.Entries())
	e.configure = func(rn *runner.Runner) { rn.Done = journal.steps }
	require.Equal(t, 0, e.run(plan))
	assert.Empty(t, e.journal.Entries()[first:], "nothing is done twice")
}
