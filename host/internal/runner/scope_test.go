package runner_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
)

// Two tenants, each in its own namespace with its own credential group (docs/contract.md §7.1).
var (
	groupA = plugin.Credentials{Namespace: "team-a", SecretName: "s1", CloudName: "c1"}
)

// unreadableIn is a CR whose status is not an object, so it cannot be read; creds false also
// breaks its cloudCredentialsRef, and ns of nil leaves even its namespace unreadable.
func unreadableIn(ns any, name string, creds bool) map[string]any {
	ref := any(map[string]any{"secretName": "s1", "cloudName": "c1"})
	if !creds {
		ref = "s1"
	}
	md := map[string]any{"name": name, "uid": "uid-" + name, "namespace": ns}
	if ns == nil {
		md["namespace"] = 7
	}
	return map[string]any{"apiVersion": group + "/" + version, "kind": "Widget", "metadata": md,
		"status": "broken", "spec": map[string]any{"name": name, "cloudCredentialsRef": ref}}
}

// TestTenantIsolation pins, for each rule of docs/contract.md §7.1, that with a per-group prune a
// failure in namespace team-a never stops team-b's prune or the release of team-b's finalizers,
// and that a plugin pruning across groups keeps the global rule.
func TestTenantIsolation(t *testing.T) {
	// Every row has a live and a deleted CR in each tenant; rows add what fails.
	base := []cr{
		{name: "a1", ns: "team-a"}, {name: "a-gone", ns: "team-a", deleting: true, finalizers: []string{F}},
		{name: "b1", ns: "team-b"}, {name: "b-gone", ns: "team-b", deleting: true, finalizers: []string{F}},
	}
	bPruned := "prune team-b/s1/c1 via team-b/s1/c1 desired=[b1] authoritative=false"
	tests := []struct {
		name       string
		global     bool
		extra      []cr
		unreadable []any
		results    map[string]plugintest.Result
		connect    map[plugin.Credentials]error
		pruneErrs  map[plugin.Credentials]error
		// failFinalizer fails the finalizer write of this CR with a 500.
		failFinalizer string
		prunes        []string
		released      []string
		held          []string
		code          int
		logs          []string
	}{
		{
			name:     "each group's prune gets only its own group's specs",
			prunes:   []string{"prune team-a/s1/c1 via team-a/s1/c1 desired=[a1] authoritative=false", bPruned},
			released: []string{"a-gone", "b-gone"},
		},
		{
			name:   "without a per-group prune every prune spares every group's specs",
			global: true,
			prunes: []string{"prune team-a/s1/c1 via team-a/s1/c1 desired=[a1 b1] authoritative=false",
				"prune team-b/s1/c1 via team-b/s1/c1 desired=[a1 b1] authoritative=false"},
			released: []string{"a-gone", "b-gone"},
		},
		{
			name:     "a failed CR in team-a skips only team-a's prune",
			results:  map[string]plugintest.Result{"a1": {Err: errors.New("neutron said 500")}},
			prunes:   []string{bPruned},
			released: []string{"b-gone"}, held: []string{"a-gone"}, code: 1,
			logs: []string{`msg="Skipping the prune of a credential group; its CRs failed to reconcile or unreadable CRs may belong to it" plugin=widgets namespace=team-a secret=s1 cloud=c1 failed=1 unreadable=0`,
				`msg="Finished reconciling with errors" plugin=widgets kind=Widget failed=1 unreadable=0`},
		},
		{
			name:    "without a per-group prune a failed CR in team-a skips every prune",
			global:  true,
			results: map[string]plugintest.Result{"a1": {Err: errors.New("neutron said 500")}},
			held:    []string{"a-gone", "b-gone"}, code: 1,
			logs: []string{`msg="Skipping the prune; CRs failed to reconcile or could not be read" plugin=widgets kind=Widget failed=1 unreadable=0`},
		},
		{
			// Decision 17: the terminally failed CR is desired, so team-a's prune spares it, as
			// every later run does once the planner stops reconciling it.
			name: "a terminal failure in team-a skips no prune and fails nothing",
			results: map[string]plugintest.Result{"a1": {Lifecycle: &plugin.Lifecycle{Available: "False",
				Reason: plugin.ReasonInvalidConfiguration, Message: "no such flavor"}}},
			prunes:   []string{"prune team-a/s1/c1 via team-a/s1/c1 desired=[a1] authoritative=false", bPruned},
			released: []string{"a-gone", "b-gone"},
			logs:     []string{`msg="Finished reconciling with errors" plugin=widgets kind=Widget failed=0 unreadable=0 terminal=1`},
		},
		{
			name:   "without a per-group prune a terminal failure skips no prune either",
			global: true,
			results: map[string]plugintest.Result{"a1": {Lifecycle: &plugin.Lifecycle{Available: "False",
				Reason: plugin.ReasonInvalidConfiguration, Message: "no such flavor"}}},
			prunes: []string{"prune team-a/s1/c1 via team-a/s1/c1 desired=[a1 b1] authoritative=false",
				"prune team-b/s1/c1 via team-b/s1/c1 desired=[a1 b1] authoritative=false"},
			released: []string{"a-gone", "b-gone"},
		},
		{
			name:     "team-a's cloud unreachable skips only team-a's prune",
			connect:  map[plugin.Credentials]error{groupA: errors.New("connection refused")},
			prunes:   []string{bPruned},
			released: []string{"b-gone"}, held: []string{"a-gone"}, code: 1,
		},
		{
			name:          "a failed finalizer write in team-a skips only team-a's prune",
			failFinalizer: "a1",
			prunes:        []string{bPruned},
			released:      []string{"b-gone"}, held: []string{"a-gone"}, code: 1,
		},
		{
			name:  "an unreadable CR of a known group skips that group alone",
			extra: []cr{{name: "a3", ns: "team-a", secret: "s2"}},
			// The unreadable CR names team-a's s1 group; team-a's s2 group is another tenant's
			// business as far as ownership goes.
			unreadable: []any{unreadableIn("team-a", "broken", true)},
			prunes:     []string{"prune team-a/s2/c1 via team-a/s2/c1 desired=[a3] authoritative=false", bPruned},
			released:   []string{"b-gone"}, held: []string{"a-gone"}, code: 1,
			logs: []string{`msg="An unreadable CR stops the prune of the credential groups it may belong to" plugin=widgets kind=Widget cr=team-a/broken stops="credential group cloud=c1 secret=s1 namespace=team-a"`},
		},
		{
			name:       "an unreadable CR whose group is unknown skips every group of its namespace",
			extra:      []cr{{name: "a3", ns: "team-a", secret: "s2"}},
			unreadable: []any{unreadableIn("team-a", "broken", false)},
			prunes:     []string{bPruned},
			released:   []string{"b-gone"}, held: []string{"a-gone"}, code: 1,
			logs: []string{`cr=team-a/broken stops="every credential group of namespace team-a"`,
				`msg="Skipping the prune of a credential group; its CRs failed to reconcile or unreadable CRs may belong to it" plugin=widgets namespace=team-a secret=s2 cloud=c1 failed=0 unreadable=1`},
		},
		{
			name:       "an unreadable CR whose namespace is unknown skips every prune",
			unreadable: []any{unreadableIn(nil, "broken", true)},
			held:       []string{"a-gone", "b-gone"}, code: 1,
			logs: []string{`cr=broken stops="every credential group"`},
		},
		{
			name:      "a failed prune in team-a keeps only team-a's finalizer",
			pruneErrs: map[plugin.Credentials]error{groupA: errors.New("409 in use")},
			prunes:    []string{"prune team-a/s1/c1 via team-a/s1/c1 desired=[a1] authoritative=false", bPruned},
			released:  []string{"b-gone"}, held: []string{"a-gone"}, code: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, true)
			if !tt.global {
				e.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets",
					PrunePerGroup: true}
			}
			e.plugin.Results = tt.results
			e.conn.ConnectErrs = tt.connect
			e.plugin.PruneErrs = tt.pruneErrs
			if tt.failFinalizer != "" {
				target := pathIn("team-a", tt.failFinalizer)
				e.srv.Intercept = func(r kubetest.Request) (int, string, bool) {
					if r.Method == "PATCH" && r.Path == target {
						return 500, `{"kind":"Status","code":500}`, true
					}
					return 0, "", false
				}
			}
			e.unreadable = tt.unreadable
			code := e.run(e.plan(append(slices.Clone(base), tt.extra...)...))
			assert.Equal(t, tt.code, code)
			var prunes []string
			for _, j := range e.journal.Entries() {
				if strings.HasPrefix(j, "prune ") {
					prunes = append(prunes, j)
				}
			}
			assert.Equal(t, tt.prunes, prunes)
			for _, n := range tt.released {
				assert.Empty(t, e.finalizersIn(n), "%s released", n)
			}
			for _, n := range tt.held {
				assert.Equal(t, []any{F}, e.finalizersIn(n), "%s held", n)
			}
			for _, l := range tt.logs {
				assert.Contains(t, e.logs.String(), l)
			}
		})
	}
}

