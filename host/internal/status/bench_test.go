package status

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
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

// BenchmarkIsCurrentLifecycle is the check a converged lifecycle CR costs (segment ranges,
// router flavors): its status, resource included, is current.
func BenchmarkIsCurrentLifecycle(b *testing.B) {
	// The resource as a plugin's answer decodes it (float64), the stored status as the binding
	// context holds it (json.Number).
	var res map[string]any
	if err := json.Unmarshal([]byte(`{"id":"6a3c1f0e-8d7b-4a55-9c0e-1b2f3a4d5e6f","name":"physnet1-range-0042",
		"network_type":"vlan","physical_network":"physnet1","minimum":100,"maximum":199,"shared":false,
		"project_id":"","default":false,"tags":["openstack-sync"],"revision_number":1,"available":[],"used":{}}`), &res); err != nil {
		b.Fatal(err)
	}
	o := Outcome{Synced: true, Message: "Successfully reconciled segment range",
		Lifecycle: &Lifecycle{ID: "6a3c1f0e-8d7b-4a55-9c0e-1b2f3a4d5e6f", Resource: res, Available: "True", Reason: ReasonSuccess}}
	g := int64(1)
	raw, err := json.Marshal(Body(o, &g, nil, time.Unix(0, 0))["status"])
	if err != nil {
		b.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var current map[string]any
	if err := dec.Decode(&current); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !IsCurrent(o, &g, current) {
			b.Fatal("not current")
		}
	}
}
