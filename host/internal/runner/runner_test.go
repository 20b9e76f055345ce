package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

const (
	group   = "example.openstack-sync.io"
	version = "v1alpha1"
	F       = resource.Finalizer
)

var (
	g1 = plugin.Credentials{Namespace: "ns", SecretName: "s1", CloudName: "c1"}
	g2 = plugin.Credentials{Namespace: "ns", SecretName: "s2", CloudName: "c1"}
)

// cr is a Widget in namespace ns named name, in credential group s1/c1 unless opts say otherwise.
type cr struct {
	name, secret string
	// ns is the namespace, "ns" when empty.
	ns         string
	deleting   bool
	finalizers []string
	status     map[string]any
	noName     bool
}

func (c cr) object() map[string]any {
	secret := c.secret
	if secret == "" {
		secret = "s1"
	}
	md := map[string]any{"name": c.name, "namespace": c.namespace(), "uid": "uid-" + c.name, "resourceVersion": "1",
		"generation": 1, "finalizers": c.finalizers}
	if c.noName {
		delete(md, "name")
	}
	if c.deleting {
		md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	}
	o := map[string]any{"apiVersion": group + "/" + version, "kind": "Widget", "metadata": md,
		"spec": map[string]any{"name": c.name, "cloudCredentialsRef": map[string]any{"secretName": secret, "cloudName": "c1"}}}
	if c.status != nil {
		o["status"] = c.status
	}
	return o
}

func (c cr) namespace() string {
	if c.ns == "" {
		return "ns"
	}
	return c.ns
}

func path(name string) string { return pathIn("ns", name) }

func pathIn(ns, name string) string { return kubetest.ObjectPath(group, version, "widgets", ns, name) }

type env struct {
	t       *testing.T
	srv     *kubetest.Server
	journal *plugintest.Journal
	plugin  *plugintest.Plugin
	conn    *plugintest.Connector
	cfg     hookenv.Config
	logs    bytes.Buffer
	sleeps  []time.Duration
	// unreadable objects are added to the snapshot as they are.
	unreadable []any
	// configure, when set, completes the Runner before the run (metrics, Events, a deadline).
	configure func(*runner.Runner)
}

func newEnv(t *testing.T, prune bool) *env {
	e := &env{t: t, srv: kubetest.NewServer(t), journal: &plugintest.Journal{}}
	e.plugin = &plugintest.Plugin{Journal: e.journal}
	e.conn = &plugintest.Connector{Journal: e.journal}
	e.cfg = hookenv.Config{Prefix: "WIDGET", BindingName: "widgets", Enabled: true, APIVersion: group + "/" + version,
		Kind: "Widget", Resource: "widgets." + group, StatusEnabled: true, Prune: prune, ReadyRetries: 3, ReadyDelay: 7 * time.Second}
	// Kubernetes writes join the journal so ordering against OpenStack calls can be asserted.
	e.srv.Intercept = func(r kubetest.Request) (int, string, bool) {
		if r.Method == "PATCH" {
			what := "finalizers"
			if strings.HasSuffix(r.Path, "/status") {
				what = "status"
			}
			name := strings.TrimSuffix(r.Path, "/status")
			e.journal.Add("patch %s %s", what, name[strings.LastIndex(name, "/")+1:])
		}
		return 0, "", false
	}
	return e
}

// plan stores the CRs in the API server and plans a Synchronization run over them.
func (e *env) plan(crs ...cr) planner.Plan {
	var objects []any
	for _, c := range crs {
		o := c.object()
		if !c.noName {
			e.srv.Put(pathIn(c.namespace(), c.name), o)
		}
		objects = append(objects, o)
	}
	objects = append(objects, e.unreadable...)
	return e.planContexts([]any{map[string]any{"binding": "widgets", "type": "Synchronization", "objects": objects}})
}

func (e *env) planContexts(contexts []any) planner.Plan {
	data, err := json.Marshal(contexts)
	require.NoError(e.t, err)
	doc, err := bindingctx.Parse(data)
	require.NoError(e.t, err)
	p, err := planner.Build(doc.Contexts, planner.Options{Binding: "widgets", Kind: "Widget", Log: slog.New(slog.DiscardHandler)})
	require.NoError(e.t, err)
	return p
}

