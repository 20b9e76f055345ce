package status

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apply merges a Body into a status as the API server's merge patch does, and reads it back as
// the planner would (json.Number), so a test can run the next pass on what was stored.
func apply(t *testing.T, current map[string]any, body map[string]any) map[string]any {
	t.Helper()
	merged := mergePatch(current, body["status"].(map[string]any))
	raw, err := json.Marshal(merged)
	require.NoError(t, err)
	return fromJSON(t, string(raw))
}

func mergePatch(dst map[string]any, patch map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range dst {
		out[k] = v
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			old, _ := out[k].(map[string]any)
			out[k] = mergePatch(old, pv)
		default:
			out[k] = v
		}
	}
	return out
}

func TestLifecycleBody(t *testing.T) {
	tests := []struct {
		name    string
		outcome Outcome
		current string
		want    string
	}{{
		name: "success: id, resource and both conditions",
		outcome: Outcome{Synced: true, Message: "Successfully reconciled widget",
			Lifecycle: &Lifecycle{ID: "r1", Resource: map[string]any{"name": "a"}, Available: "True", Reason: ReasonSuccess}},
		want: `{"status":{"syncStatus":"Synced","lastSyncTime":"` + stamp + `","message":"Successfully reconciled widget","observedGeneration":2,
			"id":"r1","resource":{"name":"a"},"conditions":[
			{"type":"Ready","status":"True","reason":"Reconciled","message":"Successfully reconciled widget","observedGeneration":2,"lastTransitionTime":"` + stamp + `"},
			{"type":"Available","status":"True","reason":"Success","message":"The OpenStack resource is available","observedGeneration":2,"lastTransitionTime":"` + stamp + `"},
			{"type":"Progressing","status":"False","reason":"Success","message":"The OpenStack resource is up to date","observedGeneration":2,"lastTransitionTime":"` + stamp + `"}]}}`,
	}, {
		name: "progressing: syncStatus Progressing, Progressing True; old resource keys are deleted",
		outcome: Outcome{Message: "waiting for ACTIVE", Reason: ReasonProgressing,
			Lifecycle: &Lifecycle{ID: "r1", Resource: map[string]any{"state": "BUILD"}, Available: "False", Reason: ReasonProgressing, Message: "waiting for ACTIVE"}},
		current: `{"resource":{"state":"ERROR","fault":"x"},"conditions":[{"type":"Available","status":"False","lastTransitionTime":"2020-01-01T00:00:00Z"}]}`,
		want: `{"status":{"syncStatus":"Progressing","lastSyncTime":"` + stamp + `","message":"waiting for ACTIVE","observedGeneration":2,
			"id":"r1","resource":{"state":"BUILD","fault":null},"conditions":[
			{"type":"Ready","status":"False","reason":"Progressing","message":"waiting for ACTIVE","observedGeneration":2,"lastTransitionTime":"` + stamp + `"},
			{"type":"Available","status":"False","reason":"Progressing","message":"waiting for ACTIVE","observedGeneration":2,"lastTransitionTime":"2020-01-01T00:00:00Z"},
			{"type":"Progressing","status":"True","reason":"Progressing","message":"waiting for ACTIVE","observedGeneration":2,"lastTransitionTime":"` + stamp + `"}]}}`,
	}, {
		name: "terminal: Failed, Progressing False, no id keeps the recorded one",
		outcome: Outcome{Message: "spec.import.id: widget x does not exist", Reason: ReasonUnrecoverableError,
			Lifecycle: &Lifecycle{Available: "False", Reason: ReasonUnrecoverableError, Message: "spec.import.id: widget x does not exist"}},
		want: `{"status":{"syncStatus":"Failed","lastSyncTime":"` + stamp + `","message":"spec.import.id: widget x does not exist","observedGeneration":2,
			"conditions":[
			{"type":"Ready","status":"False","reason":"UnrecoverableError","message":"spec.import.id: widget x does not exist","observedGeneration":2,"lastTransitionTime":"` + stamp + `"},
			{"type":"Available","status":"False","reason":"UnrecoverableError","message":"spec.import.id: widget x does not exist","observedGeneration":2,"lastTransitionTime":"` + stamp + `"},
			{"type":"Progressing","status":"False","reason":"UnrecoverableError","message":"spec.import.id: widget x does not exist","observedGeneration":2,"lastTransitionTime":"` + stamp + `"}]}}`,
	}, {
		name: "the plugin's extras cannot write id or resource",
		outcome: Outcome{Message: "503", Reason: ReasonTransientError, Extra: map[string]any{"id": "forged", "resource": "x", "other": 1},
			Lifecycle: &Lifecycle{Available: "Unknown", Reason: ReasonTransientError, Message: "503"}},
		want: `{"status":{"syncStatus":"Failed","lastSyncTime":"` + stamp + `","message":"503","observedGeneration":2,"other":1,
			"conditions":[
			{"type":"Ready","status":"False","reason":"TransientError","message":"503","observedGeneration":2,"lastTransitionTime":"` + stamp + `"},
			{"type":"Available","status":"Unknown","reason":"TransientError","message":"503","observedGeneration":2,"lastTransitionTime":"` + stamp + `"},
			{"type":"Progressing","status":"True","reason":"TransientError","message":"503","observedGeneration":2,"lastTransitionTime":"` + stamp + `"}]}}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var current map[string]any
			if tt.current != "" {
				current = fromJSON(t, tt.current)
			}
			body := Body(tt.outcome, gen(2), current, now)
			got, err := json.Marshal(body)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
			stored := apply(t, current, body)
			assert.True(t, IsCurrent(tt.outcome, gen(2), stored), "the written status is current on the next pass")
			assert.False(t, IsCurrent(tt.outcome, gen(3), stored), "a new generation is not")
		})
	}
}

func TestLifecycleIsCurrent(t *testing.T) {
	ok := Outcome{Synced: true, Message: "m", Lifecycle: &Lifecycle{ID: "r1", Resource: map[string]any{"a": "b"}, Available: "True", Reason: ReasonSuccess}}
	stored := apply(t, nil, Body(ok, gen(1), nil, now))
	change := func(f func(o *Outcome)) Outcome {
		o := ok
		l := *ok.Lifecycle
		o.Lifecycle = &l
		f(&o)
		return o
	}
	for name, o := range map[string]Outcome{
		"another id":          change(func(o *Outcome) { o.Lifecycle.ID = "r2" }),
		"another resource":    change(func(o *Outcome) { o.Lifecycle.Resource = map[string]any{"a": "c"} }),
		"a resource key gone": change(func(o *Outcome) { o.Lifecycle.Resource = map[string]any{} }),
		"not available":       change(func(o *Outcome) { o.Lifecycle.Available = "False" }),
	} {
		assert.False(t, IsCurrent(o, gen(1), stored), name)
	}
	assert.True(t, IsCurrent(change(func(o *Outcome) { o.Lifecycle.ID = ""; o.Lifecycle.Resource = nil }), gen(1), stored),
		"no id and no resource leave the recorded ones alone")
	plain := Outcome{Synced: true, Message: "m"}
	assert.False(t, IsCurrent(ok, gen(1), apply(t, nil, Body(plain, gen(1), nil, now))),
		"a status without the lifecycle conditions is not current for a lifecycle outcome")
	assert.True(t, IsCurrent(plain, gen(1), stored), "a plain outcome only looks at what it writes")
	assert.True(t, strings.Contains(stored["conditions"].([]any)[1].(map[string]any)["type"].(string), "Available"))
}

func TestTerminalReason(t *testing.T) {
	for r, want := range map[string]bool{ReasonInvalidConfiguration: true, ReasonUnrecoverableError: true,
		ReasonTransientError: false, ReasonProgressing: false, ReasonSuccess: false, "": false} {
		assert.Equal(t, want, TerminalReason(r), r)
	}
}
