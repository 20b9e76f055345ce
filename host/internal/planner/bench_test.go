package planner

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
)

// BenchmarkPlanSynchronization plans a start-up batch of 2000 CRs over 20 credential groups, the
// largest batch a hook is expected to see.
func BenchmarkPlanSynchronization(b *testing.B) {
	var objects []any
	for i := range 2000 {
		objects = append(objects, map[string]any{"object": map[string]any{
			"apiVersion": "example.openstack-sync.io/v1alpha1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("w%04d", i), "namespace": "ns", "uid": fmt.Sprintf("u%d", i),
				"resourceVersion": "1", "generation": 1},
			"spec": map[string]any{"name": fmt.Sprintf("widget-%04d", 1999-i), "size": i,
				"cloudCredentialsRef": map[string]any{"secretName": fmt.Sprintf("s%d", i%20), "cloudName": "c"}},
		}})
	}
	data, err := json.Marshal([]any{map[string]any{"binding": "widgets", "type": "Synchronization", "objects": objects}})
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Binding: "widgets", Kind: "Widget", Log: slog.New(slog.DiscardHandler)}
	b.ReportAllocs()
	for b.Loop() {
		doc, err := bindingctx.Parse(data)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := Build(doc.Contexts, opts)
		if err != nil || len(plan.Reconcile) != 2000 || len(plan.PruneCredentials) != 20 {
			b.Fatalf("plan: %v", err)
		}
	}
}