func (e *env) run(plan planner.Plan) int {
	c, err := kube.NewForConfig(e.srv.Config(), kube.Limit{})
	require.NoError(e.t, err)
	rn := &runner.Runner{Plugin: e.plugin, Connector: e.conn, Kube: c, Config: e.cfg,
		Log:   slog.New(slog.NewTextHandler(&e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("plugin", "widgets"),
		Sleep: func(_ context.Context, d time.Duration) error { e.sleeps = append(e.sleeps, d); return nil },
		Now:   func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	if e.configure != nil {
		e.configure(rn)
	}
	return rn.Run(context.Background(), plan)
}

func (e *env) status(name string) map[string]any {
	s, _ := e.srv.Object(path(name))["status"].(map[string]any)
	return s
}

func (e *env) finalizers(name string) []any {
	fs, _ := e.srv.Object(path(name))["metadata"].(map[string]any)["finalizers"].([]any)
	return fs
}

func reason(s map[string]any) string {
	conds, _ := s["conditions"].([]any)
	if len(conds) == 0 {
		return ""
	}
	return conds[0].(map[string]any)["reason"].(string)
}

func TestOrderingWithFinalizedPrune(t *testing.T) {
	e := newEnv(t, true)
	code := e.run(e.plan(cr{name: "b", secret: "s2"}, cr{name: "a"}, cr{name: "c"}))
	assert.Equal(t, 0, code)
	assert.Equal(t, []string{
		// docs/contract.md §5 step 1: every finalizer before any OpenStack connection.
		"patch finalizers a", "patch finalizers b", "patch finalizers c",
		// Groups in sorted order, one connection, one readiness wait and one cache each.
		"connect ns/s1/c1", "wait ns/s1/c1", "cache 1",
		"reconcile ns/a via ns/s1/c1 cache 1", "patch status a",
		"reconcile ns/c via ns/s1/c1 cache 1", "patch status c",
		"close cache 1",
		"connect ns/s2/c1", "wait ns/s2/c1", "cache 2",
		"reconcile ns/b via ns/s2/c1 cache 2", "patch status b",
		"close cache 2",
		// Prune reuses the reconcile sessions and protects every group's desired names.
		"prune ns/s1/c1 via ns/s1/c1 desired=[a b c] authoritative=false",
		"prune ns/s2/c1 via ns/s2/c1 desired=[a b c] authoritative=false",
	}, e.journal.Entries())
	for _, n := range []string{"a", "b", "c"} {
		assert.Equal(t, []any{F}, e.finalizers(n))
		assert.Equal(t, "Synced", e.status(n)["syncStatus"])
	}
	for _, c := range e.plugin.Caches() {
		assert.True(t, c.Closed)
	}
	assert.Contains(t, e.logs.String(), `msg="Found CRs to reconcile" plugin=widgets kind=Widget count=3`)
	assert.Contains(t, e.logs.String(), `msg="Finished reconciling" plugin=widgets kind=Widget`)
	assert.JSONEq(t, `{"name": "a"}`, string(e.plugin.Reconciled()[0].Spec), "plugins never see cloudCredentialsRef")
}

func TestReadiness(t *testing.T) {
	transient := errors.New("503 from neutron")
	tests := []struct {
		name    string
		retries int
		errs    []error
		waits   int
		sleeps  int
		code    int
		message string
		logs    []string
	}{
		{name: "ready at once", retries: 3, waits: 1, code: 0},
		{name: "ready on the third attempt", retries: 3, errs: []error{transient, transient}, waits: 3, sleeps: 2, code: 0,
			logs: []string{`msg="Waiting for the OpenStack API" plugin=widgets namespace=ns secret=s1 cloud=c1 attempt=1 attempts=3 error="503 from neutron"`, `attempt=2 attempts=3 error="503 from neutron"`}},
		{name: "never ready", retries: 2, errs: []error{transient, transient, transient}, waits: 2, sleeps: 1, code: 1,
			message: "OpenStack API unavailable: OpenStack API did not become ready after 2 attempt(s): 503 from neutron",
			logs:    []string{`msg="OpenStack API unavailable" plugin=widgets namespace=ns secret=s1 cloud=c1`}},
		{name: "permanent error is not retried", retries: 5, errs: []error{plugin.Permanent(errors.New("401 from keystone for secret s1 cloud c1"))},
			waits: 1, sleeps: 0, code: 1, message: "OpenStack API unavailable: 401 from keystone for secret s1 cloud c1"},
		{name: "zero retries skip the probe", retries: 0, errs: []error{transient}, waits: 0, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			e.cfg.ReadyRetries = tt.retries
			e.plugin.WaitErrs = map[plugin.Credentials][]error{g1: tt.errs}
			code := e.run(e.plan(cr{name: "a"}, cr{name: "b"}))
			assert.Equal(t, tt.code, code)
			waits := 0
			for _, j := range e.journal.Entries() {
				if strings.HasPrefix(j, "wait ") {
					waits++
				}
			}
			assert.Equal(t, tt.waits, waits)
			assert.Len(t, e.sleeps, tt.sleeps)
			for _, d := range e.sleeps {
				assert.Equal(t, 7*time.Second, d)
			}
			if tt.message != "" {
				for _, n := range []string{"a", "b"} {
					assert.Equal(t, "Failed", e.status(n)["syncStatus"])
					assert.Equal(t, tt.message, e.status(n)["message"])
				}
				assert.Empty(t, e.plugin.Reconciled())
			}
			for _, l := range tt.logs {
				assert.Contains(t, e.logs.String(), l)
			}
		})
	}
}

func TestConnectFailureIsolatesTheGroup(t *testing.T) {
	e := newEnv(t, true)
	e.conn.ConnectErrs = map[plugin.Credentials]error{g1: errors.New("secret s1 has no cloud c1")}
	code := e.run(e.plan(cr{name: "a"}, cr{name: "b", secret: "s2"}, cr{name: "gone", deleting: true, finalizers: []string{F}}))
	assert.Equal(t, 1, code)
	assert.Equal(t, "OpenStack connection failed: secret s1 has no cloud c1", e.status("a")["message"])
	assert.Equal(t, "ReconcileError", reason(e.status("a")))
	assert.Equal(t, "Synced", e.status("b")["syncStatus"], "the other group still reconciles")
	assert.Empty(t, e.plugin.Pruned(), "a failure skips the prune")
	assert.Equal(t, []any{F}, e.finalizers("gone"), "FINALIZED_PRUNE keeps the finalizer when the prune was skipped")
	assert.Contains(t, e.logs.String(), `msg="Failed to connect to OpenStack" plugin=widgets namespace=ns secret=s1 cloud=c1 error="secret s1 has no cloud c1"`)
	assert.Contains(t, e.logs.String(), `msg="Skipping the prune; CRs failed to reconcile or could not be read" plugin=widgets kind=Widget failed=1 unreadable=0`)
	assert.Nil(t, e.status("gone"), "deleted CRs never get a status")
}

func TestReconcileResults(t *testing.T) {
	e := newEnv(t, true)
	e.plugin.Results = map[string]plugintest.Result{
		"a": {Err: plugin.WithReason("NautobotPrefixMissing", errors.New("prefix 7 is missing"))},
		"b": {Notes: []string{"profile p1 is in use", "set spec.public"}},
		"c": {Extra: map[string]any{"prefixes": []any{map[string]any{"id": "p"}}}},
		"d": {Err: plugin.WithReason("not a valid reason!", errors.New("bad"))},
		"e": {Err: errors.New("plain")},
		"f": {Err: plugin.WithReason("Long"+strings.Repeat("x", 1021), errors.New("too long"))},
	}
	code := e.run(e.plan(cr{name: "a"}, cr{name: "b"}, cr{name: "c"}, cr{name: "d"}, cr{name: "e"}, cr{name: "f"}))
	assert.Equal(t, 1, code)
	assert.Equal(t, "Failed", e.status("a")["syncStatus"])
	assert.Equal(t, "prefix 7 is missing", e.status("a")["message"])
	assert.Equal(t, "NautobotPrefixMissing", reason(e.status("a")))
	assert.Equal(t, "ReconcileError", reason(e.status("d")), "a reason the API server would reject falls back")
	assert.Equal(t, "ReconcileError", reason(e.status("e")))
	assert.Equal(t, "ReconcileError", reason(e.status("f")), "a reason longer than the API server's 1024 falls back")
	assert.Equal(t, "Successfully reconciled widget; needs manual action: profile p1 is in use; set spec.public", e.status("b")["message"])
	assert.Equal(t, "Reconciled", reason(e.status("b")))
	assert.Equal(t, []any{map[string]any{"id": "p"}}, e.status("c")["prefixes"])
	assert.Len(t, e.plugin.Reconciled(), 6, "a failure never stops the other CRs")
	assert.Empty(t, e.plugin.Pruned())
	assert.Contains(t, e.logs.String(), `msg="Converged but needs manual action" plugin=widgets kind=Widget cr=ns/b name=b notes="profile p1 is in use; set spec.public"`)
	assert.Contains(t, e.logs.String(), `msg="Failed to reconcile" plugin=widgets kind=Widget cr=ns/a name=a error="prefix 7 is missing"`)
	assert.Contains(t, e.logs.String(), `msg="Skipping the prune; CRs failed to reconcile or could not be read" plugin=widgets kind=Widget failed=4 unreadable=0`)
}

func TestUnreadableSkipsPrune(t *testing.T) {
	e := newEnv(t, true)
	e.unreadable = []any{map[string]any{"metadata": map[string]any{"name": "legacy", "namespace": "openstack"}, "spec": map[string]any{}}}
	code := e.run(e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "gone", deleting: true, finalizers: []string{F}}))
	assert.Equal(t, 1, code)
	assert.Equal(t, "Synced", e.status("a")["syncStatus"], "readable CRs still reconcile")
	assert.Empty(t, e.plugin.Pruned())
	assert.Equal(t, []any{F}, e.finalizers("gone"))
	assert.Contains(t, e.logs.String(), `msg="Ignored unreadable CRs" plugin=widgets kind=Widget count=1 crs=openstack/legacy`)
	assert.Contains(t, e.logs.String(), `msg="Skipping the prune; CRs failed to reconcile or could not be read" plugin=widgets kind=Widget failed=0 unreadable=1`)
}

