package runner_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

type eventLog struct {
	mu     sync.Mutex
	events []kubeapi.Event
}

func (l *eventLog) Record(_ context.Context, ev kubeapi.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

// said is "<name> <reason>: <note>" per Event, in order.
func (l *eventLog) said() []string {
	var out []string
	for _, ev := range l.events {
		out = append(out, ev.Regarding.Name+" "+ev.Reason+": "+ev.Note)
	}
	return out
}

// observed runs with metrics and Events and returns the metrics file's text.
func observed(e *env, ev *eventLog, configure func(*runner.Runner), plan func() int) (int, string) {
	rec := metrics.NewFile()
	e.configure = func(rn *runner.Runner) {
		rn.Metrics, rn.Events = rec, ev
		if configure != nil {
			configure(rn)
		}
	}
	code := plan()
	path := filepath.Join(e.t.TempDir(), "metrics.json")
	require.NoError(e.t, rec.Flush(path, "g"))
	data, err := os.ReadFile(path)
	require.NoError(e.t, err)
	return code, string(data)
}

func TestEventsTellEachCRsStory(t *testing.T) {
	failed := map[string]any{"syncStatus": "Failed", "observedGeneration": 1, "message": "old"}
	tests := []struct {
		name    string
		prune   bool
		crs     []cr
		results map[string]plugintest.Result
		// deletes is how many DELETEs the plugin's prune sends (answered 204).
		deletes int
		want    []string
		metrics []string
	}{
		{name: "a CR turns Failed; one that stays Failed says nothing new",
			crs:     []cr{{name: "a"}, {name: "b", status: failed}},
			results: map[string]plugintest.Result{"a": {Err: errors.New("boom")}, "b": {Err: errors.New("boom")}},
			want:    []string{"a ReconcileFailed: boom"},
			metrics: []string{`"value":2,"labels":{"plugin":"widgets","result":"failed"}`}},
		{name: "a call the sandbox stopped says so",
			crs:     []cr{{name: "a"}},
			results: map[string]plugintest.Result{"a": {Err: trapped{}}},
			want: []string{"a ReconcileFailed: wasm plugin trapped",
				"a SandboxRefused: The plugin's sandbox stopped it (trap): wasm plugin trapped"}},
		{name: "a CR the plugin never saw still counts as failed",
			crs:     []cr{{name: "a", secret: "nope"}},
			want:    []string{"a ReconcileFailed: OpenStack connection failed: no such secret"},
			metrics: []string{`"value":1,"labels":{"plugin":"widgets","result":"failed"}`}},
		{name: "a Failed CR recovers; a note needs a human",
			crs:     []cr{{name: "a", status: failed}, {name: "b"}},
			results: map[string]plugintest.Result{"b": {Notes: []string{"flavor is in use"}}},
			want:    []string{"a Recovered: Successfully reconciled widget", "b NeedsManualAction: flavor is in use"},
			metrics: []string{`"value":2,"labels":{"plugin":"widgets","result":"synced"}`}},
		{name: "a prune releases a deleted CR and says what it deleted",
			prune: true, deletes: 2,
			crs:  []cr{{name: "a", finalizers: []string{F}}, {name: "gone", deleting: true, finalizers: []string{F}}},
			want: []string{"gone Pruned: Prune deleted the owned OpenStack resources no CR claims: 2 in network; releasing the finalizer"},
			metrics: []string{`"name":"openstack_sync_prunes_total","group":"g","action":"add","value":1,"labels":{"plugin":"widgets","result":"ok"}`,
				`"name":"openstack_sync_openstack_deletions_total","group":"g","action":"add","value":2,"labels":{"plugin":"widgets","service":"network"}`,
				`"name":"openstack_sync_finalizers_held","group":"g","action":"set","value":0`}},
		{name: "a prune that deleted nothing says nothing",
			prune:   true,
			crs:     []cr{{name: "a", finalizers: []string{F}}, {name: "gone", deleting: true, finalizers: []string{F}}},
			metrics: []string{`"name":"openstack_sync_prunes_total","group":"g","action":"add","value":1,"labels":{"plugin":"widgets","result":"ok"}`}},
		{name: "a failed reconcile keeps a deleted CR's finalizer",
			prune:   true,
			crs:     []cr{{name: "a", finalizers: []string{F}}, {name: "gone", deleting: true, finalizers: []string{F}}},
			results: map[string]plugintest.Result{"a": {Err: errors.New("boom")}},
			want: []string{"a ReconcileFailed: boom",
				"gone FinalizerKept: Keeping the finalizer: prune was skipped because another CR failed to reconcile or could not be read"},
			metrics: []string{`"name":"openstack_sync_prunes_total","group":"g","action":"add","value":1,"labels":{"plugin":"widgets","result":"skipped"}`,
				`"name":"openstack_sync_finalizers_held","group":"g","action":"set","value":1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.prune)
			e.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets"}
			e.plugin.Results = tt.results
			ev := &eventLog{}
			e.conn.ConnectErrs = map[plugin.Credentials]error{{Namespace: "ns", SecretName: "nope", CloudName: "c1"}: errors.New("no such secret")}
			e.conn.Respond = func(_ plugin.Credentials, req plugin.Request) (*plugin.Response, error) {
				return &plugin.Response{StatusCode: 204}, nil
			}
			pruner := &deletingPlugin{Plugin: e.plugin, deletes: tt.deletes}
			_, text := observed(e, ev, func(rn *runner.Runner) { rn.Plugin = pruner }, func() int { return e.run(e.plan(tt.crs...)) })
			assert.Equal(t, tt.want, ev.said())
			for _, m := range tt.metrics {
				assert.Contains(t, text, m)
			}
			for _, got := range ev.events {
				assert.Equal(t, "ns", got.Regarding.Namespace)
				assert.Equal(t, "Widget", got.Regarding.Kind)
				assert.Equal(t, "uid-"+got.Regarding.Name, got.Regarding.UID)
			}
		})
	}
}

// A run past its budget starts no reconcile: the CRs keep their status, no prune runs on the
// incomplete picture, and the run fails so that shell-operator runs the hook again.
func TestRunBudgetStopsStartingReconciles(t *testing.T) {
	e := newEnv(t, true)
	e.cfg.RunBudget = time.Minute
	code, text := observed(e, &eventLog{}, func(rn *runner.Runner) { rn.Deadline = time.Now().Add(-time.Second) },
		func() int {
			return e.run(e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "b", finalizers: []string{F}}))
		})
	assert.Equal(t, 1, code)
	for _, entry := range e.journal.Entries() {
		assert.False(t, strings.HasPrefix(entry, "reconcile ") || strings.HasPrefix(entry, "prune "), entry)
	}
	assert.Nil(t, e.status("a"), "nothing was learnt about a CR that was not started")
	assert.Contains(t, e.logs.String(), "Stopping the run: its time budget is spent")
	assert.Contains(t, e.logs.String(), "budget_env=WIDGET_RUN_BUDGET budget=1m0s not_reconciled=2")
	assert.Contains(t, text, `"name":"openstack_sync_run_budget_exhausted_total","group":"g","action":"add","value":1`)
}

// deletingPlugin's prune deletes n resources through the session it is given.
type deletingPlugin struct {
	*plugintest.Plugin
	deletes int
}

func (p *deletingPlugin) Prune(ctx context.Context, s plugin.Session, req plugin.PruneRequest) error {
	for i := range p.deletes {
		if _, err := s.Do(ctx, plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/things/" + strconv.Itoa(i)}); err != nil {
			return err
		}
	}
	return p.Plugin.Prune(ctx, s, req)
}

// trapped is an error the sandbox marks as a stop, as wasm.CallError does.
type trapped struct{}

func (trapped) Error() string          { return "wasm plugin trapped" }
func (trapped) SandboxRefusal() string { return "trap" }

// Events follow status changes, with one exception decided in docs/operating.md ("Events"): a
// deleted CR kept by its finalizer is told so by every run that keeps it (the Event's series
// counts the runs), since that state waits on the operator and nothing else reports it; the CR
// whose failure kept it says nothing new in the second run.
func TestAHeldFinalizerIsToldEveryRunThatKeepsIt(t *testing.T) {
	e := newEnv(t, true)
	e.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets"}
	e.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
	held := "gone FinalizerKept: Keeping the finalizer: prune was skipped because another CR failed to reconcile or could not be read"
	ev := &eventLog{}
	_, _ = observed(e, ev, nil, func() int {
		return e.run(e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "gone", deleting: true, finalizers: []string{F}}))
	})
	assert.Equal(t, []string{"a ReconcileFailed: boom", held}, ev.said())
	ev = &eventLog{}
	_, _ = observed(e, ev, nil, func() int {
		return e.run(e.plan(cr{name: "a", finalizers: []string{F}, status: e.status("a")},
			cr{name: "gone", deleting: true, finalizers: []string{F}}))
	})
	assert.Equal(t, []string{held}, ev.said(), "only the held finalizer is told again")
}
