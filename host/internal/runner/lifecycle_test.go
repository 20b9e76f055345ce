package runner_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
)

func lifecycleEnv(t *testing.T) *env {
	e := newEnv(t, true)
	e.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets",
		Lifecycle: true, HasDelete: true}
	return e
}

func condition(s map[string]any, typ string) map[string]any {
	conds, _ := s["conditions"].([]any)
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

func TestLifecycleResultsBecomeStatus(t *testing.T) {
	e := lifecycleEnv(t)
	e.plugin.Results = map[string]plugintest.Result{
		"ok": {Lifecycle: &plugin.Lifecycle{ID: "r-ok", Resource: map[string]any{"name": "ok"}, Available: "True", Reason: "Success"}},
		"building": {Lifecycle: &plugin.Lifecycle{ID: "r-b", Available: "False", Reason: "Progressing",
			Message: "waiting for ACTIVE", RequeueSeconds: 5}},
		"bad": {Lifecycle: &plugin.Lifecycle{Available: "False", Reason: "InvalidConfiguration",
			Message: "spec.import.filter matches 2 widgets"}},
		"named": {Lifecycle: &plugin.Lifecycle{Available: "False", Reason: "InvalidConfiguration",
			Message: "spec.minimum is negative", ReadyReason: "InvalidSpec"}},
		"badname": {Lifecycle: &plugin.Lifecycle{Available: "False", Reason: "UnrecoverableError",
			Message: "x", ReadyReason: "not a reason!"}},
	}
	code := e.run(e.plan(cr{name: "ok"}, cr{name: "building"}, cr{name: "bad"}, cr{name: "named"}, cr{name: "badname"}))
	assert.Equal(t, 0, code, "progressing is not a failure and a terminal failure is final: no failing exit")

	ok := e.status("ok")
	assert.Equal(t, "Synced", ok["syncStatus"])
	assert.Equal(t, "r-ok", ok["id"])
	assert.Equal(t, map[string]any{"name": "ok"}, ok["resource"])
	assert.Equal(t, "True", condition(ok, "Available")["status"])
	assert.Equal(t, "Success", condition(ok, "Progressing")["reason"])
	assert.Equal(t, "Reconciled", condition(ok, "Ready")["reason"])

	b := e.status("building")
	assert.Equal(t, "Progressing", b["syncStatus"])
	assert.Equal(t, "r-b", b["id"], "a resource still building is recorded")
	assert.Equal(t, "True", condition(b, "Progressing")["status"])
	assert.Equal(t, "Progressing", condition(b, "Ready")["reason"])

	bad := e.status("bad")
	assert.Equal(t, "Failed", bad["syncStatus"])
	assert.Nil(t, bad["id"])
	assert.Equal(t, "False", condition(bad, "Progressing")["status"])
	assert.Equal(t, "InvalidConfiguration", condition(bad, "Progressing")["reason"])
	assert.Equal(t, "InvalidConfiguration", condition(bad, "Ready")["reason"])

	assert.Equal(t, "InvalidSpec", condition(e.status("named"), "Ready")["reason"], "the plugin's Ready reason is kept")
	assert.Equal(t, "InvalidConfiguration", condition(e.status("named"), "Progressing")["reason"])
	assert.Equal(t, "UnrecoverableError", condition(e.status("badname"), "Ready")["reason"], "a reason the API server would refuse falls back")
	assert.Empty(t, e.plugin.Pruned(), "a plugin that deletes per CR and has no prune step is never pruned")
	assert.Contains(t, e.logs.String(), `msg="Finished reconciling with errors" plugin=widgets kind=Widget failed=0 unreadable=0 terminal=3`)
	assert.Contains(t, e.logs.String(), `msg="Failed to reconcile; not retried until its spec changes" plugin=widgets kind=Widget cr=ns/bad name=bad reason=InvalidConfiguration`)
}

func TestLifecycleTransientFailureFailsTheRun(t *testing.T) {
	e := lifecycleEnv(t)
	e.plugin.Results = map[string]plugintest.Result{
		"a": {Lifecycle: &plugin.Lifecycle{ID: "r-a", Available: "Unknown", Reason: "TransientError", Message: "503"}},
		"b": {Err: errors.New("wasm trap")},
	}
	assert.Equal(t, 1, e.run(e.plan(cr{name: "a"}, cr{name: "b"})))
	a := e.status("a")
	assert.Equal(t, "Failed", a["syncStatus"])
	assert.Equal(t, "r-a", a["id"], "the id of a resource that exists survives a later failure")
	assert.Equal(t, "True", condition(a, "Progressing")["status"])
	b := e.status("b")
	assert.Equal(t, "TransientError", condition(b, "Progressing")["reason"],
		"a failure the plugin could not report still writes consistent lifecycle conditions")
	assert.Equal(t, "Unknown", condition(b, "Available")["status"])
	assert.Equal(t, "ReconcileError", condition(b, "Ready")["reason"])
}

func TestPerCRDeleteReleasesOnlyConfirmedDeletes(t *testing.T) {
	e := lifecycleEnv(t)
	e.plugin.Deletes = map[string]plugintest.Result{
		"slow":  {Lifecycle: &plugin.Lifecycle{ID: "r-slow", Available: "False", Reason: "Progressing", Message: "waiting for widget r-slow to be deleted"}},
		"flaky": {Lifecycle: &plugin.Lifecycle{ID: "r-flaky", Available: "Unknown", Reason: "TransientError", Message: "503"}},
		"err":   {Err: errors.New("trap")},
	}
	idStatus := func(id string) map[string]any { return map[string]any{"id": id, "syncStatus": "Synced"} }
	code := e.run(e.plan(cr{name: "live", finalizers: []string{F}},
		cr{name: "gone", deleting: true, finalizers: []string{F}, status: idStatus("r-gone")},
		cr{name: "slow", deleting: true, finalizers: []string{F}, status: idStatus("r-slow")},
		cr{name: "flaky", deleting: true, finalizers: []string{F}},
		cr{name: "err", deleting: true, finalizers: []string{F}}))
	assert.Equal(t, 1, code, "a delete that failed fails the run")
	require.Len(t, e.plugin.Deleted(), 4)
	assert.Equal(t, "r-gone", e.plugin.Deleted()[2].Status["id"], "the deleted CR's status reaches the plugin")
	assert.JSONEq(t, `{"name": "gone"}`, string(e.plugin.Deleted()[2].Spec))
	assert.Empty(t, e.finalizers("gone"), "a confirmed delete releases the finalizer")
	assert.Contains(t, e.logs.String(), `msg="Released; nothing in OpenStack to delete" plugin=widgets kind=Widget cr=ns/gone name=gone`,
		"a delete that sent no DELETE says so rather than claim one")
	for _, n := range []string{"slow", "flaky", "err"} {
		assert.Equal(t, []any{F}, e.finalizers(n), n)
	}
	assert.Equal(t, "Progressing", e.status("slow")["syncStatus"], "the progress run picks it up")
	assert.Empty(t, e.plugin.Pruned(), "a plugin that deletes per CR and has no prune step is never pruned")
	assert.Equal(t, "Synced", e.status("live")["syncStatus"])
}

func TestPerCRDeleteDoesNotWaitForOtherCRs(t *testing.T) {
	e := lifecycleEnv(t)
	e.plugin.Results = map[string]plugintest.Result{"live": {Err: errors.New("boom")}}
	code := e.run(e.plan(cr{name: "live", finalizers: []string{F}}, cr{name: "gone", deleting: true, finalizers: []string{F}}))
	assert.Equal(t, 1, code)
	assert.Empty(t, e.finalizers("gone"), "deleting one CR by id does not depend on another CR converging")
}

func TestPerCRDeleteNeedsTheFinalizerPolicy(t *testing.T) {
	e := lifecycleEnv(t)
	e.cfg.Prune = false // the NONE policy: no finalizer, nothing deleted in OpenStack
	assert.Equal(t, 0, e.run(e.plan(cr{name: "gone", deleting: true})))
	assert.Empty(t, e.plugin.Deleted())
}

func TestPerCRDeleteKeepsTheSetPruneOfAPluginThatHasOne(t *testing.T) {
	e := lifecycleEnv(t)
	e.plugin.Meta.HasPrune = true
	assert.Equal(t, 0, e.run(e.plan(cr{name: "live", finalizers: []string{F}}, cr{name: "gone", deleting: true, finalizers: []string{F}})))
	assert.Len(t, e.plugin.Deleted(), 1)
	assert.Len(t, e.plugin.Pruned(), 1)
	assert.Empty(t, e.finalizers("gone"))
}

// A plugin without the lifecycle keeps the set prune and writes no lifecycle field.
func TestPluginsWithoutLifecycleAreUnchanged(t *testing.T) {
	e := newEnv(t, true)
	e.plugin.Meta.HasDelete = false
	code := e.run(e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "gone", deleting: true, finalizers: []string{F}}))
	assert.Equal(t, 0, code)
	assert.Empty(t, e.plugin.Deleted())
	assert.Len(t, e.plugin.Pruned(), 1)
	s := e.status("a")
	assert.Nil(t, s["id"])
	assert.Len(t, s["conditions"], 1, "only Ready")
}

func TestProgressRunNeverPrunes(t *testing.T) {
	e := lifecycleEnv(t)
	e.plugin.Meta.HasPrune = true
	plan := e.plan(cr{name: "a", finalizers: []string{F}})
	plan.Progress = true
	assert.Equal(t, 0, e.run(plan))
	assert.Len(t, e.plugin.Reconciled(), 1)
	assert.Empty(t, e.plugin.Pruned(), "sweeping is the periodic sync's job")
}
