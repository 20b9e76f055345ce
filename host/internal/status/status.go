// Package status builds the CR status the hook writes (docs/contract.md §6) and decides whether the status a
// CR already carries is current, so an unchanged outcome is never re-patched.
package status

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// Sync states and the Ready condition's default reasons.
const (
	Synced = "Synced"
	Failed = "Failed"
	// Progressing is the syncStatus of a lifecycle CR whose resource is on its way: not a
	// failure, and picked up again by the progress schedule.
	Progressing = "Progressing"

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
	// Lifecycle, when set, adds status.id, status.resource and the Available and Progressing
	// conditions; Synced must then be true exactly when its Reason is Success.
	Lifecycle *Lifecycle
	// Original writes the original operator's status (the understack profile, docs/migrating.md):
	// the same fields, but its older CRDs do not declare a condition's observedGeneration, so the
	// API server drops it and a stored condition without one is still current. Lifecycle must be
	// nil: the original's CRDs declare none of its fields.
	Original bool
}

// Lifecycle is the shared lifecycle status of a CR (docs/operators/status.md).
type Lifecycle struct {
	// ID is status.id; "" leaves the recorded id alone.
	ID string
	// Resource is status.resource; nil leaves the recorded one alone.
	Resource map[string]any
	// Available is the Available condition's status: True, False or Unknown.
	Available string
	// Reason is the Progressing condition's reason: Success, Progressing, TransientError,
	// InvalidConfiguration or UnrecoverableError.
	Reason  string
	Message string
}

// Condition types and the Progressing condition's reasons written for lifecycle CRs (the reasons
// are the ABI's: a plugin reports them).
const (
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"

	ReasonSuccess              = abi.ReasonSuccess
	ReasonProgressing          = abi.ReasonProgressing
	ReasonTransientError       = abi.ReasonTransientError
	ReasonInvalidConfiguration = abi.ReasonInvalidConfiguration
	ReasonUnrecoverableError   = abi.ReasonUnrecoverableError
)

// TerminalReason reports whether a Progressing reason is one no retry fixes until the spec changes.
func TerminalReason(reason string) bool {
	return reason == ReasonInvalidConfiguration || reason == ReasonUnrecoverableError
}

// NotesMarker introduces the notes in a Synced message; NotesSeparator separates them.
const (
	NotesMarker    = "; needs manual action: "
	NotesSeparator = "; "
)

// SyncedMessage is the message of a successful reconcile.
func SyncedMessage(noun string, notes []string) string {
	m := "Successfully reconciled " + noun
	if len(notes) > 0 {
		m += NotesMarker + strings.Join(notes, NotesSeparator)
	}
	return m
}

// Truncate shortens text to max characters, ending in "..." when cut.
func Truncate(text string, max int) string {
	if len(text) <= max || utf8.RuneCountInString(text) <= max {
		return text // no copy of the runes of every message that fits
	}
	r := []rune(text)
	return string(r[:max-3]) + "..."
}

// message is the text written to the CR. It is cleaned (Clean: invalid UTF-8 replaced, control
// characters and terminal escapes gone) before writing, so `kubectl get` prints it safely and
// the stored text compares equal to it on the next run (docs/contract.md §6.3).
func (o Outcome) message() string {
	return Text(o.Message)
}

func (o Outcome) syncStatus() string {
	switch {
	case o.Synced:
		return Synced
	case o.Lifecycle != nil && o.Lifecycle.Reason == ReasonProgressing:
		return Progressing
	}
	return Failed
}

// cond is one desired condition without its transition time (and its observedGeneration, which is
// the CR's generation when known).
type cond struct{ typ, status, reason, message string }

// conds are the desired conditions for a message of msg (o.message()): Ready, then for a
// lifecycle CR Available and Progressing. IsCurrent compares them as they are; Body writes them.
func (o Outcome) conds(msg string) []cond {
	ready := cond{typ: ConditionReady, status: "False", reason: ReasonFailedReconcile, message: msg}
	switch {
	case o.Synced:
		ready.status, ready.reason = "True", ReasonReconciled
	case o.Reason != "":
		ready.reason = o.Reason
	}
	l := o.Lifecycle
	if l == nil {
		return []cond{ready}
	}
	avail := cond{typ: ConditionAvailable, status: l.Available, reason: l.Reason}
	switch {
	case l.Available == "True":
		avail.reason, avail.message = ReasonSuccess, "The OpenStack resource is available"
	case l.Message != "":
		avail.message = Text(l.Message)
	default:
		avail.message = "The OpenStack resource is not available"
	}
	prog := cond{typ: ConditionProgressing, status: "False", reason: l.Reason, message: Text(l.Message)}
	if l.Reason == ReasonProgressing || l.Reason == ReasonTransientError {
		// Still on its way, or failed in a way the next run may fix: the CR is not settled.
		prog.status = "True"
	}
	if l.Reason == ReasonSuccess && l.Message == "" {
		prog.message = "The OpenStack resource is up to date"
	}
	return []cond{ready, avail, prog}
}

