package runner_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
)

// U is the finalizer of the understack profile (the original operator's).
const U = profile.FinalizerUnderstack

// TestProfileFinalizer: under the understack profile the hook adds, holds and releases the
// original's finalizer, and a CR carrying the other profile's finalizer is failed, never given a
// second one (docs/migrating.md).
func TestProfileFinalizer(t *testing.T) {
	t.Run("understack adds the original's finalizer", func(t *testing.T) {
		e := newEnv(t, true)
		e.cfg.Profile = profile.Understack
		assert.Equal(t, 0, e.run(e.plan(cr{name: "a", finalizers: []string{"x/y"}})))
		assert.Equal(t, []any{"x/y", U}, e.finalizers("a"))
		assert.Equal(t, "Synced", e.status("a")["syncStatus"])
	})
	t.Run("understack releases the original's finalizer after the prune", func(t *testing.T) {
		e := newEnv(t, true)
		e.cfg.Profile = profile.Understack
		assert.Equal(t, 0, e.run(e.plan(cr{name: "a", finalizers: []string{U}}, cr{name: "gone", deleting: true, finalizers: []string{U, "x/y"}})))
		assert.Equal(t, []any{"x/y"}, e.finalizers("gone"))
		require.Len(t, e.plugin.Pruned(), 1)
	})
	t.Run("understack with PRUNE off removes only the original's finalizer", func(t *testing.T) {
		e := newEnv(t, false)
		e.cfg.Profile = profile.Understack
		assert.Equal(t, 0, e.run(e.plan(cr{name: "a", finalizers: []string{"x/y", U}})))
		assert.Equal(t, []any{"x/y"}, e.finalizers("a"))
	})
	t.Run("a CR carrying the other profile's finalizer fails and stops the prune", func(t *testing.T) {
		e := newEnv(t, true)
		assert.Equal(t, 1, e.run(e.plan(cr{name: "a", finalizers: []string{U}}, cr{name: "b"}, cr{name: "gone", deleting: true, finalizers: []string{F}})))
		assert.Equal(t, []any{U}, e.finalizers("a"), "no second finalizer beside the original's")
		s := e.status("a")
		assert.Equal(t, "Failed", s["syncStatus"])
		assert.Equal(t, "Carries the finalizer "+U+" of the understack profile, not this hook's "+F+"; set WIDGET_PROFILE=understack "+
			"(chart: compatibility.profile) if the operator of those identifiers is replaced, or move the CR with openstack-sync migrate", s["message"])
		assert.Equal(t, "Synced", e.status("b")["syncStatus"], "the other CRs still reconcile")
		assert.Empty(t, e.plugin.Pruned(), "its claim is unknown to this profile: nothing is pruned")
		assert.Equal(t, []any{F}, e.finalizers("gone"), "the deleted CR keeps its finalizer while the prune is skipped")
		assert.Contains(t, e.logs.String(), `msg="Not reconciling a CR that carries the finalizer of another profile" plugin=widgets kind=Widget cr=ns/a finalizer=`+U)
	})
	t.Run("a CR carrying both finalizers fails", func(t *testing.T) {
		e := newEnv(t, true)
		e.cfg.Profile = profile.Understack
		assert.Equal(t, 1, e.run(e.plan(cr{name: "a", finalizers: []string{F, U}})))
		assert.Equal(t, []any{F, U}, e.finalizers("a"), "neither is touched")
		assert.Equal(t, "Carries both finalizers "+U+" and "+F+": two operators or profiles claim this CR; "+
			"finish openstack-sync migrate, or remove the finalizer of the one that no longer runs", e.status("a")["message"])
		assert.Empty(t, e.plugin.Reconciled())
	})
	t.Run("a deleted CR keeps the other profile's finalizer", func(t *testing.T) {
		e := newEnv(t, true)
		assert.Equal(t, 0, e.run(e.plan(cr{name: "a"}, cr{name: "gone", deleting: true, finalizers: []string{F, U}})))
		assert.Equal(t, []any{U}, e.finalizers("gone"), "this hook releases its own finalizer only")
		assert.Contains(t, e.logs.String(), `msg="A deleted CR keeps the finalizer of another profile; this hook does not release it" plugin=widgets kind=Widget cr=ns/gone finalizer=`+U)
	})
}

// TestProfileStatus: under the understack profile the status is the original's: Synced or
// Failed, one Ready condition whose reason is Reconciled, the plugin's own or ReconcileError, no
// lifecycle field; and a stored status whose condition lost its observedGeneration to the
// original's CRD is current (no patch every run).
func TestProfileStatus(t *testing.T) {
	e := lifecycleEnv(t)
	e.cfg.Profile = profile.Understack
	e.plugin.Results = map[string]plugintest.Result{
		"ok":       {Lifecycle: &plugin.Lifecycle{ID: "r-ok", Resource: map[string]any{"name": "ok"}, Available: "True", Reason: "Success"}, Extra: map[string]any{"prefixes": []any{}}},
		"building": {Lifecycle: &plugin.Lifecycle{ID: "r-b", Available: "False", Reason: "Progressing", Message: "waiting for ACTIVE"}},
		"bad":      {Lifecycle: &plugin.Lifecycle{Available: "False", Reason: "InvalidConfiguration", Message: "spec.minimum is negative"}},
		"named":    {Lifecycle: &plugin.Lifecycle{Available: "False", Reason: "InvalidConfiguration", Message: "no prefix", ReadyReason: "NautobotPrefixMissing"}},
		"trap":     {Err: errors.New("wasm trap")},
	}
	e.run(e.plan(cr{name: "ok", finalizers: []string{U}}, cr{name: "building", finalizers: []string{U}},
		cr{name: "bad", finalizers: []string{U}}, cr{name: "named", finalizers: []string{U}}, cr{name: "trap", finalizers: []string{U}}))

	ok := e.status("ok")
	assert.ElementsMatch(t, []string{"syncStatus", "lastSyncTime", "message", "observedGeneration", "conditions", "prefixes"}, keysOf(ok),
		"the original's fields, and the plugin's extra status it merges too")
	assert.Equal(t, "Synced", ok["syncStatus"])
	assert.Len(t, ok["conditions"], 1, "one Ready condition")
	assert.Equal(t, "Reconciled", condition(ok, "Ready")["reason"])
	for name, want := range map[string]string{"building": "ReconcileError", "bad": "ReconcileError", "named": "NautobotPrefixMissing", "trap": "ReconcileError"} {
		s := e.status(name)
		assert.Equal(t, "Failed", s["syncStatus"], name)
		assert.Nil(t, s["id"], name)
		assert.Len(t, s["conditions"], 1, name)
		assert.Equal(t, want, condition(s, "Ready")["reason"], name)
	}

	// The original's older CRDs drop a condition's observedGeneration: the next run finds the
	// status current and patches nothing.
	stored := e.status("ok")
	delete(condition(stored, "Ready"), "observedGeneration")
	e2 := lifecycleEnv(t)
	e2.cfg.Profile = profile.Understack
	e2.plugin.Results = e.plugin.Results
	e2.run(e2.plan(cr{name: "ok", finalizers: []string{U}, status: stored}))
	for _, entry := range e2.journal.Entries() {
		assert.NotEqual(t, "patch status ok", entry)
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
