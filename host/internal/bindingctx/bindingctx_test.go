package bindingctx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
			assert.Len(t, got, tt.count)
		})
	}
	got, err := Read("")
	require.NoError(t, err)
	assert.Empty(t, got, "an unset BINDING_CONTEXT_PATH means no contexts")
}

func ptr(s string) *string { return &s }

func TestSnapshotItemsUnwrap(t *testing.T) {
	ctxs, err := Parse([]byte(`[{"binding":"w","type":"Schedule","snapshots":{"w":[
		{"object":{"metadata":{"name":"wrapped"}},"filterResult":null},
		{"metadata":{"name":"bare"}},
		{"object":null}]}}]`))
	require.NoError(t, err)
	items, err := FullSnapshot(ctxs, "w")
	require.NoError(t, err)
	assert.Equal(t, []any{
		map[string]any{"metadata": map[string]any{"name": "wrapped"}},
		map[string]any{"metadata": map[string]any{"name": "bare"}},
		nil,
	}, items)
}

// The snapshot objects lose metadata.managedFields, which the framework never reads and which
// made a snapshot of 5,000 CRs cost hundreds of MiB; everything else of every context reads as
// the generic decoding of the document would (docs/benchmarks.md, "Host-side costs").
func TestManagedFieldsAreNotKept(t *testing.T) {
	fixtures, err := filepath.Glob("../planner/testdata/*.json")
	require.NoError(t, err)
	fixtures = append(fixtures, "testdata/managed-fields.json")
	for _, path := range fixtures {
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		want := genericWithoutManagedFields(t, raw)
		got, err := Read(path)
		require.NoError(t, err, path)
		assert.Equal(t, want, got, path)
		assert.NotContains(t, fmt.Sprint(got), "manager:", path)
	}
	got, err := Read("testdata/managed-fields.json")
	require.NoError(t, err)
	event := got[0]["object"].(map[string]any)
	assert.Equal(t, map[string]any{"name": "a", "generation": json.Number("2"), "labels": map[string]any{"team": "metal"}},
		event["metadata"], "the rest of the metadata is kept")
	items, err := FullSnapshot(got, "widgets")
	require.NoError(t, err)
	require.Len(t, items, 3)
	assert.Equal(t, map[string]any{"name": "bare"}, items[1].(map[string]any)["metadata"])
	_, err = FullSnapshot(got[2:], "sched")
	assert.ErrorContains(t, err, "does not contain sched", "a malformed context is kept for the planner to refuse")
	assert.Equal(t, "not a list", got[0]["snapshots"].(map[string]any)["other"])
}

// genericWithoutManagedFields is the document decoded whole, as Parse did before, with the
// managed fields of every snapshot object, Synchronization object and event object removed.
func genericWithoutManagedFields(t *testing.T, raw []byte) []Context {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc []map[string]any
	require.NoError(t, dec.Decode(&doc))
	drop := func(v any) {
		if m, ok := v.(map[string]any); ok {
			if md, ok := m["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
		}
	}
	dropItems := func(v any) {
		list, _ := v.([]any)
		for _, it := range list {
			drop(it)
			if m, ok := it.(map[string]any); ok {
				drop(m["object"])
			}
		}
	}
	out := make([]Context, 0, len(doc))
	for _, c := range doc {
		drop(c["object"])
		dropItems(c["objects"])
		if snaps, ok := c["snapshots"].(map[string]any); ok {
			for _, v := range snaps {
				dropItems(v)
			}
		}
		out = append(out, Context(c))
	}
	return out
}

// BenchmarkRead5000 reads a Schedule context of 5,000 CRs as the API server returns them.
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
		if _, err := Read(path); err != nil {
			b.Fatal(err)
		}
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