func TestFinalizerSync(t *testing.T) {
	t.Run("failed add fails the CR before any connection", func(t *testing.T) {
		e := newEnv(t, true)
		plan := e.plan(cr{name: "a"}, cr{name: "b"})
		// Someone changed a since the binding context was taken: the resourceVersion test fails.
		o := cr{name: "a"}.object()
		o["metadata"].(map[string]any)["resourceVersion"] = "5"
		e.srv.Put(path("a"), o)
		code := e.run(plan)
		assert.Equal(t, 1, code)
		assert.Equal(t, "Unable to add finalizer before reconciling", e.status("a")["message"])
		assert.Equal(t, "Synced", e.status("b")["syncStatus"])
		require.Len(t, e.plugin.Reconciled(), 1)
		assert.Equal(t, "b", e.plugin.Reconciled()[0].Object.Name)
		assert.Empty(t, e.plugin.Pruned())
		assert.Contains(t, e.logs.String(), "failed to add finalizer to Widget a: HTTP 422")
	})
	t.Run("PRUNE off removes the disabled finalizer", func(t *testing.T) {
		e := newEnv(t, false)
		code := e.run(e.plan(cr{name: "a", finalizers: []string{"x/y", F}}, cr{name: "b"}))
		assert.Equal(t, 0, code)
		assert.Equal(t, []any{"x/y"}, e.finalizers("a"))
		assert.Equal(t, "patch finalizers a", e.journal.Entries()[0])
		assert.Empty(t, e.plugin.Pruned(), "NONE runs no prune")
	})
	t.Run("failed remove", func(t *testing.T) {
		e := newEnv(t, false)
		plan := e.plan(cr{name: "a", finalizers: []string{F}})
		e.srv.Put(path("a"), cr{name: "a", finalizers: []string{"x/y", F}}.object())
		assert.Equal(t, 1, e.run(plan))
		assert.Equal(t, "Unable to remove disabled finalizer before reconciling", e.status("a")["message"])
		assert.Empty(t, e.plugin.Reconciled())
	})
}

