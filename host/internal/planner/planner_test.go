package planner

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube/shelloperator"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// planRow is one line of the golden planning table: what each fixture in testdata/ must plan.
// CRs are written name:resourceVersion, credential groups namespace/secret/cloud.
type planRow struct {
	fixture      string
	podNamespace string
	reconcile    []string
	desired      []string
	deleted      []string
	creds        []string
	unreadable   []string
	err          string
	progress     bool
	logs         []string
	notLogs      []string
}

var (
	s1 = "ns/s1/c1"
	s2 = "ns/s2/c1"
)

var planTable = []planRow{
	// docs/contract.md §2.2 snapshot / Synchronization mode
	{fixture: "sync-basic", reconcile: []string{"a:1", "b:1"}, desired: []string{"a:1", "b:1"},
		deleted: []string{"c:1"}, creds: []string{s1, s2}},
	{fixture: "sync-missing-objects"},
	{fixture: "sync-objects-not-list", err: "Synchronization widgets objects must be a list"},
	{fixture: "schedule-snapshot", reconcile: []string{"a:1", "b:1"}, desired: []string{"a:1", "b:1"},
		deleted: []string{"c:1"}, creds: []string{s1, s2}},
	{fixture: "schedule-without-objects",
		err: "Shell-operator binding context does not contain widgets event, snapshot, or synchronization objects"},
	{fixture: "full-first-snapshot", reconcile: []string{"a:1"}, desired: []string{"a:1"}, creds: []string{s1}},
	{fixture: "full-snapshot-not-list", err: "Snapshot widgets must be a list"},
	{fixture: "full-sync-fallback", reconcile: []string{"a:1"}, desired: []string{"a:1"}, creds: []string{s1}},
	// docs/contract.md §2.1 event mode
	{fixture: "event-added", reconcile: []string{"a:1"}, desired: []string{"a:1", "b:1"}, creds: []string{s1}},
	{fixture: "event-collapse", reconcile: []string{"a:3"}, desired: []string{"a:3"}, creds: []string{s1},
		logs: []string{`msg="Collapsed the batch's changed events" kind=Widget events=3 crs=1`}},
	{fixture: "event-deleted-cancels", deleted: []string{"a:4"}, creds: []string{s1},
		logs: []string{`msg="Not reconciling; a later event in this batch deleted the CR" kind=Widget cr=ns/a name=alpha`,
			`msg="Collapsed the batch's changed events" kind=Widget events=2 crs=1`}},
	{fixture: "event-recreate", reconcile: []string{"a:9"}, desired: []string{"a:9"}, deleted: []string{"a:1"},
		creds: []string{s1}, notLogs: []string{"Collapsed the batch"}},
	{fixture: "event-undelete", reconcile: []string{"a:2"}, desired: []string{"a:2"}, creds: []string{s1}},
	{fixture: "event-deletion-timestamp", desired: []string{"b:1"}, deleted: []string{"a:5"}, creds: []string{s1}},
	{fixture: "event-feedback-loop", reconcile: []string{"d:1", "n:1", "o:1", "t:1"},
		desired: []string{"d:1", "f:1", "n:1", "o:1", "s:1", "t:1"}, creds: []string{s1},
		logs: []string{`name=sierra generation=4 sync_status=Synced`,
			`name=foxtrot generation=4 sync_status=Failed`}},
	{fixture: "event-own-writes-batch", desired: []string{"a:3"},
		logs: []string{`msg="Not reconciling; a later event in this batch records the outcome of the CR's generation" kind=Widget cr=ns/a name=alpha generation=1 sync_status=Synced`}},
	{fixture: "event-echo-then-edit", reconcile: []string{"a:4"}, desired: []string{"a:4"}, creds: []string{s1}},
	{fixture: "event-added-deleted-added", reconcile: []string{"a:3"}, desired: []string{"a:3"}, creds: []string{s1},
		logs: []string{`msg="Collapsed the batch's changed events" kind=Widget events=2 crs=1`}},
	{fixture: "event-only-own-writes", desired: []string{"b:1", "f:1", "s:1"}},
	{fixture: "event-missing-fields", desired: []string{"a:1", "b:1"},
		logs: []string{`msg="Ignoring an event without a watchEvent" kind=Widget`,
			`msg="Ignoring an event without an object" kind=Widget event=Modified`, `msg="Ignoring an event without an object" kind=Widget event=Added`}},
	{fixture: "event-other-binding-ignored", reconcile: []string{"a:1"}, desired: []string{"a:1"}, creds: []string{s1}},
	{fixture: "event-last-snapshot", reconcile: []string{"a:3"}, desired: []string{"a:2", "b:1"}, creds: []string{s1}},
	{fixture: "event-without-snapshot", err: "Shell-operator widgets event context does not contain widgets snapshot objects"},
	// docs/contract.md §2.3 event mode wins over a schedule in the same batch
	{fixture: "mixed-schedule-and-event", reconcile: []string{"a:1"}, desired: []string{"a:1", "b:1"}, creds: []string{s1}},
	// docs/contract.md §2.4 an empty snapshot plus a deletion
	{fixture: "event-empty-snapshot", deleted: []string{"z:1"}, creds: []string{"ns/s9/c1"}},
	// docs/contract.md §3.1, §3.2, Decision 1
	{fixture: "unreadable-sync", reconcile: []string{"a:1", "b:1"}, desired: []string{"a:1", "b:1"}, creds: []string{s1, s2},
		unreadable: []string{"<unnamed>", "ns/<unnamed>", "ns/deletion-number", "ns/empty-cloud", "ns/finalizers-string",
			"ns/generation-string", "ns/no-ref", "ns/no-secret", "ns/no-spec", "ns/null-ref", "ns/number-secret",
			"ns/spec-string", "ns/status-string", "ns/string-ref"},
		logs: []string{
			`cr=ns/no-spec from=CR reason="spec is missing or not an object"`,
			`cr=ns/spec-string from=CR reason="spec is missing or not an object"`,
			`cr=ns/no-ref from=CR reason="spec.cloudCredentialsRef is missing or not an object"`,
			`cr=ns/null-ref from=CR reason="spec.cloudCredentialsRef is missing or not an object"`,
			`cr=ns/string-ref from=CR reason="spec.cloudCredentialsRef is missing or not an object"`,
			`cr=ns/no-secret from=CR reason="spec.cloudCredentialsRef must set both secretName and cloudName; got secretName=null, cloudName=\"c1\""`,
			`cr=ns/empty-cloud from=CR reason="spec.cloudCredentialsRef must set both secretName and cloudName; got secretName=\"s1\", cloudName=\"\""`,
			`got secretName=a number, cloudName=\"c1\"`,
			`cr=<unnamed> from=CR reason="metadata is missing or not an object"`,
			`cr=ns/status-string from=CR reason="status is a string, not an object"`,
			`cr=ns/generation-string from=CR reason="metadata.generation is a string, not an integer"`,
			`cr=ns/finalizers-string from=CR reason="metadata.finalizers is a string, not a list"`,
			`cr=ns/deletion-number from=CR reason="metadata.deletionTimestamp is a number, not a string"`,
			`cr=ns/<unnamed> from=CR reason="metadata.name is a number, not a string"`,
			`cr=<unnamed> from=CR reason="the object is a string, not an object"`,
		}},
	{fixture: "unreadable-event-and-snapshot", desired: []string{"a:1"}, unreadable: []string{"ns/gone", "openstack/legacy"},
		logs: []string{`cr=openstack/legacy from="Added CR" reason="spec.cloudCredentialsRef is missing or not an object"`,
			`cr=ns/gone from="Deleted CR" reason="spec.cloudCredentialsRef is missing or not an object"`,
			`cr=openstack/legacy from=CR reason="spec.cloudCredentialsRef`}},
	{fixture: "deleted-dedupe", desired: []string{"a:1"}, deleted: []string{"t:7", "t:8"}, creds: []string{s1, s2}},
	// docs/contract.md Decision 4: the credential group carries the CR's namespace, else POD_NAMESPACE, else "openstack".
	{fixture: "cluster-scoped", podNamespace: "pods", reconcile: []string{"k:1"}, desired: []string{"k:1"}, creds: []string{"pods/s1/c1"}},
	{fixture: "cluster-scoped", reconcile: []string{"k:1"}, desired: []string{"k:1"}, creds: []string{"openstack/s1/c1"}},
	// Lifecycle: the progress binding runs only Progressing CRs and plans no prune; a terminal
	// failure of the current generation is not retried.
	{fixture: "progress-run", progress: true, reconcile: []string{"a:1"}, desired: []string{"a:1", "b:1", "c:1", "f:1"},
		deleted: []string{"d:1"}},
	{fixture: "progress-with-periodic", reconcile: []string{"a:1", "b:1", "c:1", "f:1"}, desired: []string{"a:1", "b:1", "c:1", "f:1"},
		deleted: []string{"d:1", "e:1"}, creds: []string{s1}},
	{fixture: "terminal-skip", reconcile: []string{"b:1", "c:1", "d:1", "e:1", "h:1"},
		desired: []string{"a:1", "b:1", "c:1", "d:1", "e:1", "g:1", "h:1"}, creds: []string{s1},
		logs: []string{`name=alpha generation=2 reason=InvalidConfiguration`,
			`name=golf generation=2 reason=UnrecoverableError`}},
	{fixture: "event-lifecycle", reconcile: []string{"c:3"}, desired: []string{"a:2", "b:1", "c:3"}, creds: []string{s1},
		logs: []string{`name=alpha generation=1 sync_status=Progressing`,
			`name=bravo generation=2 reason=InvalidConfiguration`}},
	{fixture: "sort-stable", reconcile: []string{"noname:1", "y:1", "x2:1", "x1:2"}, desired: []string{"noname:1", "y:1", "x2:1", "x1:2"},
		creds: []string{s1}},
}

