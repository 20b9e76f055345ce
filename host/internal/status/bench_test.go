package status

import (
	"bytes"
	"encoding/json"
	"testing"
)

// BenchmarkIsCurrentConverged is the check a converged CR costs: its status is current.
func BenchmarkIsCurrentConverged(b *testing.B) {
	dec := json.NewDecoder(bytes.NewReader([]byte(`{"syncStatus":"Synced","lastSyncTime":"2026-12-01T08:00:00Z",
		"message":"Successfully reconciled runbook; needs manual action: traits CUSTOM_BENCH_00001 are not applied",
		"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"Reconciled",
		"message":"Successfully reconciled runbook; needs manual action: traits CUSTOM_BENCH_00001 are not applied",
		"observedGeneration":1,"lastTransitionTime":"2026-12-01T08:00:00Z"}]}`)))
	dec.UseNumber()
	var current map[string]any
	if err := dec.Decode(&current); err != nil {
		b.Fatal(err)
	}
	o := Outcome{Synced: true, Message: SyncedMessage("runbook", []string{"traits CUSTOM_BENCH_00001 are not applied"})}
	g := int64(1)
	b.ReportAllocs()
	for b.Loop() {
		if !IsCurrent(o, &g, current) {
			b.Fatal("not current")
		}
	}
}