func TestReleasePerPolicy(t *testing.T) {
	pruneFailed := errors.New("router flavor f1 still in use")
	tests := []struct {
		name      string
		policy    plugin.CleanupPolicy
		pruneErrs map[plugin.Credentials]error
		failCR    bool
		code      int
		// released lists the deleted CRs whose finalizer is gone afterwards.
		released []string
		pruned   int
	}{
		{name: "finalized, prune ok", policy: plugin.CleanupFinalizedPrune, code: 0, released: []string{"gone1", "gone2"}, pruned: 2},
		{name: "finalized, one group's prune failed", policy: plugin.CleanupFinalizedPrune, pruneErrs: map[plugin.Credentials]error{g1: pruneFailed},
			code: 1, released: []string{"gone2"}, pruned: 2},
		{name: "finalized, reconcile failed", policy: plugin.CleanupFinalizedPrune, failCR: true, code: 1, pruned: 0},
		{name: "best effort, prune failed", policy: plugin.CleanupBestEffortPrune, pruneErrs: map[plugin.Credentials]error{g1: pruneFailed},
			code: 1, released: []string{"gone1", "gone2"}, pruned: 2},
		{name: "best effort, reconcile failed", policy: plugin.CleanupBestEffortPrune, failCR: true, code: 1,
			released: []string{"gone1", "gone2"}, pruned: 0},
		{name: "none", policy: plugin.CleanupNone, code: 0, released: []string{"gone1", "gone2"}, pruned: 0},
		{name: "none, reconcile failed", policy: plugin.CleanupNone, failCR: true, code: 1, released: []string{"gone1", "gone2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, true)
			e.plugin.Policy = func(bool) plugin.CleanupPolicy { return tt.policy }
			e.plugin.PruneErrs = tt.pruneErrs
			if tt.failCR {
				e.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
			}
			fin := []string{}
			if tt.policy.UsesFinalizer() {
				fin = []string{F}
			}
			code := e.run(e.plan(cr{name: "a", finalizers: fin}, cr{name: "gone1", deleting: true, finalizers: []string{F}},
				cr{name: "b", secret: "s2", finalizers: fin}, cr{name: "gone2", secret: "s2", deleting: true, finalizers: []string{"x/y", F}}))
			assert.Equal(t, tt.code, code)
			for _, n := range []string{"gone1", "gone2"} {
				if contains(tt.released, n) {
					assert.NotContains(t, e.finalizers(n), F, n)
				} else {
					assert.Contains(t, e.finalizers(n), F, n)
				}
			}
			if contains(tt.released, "gone2") {
				assert.Equal(t, []any{"x/y"}, e.finalizers("gone2"), "other finalizers stay")
			}
			assert.Len(t, e.plugin.Pruned(), tt.pruned)
			if tt.failCR {
				// Only a policy with a prune step has a prune to skip.
				skipped := `msg="Skipping the prune; CRs failed to reconcile or could not be read" plugin=widgets kind=Widget failed=1`
				if tt.policy.RunsPrune() {
					assert.Contains(t, e.logs.String(), skipped)
				} else {
					assert.NotContains(t, e.logs.String(), skipped)
					assert.Contains(t, e.logs.String(), `msg="Finished reconciling with errors" plugin=widgets kind=Widget failed=1 unreadable=0`)
				}
			}
			// Release comes after the prune it depends on.
			entries := e.journal.Entries()
			lastPrune, firstRelease := -1, len(entries)
			for i, j := range entries {
				if strings.HasPrefix(j, "prune ") {
					lastPrune = i
				}
				if strings.HasPrefix(j, "patch finalizers gone") && i < firstRelease {
					firstRelease = i
				}
			}
			assert.Less(t, lastPrune, firstRelease)
		})
	}
}