// conditions are the desired conditions as the status holds them, without their transition times.
func (o Outcome) conditions(generation *int64) []map[string]any {
	cs := o.conds(o.message())
	out := make([]map[string]any, 0, len(cs))
	for _, c := range cs {
		m := map[string]any{"type": c.typ, "status": c.status, "reason": c.reason, "message": c.message}
		if generation != nil {
			m["observedGeneration"] = *generation
		}
		out = append(out, m)
	}
	return out
}

// resourcePatch is status.resource as a merge patch: the observed resource replaces the recorded
// one, so a key OpenStack no longer reports is deleted (null) rather than left behind.
func (l *Lifecycle) resourcePatch(current map[string]any) map[string]any {
	if l == nil || l.Resource == nil {
		return nil
	}
	patch := maps.Clone(l.Resource)
	old, _ := current["resource"].(map[string]any)
	for k := range old {
		if _, ok := patch[k]; !ok {
			patch[k] = nil
		}
	}
	return patch
}

// Body is the merge-patch body {"status": {...}} for outcome o on a CR at generation; current is
// the status the CR carries now (it keeps the Ready condition's transition time), now the sync time.
func Body(o Outcome, generation *int64, current map[string]any, now time.Time) map[string]any {
	stamp := now.UTC().Format("2006-01-02T15:04:05Z")
	conds := []any{}
	for _, cond := range o.conditions(generation) {
		cond["lastTransitionTime"] = stamp
		if old := findCondition(current, cond["type"].(string)); old != nil && old["status"] == cond["status"] {
			if t, ok := old["lastTransitionTime"].(string); ok && t != "" {
				cond["lastTransitionTime"] = t
			}
		}
		conds = append(conds, cond)
	}
	s := maps.Clone(o.Extra)
	if s == nil {
		s = map[string]any{}
	}
	s["syncStatus"] = o.syncStatus()
	s["lastSyncTime"] = stamp
	s["message"] = o.message()
	s["conditions"] = conds
	delete(s, "observedGeneration")
	if l := o.Lifecycle; l != nil {
		delete(s, "id")
		delete(s, "resource")
		if l.ID != "" {
			s["id"] = l.ID
		}
		if r := l.resourcePatch(current); r != nil {
			s["resource"] = r
		}
	}
	if generation != nil {
		s["observedGeneration"] = *generation
	}
	return map[string]any{"status": s}
}

// IsCurrent reports whether current already says everything Body would write, timestamps aside.
func IsCurrent(o Outcome, generation *int64, current map[string]any) bool {
	msg := o.message()
	if len(current) == 0 || current["syncStatus"] != o.syncStatus() || current["message"] != msg {
		return false
	}
	if generation != nil && !equalJSON(current["observedGeneration"], *generation) {
		return false
	}
	for _, c := range o.conds(msg) {
		old := findCondition(current, c.typ)
		if old == nil || !hasString(old, "status", c.status) || !hasString(old, "reason", c.reason) ||
			!hasString(old, "message", c.message) {
			return false
		}
		if generation != nil {
			if have, ok := old["observedGeneration"]; ok && !equalJSON(have, *generation) || !ok && !o.Original {
				return false
			}
		}
	}
	if l := o.Lifecycle; l != nil {
		if l.ID != "" && current["id"] != l.ID {
			return false
		}
		if r := l.resourcePatch(current); r != nil {
			w, err := normalizeValue(r)
			if err != nil {
				return false
			}
			if have, ok := current["resource"]; !mergeKeeps(have, ok, w) {
				return false
			}
		}
	}
	for k, want := range o.Extra {
		if isOwnKey(k) || (o.Lifecycle != nil && (k == "id" || k == "resource")) {
			continue
		}
		w, err := normalizeValue(want)
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

// hasString reports m[k] set to the string want (equalJSON of a string, without the interface).
func hasString(m map[string]any, k, want string) bool {
	have, ok := m[k].(string)
	return ok && have == want
}

func isOwnKey(k string) bool {
	switch k {
	case "syncStatus", "lastSyncTime", "message", "conditions", "observedGeneration":
		return true
	}
	return false
}

func findCondition(status map[string]any, typ string) map[string]any {
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m
		}
	}
	return nil
}

// equalJSON compares values as the API server would store them: the status read from a binding
// context holds json.Number while plugins produce Go ints, floats and structs.
func equalJSON(a, b any) bool {
	// The common cases (condition strings, the generation) without a JSON round trip each: they
	// were a fifth of the host's CPU in a converged pass. Each answers as the round trip would.
	switch bv := b.(type) {
	case string:
		av, ok := a.(string)
		return ok && av == bv
	case bool:
		av, ok := a.(bool)
		return ok && av == bv
	case json.Number:
		// Both read from JSON (a stored status, a plugin's number normalized): the same text.
		if an, ok := a.(json.Number); ok && validNumber(string(an)) && validNumber(string(bv)) {
			return an == bv
		}
	case int64:
		if an, ok := a.(json.Number); ok && validNumber(string(an)) {
			return an.String() == strconv.FormatInt(bv, 10)
		}
	}
	if eq, ok := equalNormal(a, b); ok {
		return eq
	}
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