func names(rs []*resource.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name+":"+r.ResourceVersion)
	}
	return out
}

// TestPlanTable plans every fixture as it is, and as shell-operator hands it over with the hook
// configuration's own jqFilter and keepFullObjectsInMemory: false (hookenv.ObjectFilter): each
// CR only as the filter's result. Every rule of docs/contract.md §2–§3 must plan the same from
// both, with the same log lines: the filter keeps everything the planner reads.
func TestPlanTable(t *testing.T) {
	for _, row := range planTable {
		raw, err := os.ReadFile(filepath.Join("testdata", row.fixture+".json"))
		require.NoError(t, err)
		for _, handed := range []struct {
			name string
			data []byte
		}{{"whole objects", raw}, {"filtered", filtered(t, raw)}} {
			t.Run(row.fixture+"/"+row.podNamespace+"/"+handed.name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "context.json")
				require.NoError(t, os.WriteFile(path, handed.data, 0o600))
				doc, err := bindingctx.Read(path)
				require.NoError(t, err)
				defer doc.Close()
				var logs bytes.Buffer
				plan, err := Build(doc.Contexts, Options{Binding: "widgets", Kind: "Widget", PodNamespace: row.podNamespace,
					ProgressBinding: "progress sync", Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
				if row.err != "" {
					require.EqualError(t, err, row.err)
					assert.True(t, bindingctx.IsError(err))
					return
				}
				require.NoError(t, err)
				assert.Equal(t, row.reconcile, names(plan.Reconcile), "reconcile")
				assert.Equal(t, row.desired, names(plan.Desired), "desired")
				assert.Equal(t, row.deleted, names(plan.Deleted), "deleted")
				var creds []string
				for _, c := range plan.PruneCredentials {
					creds = append(creds, plugintest.Group(c))
				}
				assert.Equal(t, row.creds, creds, "prune credentials")
				assert.Equal(t, row.unreadable, plan.Unreadable, "unreadable")
				assert.Equal(t, row.progress, plan.Progress, "progress run")
				for _, l := range row.logs {
					assert.Contains(t, logs.String(), l)
				}
				for _, l := range row.notLogs {
					assert.NotContains(t, logs.String(), l)
				}
			})
		}
	}
}