func TestReleaseFailureFailsTheRun(t *testing.T) {
	e := newEnv(t, true)
	plan := e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "gone", deleting: true, finalizers: []string{F}})
	// Another controller added its finalizer in front of ours: the index test fails, ours is still there.
	e.srv.Put(path("gone"), cr{name: "gone", deleting: true, finalizers: []string{"x/y", F}}.object())
	assert.Equal(t, 1, e.run(plan))
	assert.Len(t, e.plugin.Pruned(), 1, "the prune itself succeeded")
	assert.Equal(t, []any{"x/y", F}, e.finalizers("gone"))
	assert.Contains(t, e.logs.String(), "failed to release finalizer from Widget gone: HTTP 422")
}

// The release rule rests on the prune that ran, not on the planner always listing a deleted CR's
// group for prune: a finalizer held for cleanup stays until that group's prune succeeded.
func TestFinalizerHeldWhenItsGroupWasNotPruned(t *testing.T) {
	e := newEnv(t, true)
	plan := e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "gone", secret: "s2", deleting: true, finalizers: []string{F}})
	plan.PruneCredentials = []plugin.Credentials{g1}
	assert.Equal(t, 1, e.run(plan))
	assert.Equal(t, []any{F}, e.finalizers("gone"))
	require.Len(t, e.plugin.Pruned(), 1)
	assert.Equal(t, g1, e.plugin.Pruned()[0].Credentials)
	assert.Contains(t, e.logs.String(), `msg="Keeping the finalizer; its credential group was not pruned" plugin=widgets kind=Widget cr=ns/gone`)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestPruneGroups(t *testing.T) {
	t.Run("authoritative empty group connects for the prune", func(t *testing.T) {
		e := newEnv(t, true)
		code := e.run(e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "gone", secret: "s2", deleting: true, finalizers: []string{F}}))
		assert.Equal(t, 0, code)
		assert.Equal(t, []string{
			"connect ns/s1/c1", "wait ns/s1/c1", "cache 1", "reconcile ns/a via ns/s1/c1 cache 1", "patch status a", "close cache 1",
			"prune ns/s1/c1 via ns/s1/c1 desired=[a] authoritative=false",
			"connect ns/s2/c1", "wait ns/s2/c1",
			"prune ns/s2/c1 via ns/s2/c1 desired=[a] authoritative=true",
			"patch finalizers gone",
		}, e.journal.Entries())
		assert.Empty(t, e.finalizers("gone"))
	})
	t.Run("unreachable prune group keeps its finalizers", func(t *testing.T) {
		e := newEnv(t, true)
		e.conn.ConnectErrs = map[plugin.Credentials]error{g2: errors.New("keystone down")}
		code := e.run(e.plan(cr{name: "a", finalizers: []string{F}}, cr{name: "gone", secret: "s2", deleting: true, finalizers: []string{F}}))
		assert.Equal(t, 1, code)
		assert.Equal(t, []any{F}, e.finalizers("gone"))
		assert.Contains(t, e.logs.String(), `msg="Cannot reach OpenStack for the prune" plugin=widgets namespace=ns secret=s2 cloud=c1 error="keystone down"`)
	})
	t.Run("an event about one group never sweeps another, nor an empty one", func(t *testing.T) {
		e := newEnv(t, true)
		a, b := cr{name: "a", finalizers: []string{F}}.object(), cr{name: "b", secret: "s2", finalizers: []string{F}}.object()
		x := cr{name: "x", secret: "s3", finalizers: []string{F}}.object()
		for n, o := range map[string]map[string]any{"a": a, "b": b, "x": x} {
			e.srv.Put(path(n), o)
		}
		snapshot := []any{map[string]any{"object": a}, map[string]any{"object": b}}
		code := e.run(e.planContexts([]any{
			map[string]any{"binding": "widgets", "type": "Event", "watchEvent": "Modified", "object": a,
				"snapshots": map[string]any{"widgets": snapshot}},
			// x is not in the snapshot: its group has no desired CR and no deletion.
			map[string]any{"binding": "widgets", "type": "Event", "watchEvent": "Added", "object": x,
				"snapshots": map[string]any{"widgets": snapshot}},
		}))
		assert.Equal(t, 0, code)
		pruned := e.plugin.Pruned()
		require.Len(t, pruned, 1)
		assert.Equal(t, g1, pruned[0].Credentials)
		assert.Len(t, pruned[0].DesiredSpecs, 2, "desired specs are the union across groups")
		assert.Contains(t, e.logs.String(), `msg="Skipping the prune of a credential group; no desired resources" plugin=widgets namespace=ns secret=s3 cloud=c1`)
	})
	t.Run("a plugin's prune_keys trim the desired specs", func(t *testing.T) {
		e := newEnv(t, true)
		e.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets",
			PruneKeys: []string{"name"}}
		a := cr{name: "a", finalizers: []string{F}}.object()
		a["spec"].(map[string]any)["steps"] = []any{map[string]any{"args": map[string]any{"big": "ignored by the prune"}}}
		e.srv.Put(path("a"), a)
		code := e.run(e.planContexts([]any{map[string]any{"binding": "widgets", "type": "Synchronization", "objects": []any{a}}}))
		assert.Equal(t, 0, code)
		require.Len(t, e.plugin.Pruned(), 1)
		assert.Equal(t, []json.RawMessage{json.RawMessage(`{"name":"a"}`)}, e.plugin.Pruned()[0].DesiredSpecs)
		require.Len(t, e.plugin.Reconciled(), 1)
		assert.JSONEq(t, `{"name":"a","steps":[{"args":{"big":"ignored by the prune"}}]}`, string(e.plugin.Reconciled()[0].Spec),
			"the reconcile still sees the whole spec")
	})
	t.Run("NONE never connects for deleted CRs", func(t *testing.T) {
		e := newEnv(t, false)
		code := e.run(e.plan(cr{name: "gone", deleting: true, finalizers: []string{F}}))
		assert.Equal(t, 0, code)
		assert.Equal(t, []string{"patch finalizers gone"}, e.journal.Entries())
	})
}

