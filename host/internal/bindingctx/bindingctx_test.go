package bindingctx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		content *string
		count   int
		err     string
	}{
		{name: "missing file", err: "failed to read binding context: open "},
		{name: "empty", content: ptr(""), count: 0},
		{name: "blank", content: ptr(" \n\t "), count: 0},
		{name: "empty list", content: ptr("[]"), count: 0},
		{name: "two", content: ptr(`[{"binding":"b","type":"Schedule"},{"binding":"b","type":"Event"}]`), count: 2},
		{name: "not json", content: ptr("[{"), err: "failed to parse binding context: "},
		{name: "object", content: ptr(`{"binding":"b"}`), err: "failed to parse binding context: Shell-operator binding context must be a list"},
		{name: "trailing", content: ptr(`[] []`), err: "failed to parse binding context: unexpected data after the top-level value"},
		{name: "item not object", content: ptr(`[{}, 3]`), err: "failed to parse binding context: item 1 is not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ctx.json")
			if tt.content != nil {
				require.NoError(t, os.WriteFile(path, []byte(*tt.content), 0o600))
			}
			got, err := Read(path)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				assert.True(t, IsError(err))
				return
			}
			require.NoError(t, err)
			defer got.Close()
			assert.Len(t, got.Contexts, tt.count)
		})
	}
	got, err := Read("")
	require.NoError(t, err)
	assert.Empty(t, got.Contexts, "an unset BINDING_CONTEXT_PATH means no contexts")
	assert.NoError(t, got.Close())
}

func ptr(s string) *string { return &s }

// A snapshot item's CR is its object; without one (keepFullObjectsInMemory: false) the result of
// the host's jqFilter; without either, the item itself.
func TestSnapshotItemsUnwrap(t *testing.T) {
	doc, err := Parse([]byte(`[{"binding":"w","type":"Schedule","snapshots":{"w":[
		{"object":{"metadata":{"name":"wrapped"}},"filterResult":null},
		{"filterResult":{"metadata":{"name":"filtered","managedFields":[{"manager":"m"}]}}},
		{"filterResult":{"metadata":{"name":"not this"}},"object":{"metadata":{"name":"the object wins"}}},
		{"metadata":{"name":"bare"}},
		{"object":null}]}}]`))
	require.NoError(t, err)
	l, err := FullSnapshot(doc.Contexts, "w")
	require.NoError(t, err)
	assert.Equal(t, 5, l.Len())
	items, err := l.All()
	require.NoError(t, err)
	assert.Equal(t, []any{
		map[string]any{"metadata": map[string]any{"name": "wrapped"}},
		map[string]any{"metadata": map[string]any{"name": "filtered"}},
		map[string]any{"metadata": map[string]any{"name": "the object wins"}},
		map[string]any{"metadata": map[string]any{"name": "bare"}},
		nil,
	}, items)
}

// An Event's CR is its object, else the filter's result; an empty or null one is none.
func TestEventObject(t *testing.T) {
	for doc, want := range map[string]any{
		`[{"type":"Event","object":{"metadata":{"name":"a","managedFields":[1]}}}]`:                      map[string]any{"metadata": map[string]any{"name": "a"}},
		`[{"type":"Event","filterResult":{"metadata":{"name":"f"}}}]`:                                    map[string]any{"metadata": map[string]any{"name": "f"}},
		`[{"type":"Event","filterResult":{"metadata":{"name":"f"}},"object":{"metadata":{"name":"o"}}}]`: map[string]any{"metadata": map[string]any{"name": "o"}},
		`[{"type":"Event","object":{}}]`:                                                                 nil,
		`[{"type":"Event","object":null,"filterResult":""}]`:                                             nil,
		`[{"type":"Event"}]`:                 nil,
		`[{"type":"Event","object":"text"}]`: "text",
		`[{"type":"Event","object":{"metadata":{"name":"first"}},"object":{"metadata":{"name":"last"}}}]`: map[string]any{"metadata": map[string]any{"name": "last"}},
	} {
		d, err := Parse([]byte(doc))
		require.NoError(t, err, doc)
		got, err := d.Contexts[0].Object()
		require.NoError(t, err)
		assert.Equal(t, want, got, doc)
	}
}

