package status

import (
	"bytes"
	"encoding/json"
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
		IsCurrent(o, &g, current)
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