// finalizersIn reads a CR of either tenant (names are unique across them in these tests).
func (e *env) finalizersIn(name string) []any {
	ns := "team-a"
	if strings.HasPrefix(name, "b") {
		ns = "team-b"
	}
	md, _ := e.srv.Object(pathIn(ns, name))["metadata"].(map[string]any)
	fs, _ := md["finalizers"].([]any)
	return fs
}

// Decision 17: a terminally failed CR stops no prune, in the run that fails it and in every run
// after (where the planner no longer reconciles it): both runs prune with its spec desired and
// release the deleted CR's finalizer. Before, the first run held every finalizer (exit 0) and the
// second released them, so the block protected nothing and delayed deletions by one period.
func TestATerminalFailureStopsNoPruneInAnyRun(t *testing.T) {
	for _, perGroup := range []bool{false, true} {
		t.Run(map[bool]string{false: "across groups", true: "per group"}[perGroup], func(t *testing.T) {
			e := newEnv(t, true)
			e.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets",
				Lifecycle: true, PrunePerGroup: perGroup}
			e.plugin.Results = map[string]plugintest.Result{"bad": {Lifecycle: &plugin.Lifecycle{Available: "False",
				Reason: plugin.ReasonInvalidConfiguration, Message: "no such flavor"}}}
			for run, gone := range []string{"gone-1", "gone-2"} {
				crs := []cr{{name: "bad", finalizers: []string{F}}, {name: gone, deleting: true, finalizers: []string{F}}}
				if run == 1 {
					crs[0].status = e.status("bad") // what the first run wrote
				}
				plan := e.plan(crs...)
				if run == 1 {
					assert.Empty(t, plan.Reconcile, "the next run does not reconcile the terminal CR")
				}
				before := len(e.journal.Entries())
				assert.Equal(t, 0, e.run(plan), "run %d: a terminal failure is final, not a failing run", run+1)
				var prunes []string
				for _, j := range e.journal.Entries()[before:] {
					if strings.HasPrefix(j, "prune ") {
						prunes = append(prunes, j)
					}
				}
				assert.Equal(t, []string{"prune ns/s1/c1 via ns/s1/c1 desired=[bad] authoritative=false"}, prunes,
					"run %d prunes, sparing the terminal CR's spec", run+1)
				md, _ := e.srv.Object(path(gone))["metadata"].(map[string]any)
				assert.Empty(t, md["finalizers"], "run %d releases %s", run+1, gone)
			}
		})
	}
}