// The snapshot objects lose metadata.managedFields, which the framework never reads and which
// made a snapshot of 5,000 CRs cost hundreds of MiB; everything else the planner reads of every
// context is what the generic decoding of the document gives (docs/benchmarks.md, "Host-side costs").
func TestManagedFieldsAreNotKept(t *testing.T) {
	for _, path := range fixtures(t) {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		want := referenceView(t, raw)
		got, err := Read(path)
		require.NoError(t, err, path)
		assert.Equal(t, want, view(t, got), path)
		assert.NotContains(t, fmt.Sprint(view(t, got)), "manager:", path)
		got.Close()
	}
	got, err := Read("testdata/managed-fields.json")
	require.NoError(t, err)
	defer got.Close()
	event, err := got.Contexts[0].Object()
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"name": "a", "generation": json.Number("2"), "labels": map[string]any{"team": "metal"}},
		event.(map[string]any)["metadata"], "the rest of the metadata is kept")
	l, err := FullSnapshot(got.Contexts, "widgets")
	require.NoError(t, err)
	items, err := l.All()
	require.NoError(t, err)
	require.Len(t, items, 3)
	assert.Equal(t, map[string]any{"name": "bare"}, items[1].(map[string]any)["metadata"])
	_, err = FullSnapshot(got.Contexts[2:], "sched")
	assert.ErrorContains(t, err, "does not contain sched", "a malformed context is kept for the planner to refuse")
	_, ok, err := got.Contexts[0].snapshot("other")
	assert.True(t, ok)
	assert.EqualError(t, err, "Snapshot other must be a list")
}

func fixtures(t testing.TB) []string {
	paths, err := filepath.Glob("../planner/testdata/*.json")
	require.NoError(t, err)
	return append(paths, "testdata/managed-fields.json")
}

// recording is a document source that records which bytes were read again.
type recording struct {
	*bytes.Reader
	mu    sync.Mutex
	reads [][2]int64
}

func (r *recording) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	r.reads = append(r.reads, [2]int64{off, off + int64(len(p))})
	r.mu.Unlock()
	return r.Reader.ReadAt(p, off)
}

// A batch of events carries the whole snapshot in every context (shell-operator attaches it to
// each); planning reads one, so only that one's CRs are ever decoded, one at a time.
func TestOnlyTheSnapshotReadIsDecoded(t *testing.T) {
	var contexts []any
	for i := range 10 {
		var items []any
		for j := range 50 {
			items = append(items, map[string]any{"object": map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("cr-%d-%d", i, j)}}})
		}
		contexts = append(contexts, map[string]any{"binding": "w", "type": "Event", "watchEvent": "Modified",
			"object":    map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("event-%d", i)}},
			"snapshots": map[string]any{"w": items}})
	}
	data, err := json.Marshal(contexts)
	require.NoError(t, err)
	src := &recording{Reader: bytes.NewReader(data)}
	d := &indexer{scanner{buf: data, done: true, keys: map[string]string{}}}
	cs, ok := d.index()
	require.True(t, ok)
	doc := newDocument(cs, src, nil)
	assert.Empty(t, src.reads, "indexing decodes no object")

	l, err := EventSnapshot(doc.Contexts, "w")
	require.NoError(t, err)
	var names []string
	require.NoError(t, l.Each(func(o any) {
		names = append(names, o.(map[string]any)["metadata"].(map[string]any)["name"].(string))
	}))
	require.Len(t, names, 50)
	assert.Equal(t, "cr-9-0", names[0], "the last event's snapshot")
	require.Len(t, src.reads, 50, "one read per CR of that snapshot, none of the nine others")
	last := bytes.Index(data, []byte(`"event-9"`))
	require.Positive(t, last)
	for _, r := range src.reads {
		assert.GreaterOrEqual(t, r[0], int64(last), "a read of another context's snapshot")
	}
}

// The document's file stays open for the CRs until Close.
func TestListReadsTheFileUntilClosed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctx.json")
	require.NoError(t, os.WriteFile(path, []byte(`[{"binding":"w","type":"Schedule","snapshots":{"w":[{"object":{"metadata":{"name":"a"}}}]}}]`), 0o600))
	doc, err := Read(path)
	require.NoError(t, err)
	l, err := FullSnapshot(doc.Contexts, "w")
	require.NoError(t, err)
	items, err := l.All()
	require.NoError(t, err)
	assert.Len(t, items, 1)
	require.NoError(t, doc.Close())
	_, err = l.All()
	assert.ErrorContains(t, err, "failed to read binding context")
	assert.True(t, IsError(err))
}

