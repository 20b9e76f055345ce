// Package status builds the CR status the hook writes (spec §6) and decides whether the status a
// CR already carries is current, so an unchanged outcome is never re-patched.
package status

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"time"
)

// Sync states and the Ready condition's default reasons.
const (
	Synced = "Synced"
	Failed = "Failed"

	ConditionReady        = "Ready"
	ReasonReconciled      = "Reconciled"
	ReasonFailedReconcile = "ReconcileError"

	// MaxMessage bounds a message so one verbose error cannot bloat the object.
	MaxMessage = 2048
)

// Outcome is what one run learned about one CR.
type Outcome struct {
	Synced  bool
	Message string
	// Reason names a failure (CamelCase); ignored when Synced.
	Reason string
	// Extra are the plugin's top-level status keys; the framework's own keys win on collision.
	Extra map[string]any
}

// SyncedMessage is the message of a successful reconcile.
func SyncedMessage(noun string, notes []string) string {
	m := "Successfully reconciled " + noun
	if len(notes) > 0 {
		m += "; needs manual action: " + strings.Join(notes, "; ")
	}
	return m
}

// Truncate shortens text to max characters, ending in "..." when cut.
func Truncate(text string, max int) string {
	r := []rune(text)
	if len(r) <= max {
		return text
	}
	return string(r[:max-3]) + "..."
}

// message is the text written to the CR. Invalid UTF-8 (a plain-text error from a plugin) is
// replaced before writing, so the stored text compares equal to it on the next run (§6.3).
func (o Outcome) message() string {
	return Truncate(strings.ToValidUTF8(o.Message, "\uFFFD"), MaxMessage)
}

func (o Outcome) syncStatus() string {
	if o.Synced {
		return Synced
	}
	return Failed
}

// condition is the desired Ready condition without its transition time.
func (o Outcome) condition(generation *int64) map[string]any {
	c := map[string]any{"type": ConditionReady, "status": "False", "message": o.message()}
	switch {
	case o.Synced:
		c["status"], c["reason"] = "True", ReasonReconciled
	case o.Reason != "":
		c["reason"] = o.Reason
	default:
		c["reason"] = ReasonFailedReconcile
	}
	if generation != nil {
		c["observedGeneration"] = *generation
	}
	return c
}

// Body is the merge-patch body {"status": {...}} for outcome o on a CR at generation; current is
// the status the CR carries now (it keeps the Ready condition's transition time), now the sync time.
func Body(o Outcome, generation *int64, current map[string]any, now time.Time) map[string]any {
	stamp := now.UTC().Format("2006-01-02T15:04:05Z")
	cond := o.condition(generation)
	cond["lastTransitionTime"] = stamp
	if old := readyCondition(current); old != nil && old["status"] == cond["status"] {
		if t, ok := old["lastTransitionTime"].(string); ok && t != "" {
			cond["lastTransitionTime"] = t
		}
	}
	s := maps.Clone(o.Extra)
	if s == nil {
		s = map[string]any{}
	}
	s["syncStatus"] = o.syncStatus()
	s["lastSyncTime"] = stamp
	s["message"] = o.message()
	s["conditions"] = []any{cond}
	delete(s, "observedGeneration")
	if generation != nil {
		s["observedGeneration"] = *generation
	}
	return map[string]any{"status": s}
}

// IsCurrent reports whether current already says everything Body would write, timestamps aside.
func IsCurrent(o Outcome, generation *int64, current map[string]any) bool {
	if len(current) == 0 || current["syncStatus"] != o.syncStatus() ||
		current["message"] != o.message() {
		return false
	}
	if generation != nil && !equalJSON(current["observedGeneration"], *generation) {
		return false
	}
	old := readyCondition(current)
	if old == nil {
		return false
	}
	for k, want := range o.condition(generation) {
		if have, ok := old[k]; !ok || !equalJSON(have, want) {
			return false
		}
	}
	for k, want := range o.Extra {
		if isOwnKey(k) {
			continue
		}
		w, err := normalize(want)
		if err != nil {
			return false
		}
		if have, ok := current[k]; !mergeKeeps(have, ok, w) {
			return false
		}
	}
	return true
}

// mergeKeeps reports whether merging want (normalized JSON) into a status field leaves it as it
// is, by the merge-patch rules the API server applies: null deletes a key, an object merges key by
// key, anything else replaces. A null extra value is therefore current when the key is absent;
// comparing it as a value would re-patch the status on every run.
func mergeKeeps(have any, present bool, want any) bool {
	switch w := want.(type) {
	case nil:
		return !present
	case map[string]any:
		h, ok := have.(map[string]any)
		if !present || !ok {
			return false
		}
		for k, v := range w {
			hv, hp := h[k]
			if !mergeKeeps(hv, hp, v) {
				return false
			}
		}
		return true
	default:
		return present && equalJSON(have, w)
	}
}

func isOwnKey(k string) bool {
	switch k {
	case "syncStatus", "lastSyncTime", "message", "conditions", "observedGeneration":
		return true
	}
	return false
}

func readyCondition(status map[string]any) map[string]any {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == ConditionReady {
			return m
		}
	}
	return nil
}

// equalJSON compares values as the API server would store them: the status read from a binding
// context holds json.Number while plugins produce Go ints, floats and structs.
func equalJSON(a, b any) bool {
	na, errA := normalize(a)
	nb, errB := normalize(b)
	return errA == nil && errB == nil && reflect.DeepEqual(na, nb)
}

func normalize(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}