// filtered is a fixture as shell-operator v1.20 writes it for the hook's own watch: every CR (an
// event's, a snapshot item's, a Synchronization object) replaced by the jqFilter's result, the
// whole object left out. What shell-operator never sends for an API object (a null or a number
// where a CR is) stays as it is.
func filtered(t *testing.T, raw []byte) []byte {
	t.Helper()
	var doc []map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&doc))
	watch := shelloperator.KubernetesBinding{JQFilter: hookenv.ObjectFilter, KeepFullObjectsInMemory: new(bool)}
	item := func(v any) any {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		if o, ok := m["object"]; ok {
			cr, ok := o.(map[string]any)
			if !ok {
				return v
			}
			m = cr
		}
		return shelloperator.Item(watch, m)
	}
	items := func(v any) any {
		l, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(l))
		for i, it := range l {
			out[i] = item(it)
		}
		return out
	}
	for _, c := range doc {
		if o, ok := c["object"].(map[string]any); ok && len(o) > 0 {
			delete(c, "object")
			for k, v := range shelloperator.Item(watch, o) {
				c[k] = v
			}
		}
		if _, ok := c["objects"]; ok {
			c["objects"] = items(c["objects"])
		}
		if snaps, ok := c["snapshots"].(map[string]any); ok {
			for name, l := range snaps {
				snaps[name] = items(l)
			}
		}
	}
	out, err := json.Marshal(doc)
	require.NoError(t, err)
	require.NotContains(t, string(out), `"object":{"`, "no whole object is left")
	return out
}

// Plugins never see the credentials reference, and the CR's own copy is untouched.
func TestSpecWithoutCredentials(t *testing.T) {
	doc, err := bindingctx.Read(filepath.Join("testdata", "event-added.json"))
	require.NoError(t, err)
	defer doc.Close()
	plan, err := Build(doc.Contexts, Options{Binding: "widgets", Kind: "Widget", Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.Len(t, plan.Reconcile, 1)
	assert.JSONEq(t, `{"name": "alpha"}`, string(plan.Reconcile[0].Spec))
	obj, err := doc.Contexts[0].Object()
	require.NoError(t, err)
	assert.Contains(t, obj.(map[string]any)["spec"], "cloudCredentialsRef")
}