func TestStatusWrites(t *testing.T) {
	synced := map[string]any{"syncStatus": "Synced", "message": "Successfully reconciled widget", "observedGeneration": 1,
		"lastSyncTime": "2020-01-01T00:00:00Z",
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled",
			"message": "Successfully reconciled widget", "observedGeneration": 1, "lastTransitionTime": "2020-01-01T00:00:00Z"}}}
	t.Run("current status is not re-patched", func(t *testing.T) {
		e := newEnv(t, false)
		assert.Equal(t, 0, e.run(e.plan(cr{name: "a", status: synced})))
		assert.NotContains(t, e.journal.Entries(), "patch status a")
		assert.Contains(t, e.logs.String(), `msg="Skipping the status patch; the status is already current" plugin=widgets kind=Widget cr=ns/a`)
	})
	t.Run("a changed outcome is patched", func(t *testing.T) {
		e := newEnv(t, false)
		e.plugin.Results = map[string]plugintest.Result{"a": {Notes: []string{"n"}}}
		assert.Equal(t, 0, e.run(e.plan(cr{name: "a", status: synced})))
		assert.Contains(t, e.journal.Entries(), "patch status a")
		assert.Equal(t, "2026-01-02T03:04:05Z", e.status("a")["lastSyncTime"])
	})
	t.Run("STATUS_ENABLED=false writes nothing", func(t *testing.T) {
		e := newEnv(t, false)
		e.cfg.StatusEnabled = false
		e.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
		assert.Equal(t, 1, e.run(e.plan(cr{name: "a"})))
		assert.NotContains(t, e.journal.Entries(), "patch status a")
	})
	t.Run("a CR deleted meanwhile is not an error", func(t *testing.T) {
		e := newEnv(t, false)
		plan := e.plan(cr{name: "a"})
		e.srv.Delete(path("a"))
		assert.Equal(t, 0, e.run(plan))
		assert.Contains(t, e.logs.String(), `msg="Not patching the status; the CR is gone" plugin=widgets kind=Widget cr=ns/a error="HTTP 404 Not Found`)
	})
	t.Run("a rejected status patch is logged and fails the run, and stops no prune", func(t *testing.T) {
		e := newEnv(t, true)
		plan := e.plan(cr{name: "a"}, cr{name: "gone", deleting: true, finalizers: []string{F}})
		e.srv.Intercept = func(r kubetest.Request) (int, string, bool) {
			return 403, kubetest.Status(403, "Forbidden", "a", "forbidden"), strings.HasSuffix(r.Path, "/status")
		}
		assert.Equal(t, 1, e.run(plan), "the CR's status is not on record: shell-operator runs the hook again")
		assert.Contains(t, e.logs.String(), `msg="Failed to patch the status" plugin=widgets kind=Widget cr=ns/a error="HTTP 403 Forbidden: `)
		assert.Contains(t, e.logs.String(), `msg="Status writes failed; the run fails so that it runs again" plugin=widgets kind=Widget count=1`)
		assert.Contains(t, e.journal.Entries(), "prune ns/s1/c1 via ns/s1/c1 desired=[a] authoritative=false",
			"the CR's spec was read: the prune spares it and runs")
	})
	t.Run("no metadata.name", func(t *testing.T) {
		e := newEnv(t, false)
		e.plugin.Results = map[string]plugintest.Result{"": {Err: errors.New("boom")}}
		assert.Equal(t, 1, e.run(e.plan(cr{name: "", noName: true})))
		assert.Contains(t, e.logs.String(), `msg="Unable to patch the status; Kubernetes metadata.name is missing"`)
	})
	t.Run("every CR line names plugin, kind and CR", func(t *testing.T) {
		e := newEnv(t, false)
		e.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
		e.run(e.plan(cr{name: "a"}))
		line := ""
		for _, l := range strings.Split(e.logs.String(), "\n") {
			if strings.Contains(l, `msg="Failed to reconcile" plugin=widgets kind=Widget cr=ns/a`) {
				line = l
			}
		}
		assert.Contains(t, line, "plugin=widgets")
		assert.Contains(t, line, "kind=Widget")
		assert.Contains(t, line, "cr=ns/a")
	})
}

