package status

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
	"time"
)

// FuzzCurrentStatus reads arbitrary JSON as the status a CR carries: deciding whether it is
// current and building the patch body never panic, and the body it builds is itself current.
func FuzzCurrentStatus(f *testing.F) {
	for _, seed := range []string{
		`{"syncStatus":"Synced","message":"m","observedGeneration":3,"conditions":[{"type":"Ready","status":"True","reason":"Reconciled","message":"m","observedGeneration":3,"lastTransitionTime":"t"}]}`,
		`{"syncStatus":{},"message":[],"conditions":{"type":"Ready"}}`,
		`{"conditions":[null,1,{"type":"Ready","status":{},"lastTransitionTime":7}],"prefixes":null}`,
		`{"info":{"a":{"b":null}}}`,
	} {
		f.Add([]byte(seed), "m", true)
	}
	f.Fuzz(func(t *testing.T, data []byte, message string, synced bool) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var current map[string]any
		if dec.Decode(&current) != nil {
			return
		}
		o := Outcome{Synced: synced, Message: message, Extra: map[string]any{"info": current["info"]}}
		g := int64(3)
		for _, c := range []struct {
			o   Outcome
			gen *int64
		}{{o, &g}, {o, nil}, {Outcome{Message: message, Reason: "Quota"}, &g},
			{Outcome{Synced: synced, Message: message, Lifecycle: &Lifecycle{Available: "Unknown", Reason: ReasonProgressing, Message: message}}, &g},
			{Outcome{Synced: synced, Message: message, Lifecycle: &Lifecycle{Available: "True", Reason: ReasonSuccess}}, &g}} {
			if got, want := IsCurrent(c.o, c.gen, current), isCurrentByConditionMaps(c.o, c.gen, current); got != want {
				t.Fatalf("IsCurrent %v, the comparison of every condition map %v: %+v on %s", got, want, c.o, data)
			}
		}
		body, err := json.Marshal(Body(o, &g, current, time.Unix(0, 0)))
		if err != nil {
			t.Fatalf("marshal body: %v", err)
		}
		var written struct {
			Status map[string]any `json:"status"`
		}
		dec = json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&written); err != nil {
			t.Fatal(err)
		}
		if !IsCurrent(o, &g, written.Status) && !hasNull(o.Extra["info"]) {
			t.Fatalf("the status just written is not current: %s", body)
		}
	})
}

// hasNull reports a null anywhere in v: a merge patch deletes such keys, so the body alone (before
// the API server applies it) does not hold them as the stored status would.
func hasNull(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		for _, e := range x {
			if hasNull(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasNull(e) {
				return true
			}
		}
	}
	return false
}

// isCurrentByConditionMaps is IsCurrent as it was before it compared conditions field by field:
// each desired condition built as the map Body writes, each of its keys compared by equalJSON.
func isCurrentByConditionMaps(o Outcome, generation *int64, current map[string]any) bool {
	if len(current) == 0 || current["syncStatus"] != o.syncStatus() || current["message"] != o.message() {
		return false
	}
	if generation != nil && !equalJSON(current["observedGeneration"], *generation) {
		return false
	}
	for _, cond := range o.conditions(generation) {
		old := findCondition(current, cond["type"].(string))
		if old == nil {
			return false
		}
		for k, want := range cond {
			if have, ok := old[k]; !ok || !equalJSON(have, want) {
				return false
			}
		}
	}
	// The rest (lifecycle id and resource, extra keys) is unchanged: compare it through IsCurrent
	// with the conditions made current.
	withConds := maps.Clone(current)
	var conds []any
	for _, cond := range o.conditions(generation) {
		conds = append(conds, map[string]any(cond))
	}
	withConds["conditions"] = conds
	return IsCurrent(o, generation, withConds)
}