// A takeover plans a full pass from the newest context's snapshots.
func TestNewContextCarriesTheSnapshots(t *testing.T) {
	for _, doc := range []string{
		`[{"binding":"w","type":"Event","snapshots":{"w":[{"object":{"metadata":{"name":"a"}}}]}}]`,
		`[{"binding":"w","type":"Event","snapshots":{"w":[{"object":{"metadata":{"name":"a"}}}]},"deep":` + strings.Repeat("[", maxScanDepth+5) + strings.Repeat("]", maxScanDepth+5) + `}]`,
	} {
		d, err := Parse([]byte(doc))
		require.NoError(t, err)
		require.True(t, d.Contexts[0].HasSnapshot("w"))
		assert.False(t, d.Contexts[0].HasSnapshot("x"))
		c := NewContext("lease", TypeSchedule, d.Contexts[0])
		assert.Equal(t, "lease", c.Binding())
		assert.Equal(t, TypeSchedule, c.Type())
		l, err := FullSnapshot([]Context{c}, "w")
		require.NoError(t, err)
		items, err := l.All()
		require.NoError(t, err)
		assert.Equal(t, []any{map[string]any{"metadata": map[string]any{"name": "a"}}}, items)
	}
}

func TestAnySyncStatus(t *testing.T) {
	for doc, want := range map[string]bool{
		`[{"snapshots":{"w":[{"object":{"status":{"syncStatus":"Synced"}}},{"object":{"status":{"syncStatus":"Progressing"}}}]}}]`: true,
		`[{"snapshots":{"w":[{"filterResult":{"status":{"syncStatus":"Progressing"}}}]}}]`:                                         true,
		`[{"snapshots":{"w":[{"object":{"status":{"syncStatus":"Synced"}}}]}}]`:                                                    false,
		`[{"snapshots":{"w":[{"object":"unreadable"}]}}]`:                                                                          true,
		`[{"snapshots":{"w":"not a list"}}]`:                                                                                       true,
		`[{"objects":[{"object":{"status":{"syncStatus":"Progressing"}}}]}]`:                                                       false,
	} {
		d, err := Parse([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, want, AnySyncStatus(d.Contexts, "Progressing"), doc)
	}
}

// ctxView is what the planner can read of a context.
type ctxView struct {
	Binding, Type, WatchEvent string
	Object                    any
	Objects                   any
	Snapshots                 map[string]any
}

// view reads everything of a document through the API the planner uses.
func view(t testing.TB, doc *Document) []ctxView {
	t.Helper()
	out := []ctxView{}
	list := func(l *List, err error) any {
		if err != nil {
			return "error: " + err.Error()
		}
		if l == nil {
			return nil
		}
		items, err := l.All()
		require.NoError(t, err)
		return items
	}
	for _, c := range doc.Contexts {
		v := ctxView{Binding: c.Binding(), Type: c.Type(), WatchEvent: c.WatchEvent()}
		o, err := c.Object()
		require.NoError(t, err)
		v.Object = o
		if c.decoded == nil && c.objects != nil || c.decoded != nil && c.decoded.objects != nil {
			v.Objects = list(c.syncObjects())
		}
		var names []string
		if c.decoded != nil {
			for name := range c.decoded.snapshots {
				names = append(names, name)
			}
		}
		for name := range c.snapshots {
			names = append(names, name)
		}
		if len(names) > 0 {
			v.Snapshots = map[string]any{}
		}
		for _, name := range names {
			l, _, err := c.snapshot(name)
			v.Snapshots[name] = list(l, err)
		}
		out = append(out, v)
	}
	return out
}

// referenceView is what the planner reads of the document as encoding/json decodes it whole.
func referenceView(t testing.TB, raw []byte) []ctxView {
	t.Helper()
	generic, err := decodeGeneric(bytes.NewReader(raw))
	require.NoError(t, err)
	out := []ctxView{}
	list := func(v any, what string) any {
		l, ok := v.([]any)
		if !ok {
			return "error: " + what + " must be a list"
		}
		return unwrap(l)
	}
	for _, g := range generic {
		str := func(k string) string { s, _ := g[k].(string); return s }
		v := ctxView{Binding: str("binding"), Type: str("type"), WatchEvent: str("watchEvent")}
		if o, ok := g["object"]; ok {
			v.Object = o
		} else {
			v.Object = withoutManagedFields(g["filterResult"])
		}
		if m, ok := v.Object.(map[string]any); ok && len(m) == 0 {
			v.Object = nil
		}
		if g["objects"] != nil {
			v.Objects = list(g["objects"], "Synchronization "+v.Binding+" objects")
		}
		if snaps, ok := g["snapshots"].(map[string]any); ok && len(snaps) > 0 {
			v.Snapshots = map[string]any{}
			for name, l := range snaps {
				v.Snapshots[name] = list(l, "Snapshot "+name)
			}
		}
		out = append(out, v)
	}
	return out
}

// BenchmarkRead5000 reads a Schedule context of 5,000 CRs as the API server returns them and
// decodes each CR of the snapshot in turn, as planning does.
func BenchmarkRead5000(b *testing.B) {
	path := filepath.Join(b.TempDir(), "ctx.json")
	var items []any
	for i := range 5000 {
		items = append(items, map[string]any{"object": benchObject(i), "filterResult": nil})
	}
	raw, err := json.Marshal([]any{map[string]any{"binding": "periodic sync", "type": "Schedule",
		"snapshots": map[string]any{"runbooks": items}}})
	require.NoError(b, err)
	require.NoError(b, os.WriteFile(path, raw, 0o600))
	b.ReportMetric(float64(len(raw))/5000, "file-bytes/CR")
	for b.Loop() {
		doc, err := Read(path)
		if err != nil {
			b.Fatal(err)
		}
		l, err := FullSnapshot(doc.Contexts, "runbooks")
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := l.Each(func(any) { n++ }); err != nil || n != 5000 {
			b.Fatal(n, err)
		}
		doc.Close()
	}
}

func benchObject(i int) map[string]any {
	managed := []any{}
	for _, m := range []string{"openstack-sync", "kubectl-client-side-apply", "openstack-sync-status"} {
		managed = append(managed, map[string]any{"manager": m, "operation": "Update", "apiVersion": "v1",
			"time": "2026-12-01T08:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{
				"f:metadata": map[string]any{"f:finalizers": map[string]any{".": map[string]any{}, "v:\"openstack-sync.io/finalizer\"": map[string]any{}}},
				"f:status": map[string]any{".": map[string]any{}, "f:conditions": map[string]any{}, "f:syncStatus": map[string]any{},
					"f:observedGeneration": map[string]any{}, "f:lastSyncTime": map[string]any{}},
				"f:spec": map[string]any{".": map[string]any{}, "f:runbookName": map[string]any{}, "f:steps": map[string]any{},
					"f:traits": map[string]any{}, "f:cloudCredentialsRef": map[string]any{".": map[string]any{}, "f:secretName": map[string]any{}}}}})
	}
	return map[string]any{"apiVersion": "ironic.openstack-sync.io/v1alpha1", "kind": "IronicRunbook",
		"metadata": map[string]any{"name": fmt.Sprintf("bench-%05d", i), "namespace": "bench", "uid": "0d3c7a6e-5d0e-4bd7-9e6a-6f1c2e7f8a90",
			"resourceVersion": "123456", "generation": 1, "finalizers": []any{"openstack-sync.io/finalizer"},
			"creationTimestamp": "2026-12-01T08:00:00Z", "managedFields": managed},
		"spec": map[string]any{"runbookName": fmt.Sprintf("CUSTOM_BENCH_%05d", i), "traits": []any{"CUSTOM_X"},
			"cloudCredentialsRef": map[string]any{"secretName": "s", "cloudName": "c"},
			"steps":               []any{map[string]any{"interface": "bios", "step": "apply_configuration", "order": 10}}},
		"status": map[string]any{"syncStatus": "Synced", "observedGeneration": 1, "lastSyncTime": "2026-12-01T08:00:00Z",
			"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Synced", "message": "ok",
				"lastTransitionTime": "2026-12-01T08:00:00Z", "observedGeneration": 1}}}}
}