func TestDeletedCRsAreNeverReconciled(t *testing.T) {
	e := newEnv(t, true)
	assert.Equal(t, 0, e.run(e.plan(cr{name: "gone", deleting: true, finalizers: []string{F}})))
	assert.Empty(t, e.plugin.Reconciled())
	assert.Nil(t, e.status("gone"))
}

// A Deleted event carries the last stored state, finalizer included (the real API server deletes
// without storing the emptied list). When the same name was created again in the batch, the
// name-addressed release would hit the new object, whose finalizer this run just added at the same
// index: the old object is gone, so there is nothing to release.
func TestReleaseSkipsANameNowHeldByAnotherObject(t *testing.T) {
	e := newEnv(t, true)
	old := cr{name: "a", finalizers: []string{F}}.object()
	old["metadata"].(map[string]any)["uid"] = "uid-old"
	old["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	recreated := cr{name: "a"}.object()
	e.srv.Put(path("a"), recreated)
	snapshot := map[string]any{"widgets": []any{map[string]any{"object": recreated}}}
	code := e.run(e.planContexts([]any{
		map[string]any{"binding": "widgets", "type": "Event", "watchEvent": "Deleted", "object": old, "snapshots": snapshot},
		map[string]any{"binding": "widgets", "type": "Event", "watchEvent": "Added", "object": recreated, "snapshots": snapshot},
	}))
	assert.Equal(t, 0, code)
	assert.Equal(t, []any{F}, e.finalizers("a"), "the new object keeps the finalizer this run added")
	assert.Equal(t, 1, strings.Count(strings.Join(e.journal.Entries(), "\n"), "patch finalizers a"), "only the add")
	assert.Contains(t, e.logs.String(), `msg="Not releasing the finalizer; the name now belongs to another object" plugin=widgets kind=Widget cr=ns/a uid=uid-old holder_uid=uid-a`)
}

// concurrentPlugin lets the runner spread a group's CRs over several caches and checks that no
// cache is ever in two goroutines' hands at once.
type concurrentPlugin struct {
	*plugintest.Plugin
	workers  int
	inFlight atomic.Int32
	peak     atomic.Int32
	busy     sync.Map // plugin.Cache -> *atomic.Bool
	shared   atomic.Bool
}

func (p *concurrentPlugin) ReconcileConcurrency() int { return p.workers }

func (p *concurrentPlugin) Reconcile(ctx context.Context, s plugin.Session, c plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	b, _ := p.busy.LoadOrStore(c, &atomic.Bool{})
	if !b.(*atomic.Bool).CompareAndSwap(false, true) {
		p.shared.Store(true)
	}
	defer b.(*atomic.Bool).Store(false)
	n := p.inFlight.Add(1)
	defer p.inFlight.Add(-1)
	for {
		peak := p.peak.Load()
		if n <= peak || p.peak.CompareAndSwap(peak, n) {
			break
		}
	}
	// Long enough for the other workers to pick up a CR of their own.
	time.Sleep(20 * time.Millisecond)
	return p.Plugin.Reconcile(ctx, s, c, req)
}

func TestConcurrentReconcilesWithinAGroup(t *testing.T) {
	e := newEnv(t, true)
	p := &concurrentPlugin{Plugin: e.plugin, workers: 3}
	p.Results = map[string]plugintest.Result{"c": {Err: errors.New("boom")}}
	var crs []cr
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		crs = append(crs, cr{name: n, finalizers: []string{F}})
	}
	crs = append(crs, cr{name: "x", secret: "s2", finalizers: []string{F}})
	c, err := kube.NewForConfig(e.srv.Config(), kube.Limit{})
	require.NoError(t, err)
	rn := &runner.Runner{Plugin: p, Connector: e.conn, Kube: c, Config: e.cfg, Log: slog.New(slog.DiscardHandler),
		Sleep: func(context.Context, time.Duration) error { return nil }}
	code := rn.Run(context.Background(), e.plan(crs...))

	assert.Equal(t, 1, code, "a failed CR still fails the run")
	assert.Len(t, e.plugin.Reconciled(), len(crs), "every CR reconciled exactly once")
	assert.Equal(t, int32(3), p.peak.Load(), "three reconciles overlapped, never more")
	assert.False(t, p.shared.Load(), "no cache was used by two goroutines at once")
	caches := e.plugin.Caches()
	assert.Len(t, caches, 4, "three caches for the seven CRs of s1, one for the single CR of s2")
	for _, cache := range caches {
		assert.True(t, cache.Closed, "cache %d closed with its group", cache.ID)
	}
	assert.Equal(t, "Failed", e.status("c")["syncStatus"])
	assert.Equal(t, "Synced", e.status("g")["syncStatus"])
	assert.Empty(t, e.plugin.Pruned(), "a failure skips the prune, concurrency or not")
}
