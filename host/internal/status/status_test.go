package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 890, time.FixedZone("X", 3600))

const stamp = "2026-03-04T04:06:07Z"

func gen(n int64) *int64 { return &n }

// fromJSON reads a status the way the planner does (numbers as json.Number).
func fromJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	require.NoError(t, d.Decode(&m))
	return m
}

func TestBody(t *testing.T) {
	tests := []struct {
		name    string
		outcome Outcome
		gen     *int64
		current string
		want    string
	}{
		{name: "synced", outcome: Outcome{Synced: true, Message: SyncedMessage("widget", nil), Reason: "Ignored"}, gen: gen(3),
			want: `{"status":{"syncStatus":"Synced","lastSyncTime":"` + stamp + `","message":"Successfully reconciled widget",
			"observedGeneration":3,"conditions":[{"type":"Ready","status":"True","reason":"Reconciled",
			"message":"Successfully reconciled widget","observedGeneration":3,"lastTransitionTime":"` + stamp + `"}]}}`},
		{name: "failed default reason, no generation", outcome: Outcome{Message: "boom"},
			want: `{"status":{"syncStatus":"Failed","lastSyncTime":"` + stamp + `","message":"boom",
			"conditions":[{"type":"Ready","status":"False","reason":"ReconcileError","message":"boom",
			"lastTransitionTime":"` + stamp + `"}]}}`},
		{name: "failed named reason keeps transition time", outcome: Outcome{Message: "missing", Reason: "NautobotPrefixMissing"}, gen: gen(1),
			current: `{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2020-01-01T00:00:00Z"}]}`,
			want: `{"status":{"syncStatus":"Failed","lastSyncTime":"` + stamp + `","message":"missing","observedGeneration":1,
			"conditions":[{"type":"Ready","status":"False","reason":"NautobotPrefixMissing","message":"missing",
			"observedGeneration":1,"lastTransitionTime":"2020-01-01T00:00:00Z"}]}}`},
		{name: "status flip moves transition time", outcome: Outcome{Synced: true, Message: "ok"}, gen: gen(1),
			current: `{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2020-01-01T00:00:00Z"}]}`,
			want: `{"status":{"syncStatus":"Synced","lastSyncTime":"` + stamp + `","message":"ok","observedGeneration":1,
			"conditions":[{"type":"Ready","status":"True","reason":"Reconciled","message":"ok",
			"observedGeneration":1,"lastTransitionTime":"` + stamp + `"}]}}`},
		{name: "empty old transition time is replaced", outcome: Outcome{Message: "x"},
			current: `{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":""}]}`,
			want: `{"status":{"syncStatus":"Failed","lastSyncTime":"` + stamp + `","message":"x",
			"conditions":[{"type":"Ready","status":"False","reason":"ReconcileError","message":"x",
			"lastTransitionTime":"` + stamp + `"}]}}`},
		{name: "extra status merged, own keys win", gen: gen(2),
			outcome: Outcome{Synced: true, Message: "ok", Extra: map[string]any{"prefixes": []any{}, "syncStatus": "Hacked", "observedGeneration": 99}},
			want: `{"status":{"syncStatus":"Synced","lastSyncTime":"` + stamp + `","message":"ok","observedGeneration":2,"prefixes":[],
			"conditions":[{"type":"Ready","status":"True","reason":"Reconciled","message":"ok",
			"observedGeneration":2,"lastTransitionTime":"` + stamp + `"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var current map[string]any
			if tt.current != "" {
				current = fromJSON(t, tt.current)
			}
			got, err := json.Marshal(Body(tt.outcome, tt.gen, current, now))
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestMessages(t *testing.T) {
	assert.Equal(t, "Successfully reconciled widget", SyncedMessage("widget", nil))
	assert.Equal(t, "Successfully reconciled widget; needs manual action: a; b", SyncedMessage("widget", []string{"a", "b"}))
	assert.Equal(t, "abc", Truncate("abc", 3))
	// Truncation counts characters, not bytes.
	assert.Equal(t, "ééé", Truncate("ééé", 3), "6 bytes, 3 characters")
	assert.Equal(t, "é...", Truncate("ééééé", 4))
	assert.Equal(t, "\uFFFD...", Truncate("\xff\xff\xff\xff\xff", 4), "an invalid byte is one character")
	long := strings.Repeat("x", 3000)
	got := Truncate(long, MaxMessage)
	assert.Len(t, got, MaxMessage)
	assert.True(t, strings.HasSuffix(got, "..."))
	body := Body(Outcome{Message: long}, nil, nil, now)["status"].(map[string]any)
	assert.Len(t, body["message"], MaxMessage)
}

func original(o Outcome) Outcome { o.Original = true; return o }

func TestIsCurrent(t *testing.T) {
	synced := Outcome{Synced: true, Message: "Successfully reconciled widget"}
	current := `{"syncStatus":"Synced","lastSyncTime":"2020-01-01T00:00:00Z","message":"Successfully reconciled widget",
		"observedGeneration":3,"conditions":[{"type":"Ready","status":"True","reason":"Reconciled",
		"message":"Successfully reconciled widget","observedGeneration":3,"lastTransitionTime":"2020-01-01T00:00:00Z"}]}`
	failed := Outcome{Message: "boom", Reason: "Quota"}
	failedCurrent := `{"syncStatus":"Failed","message":"boom","observedGeneration":3,
		"conditions":[{"type":"Ready","status":"False","reason":"Quota","message":"boom","observedGeneration":3}]}`
	withExtra := func(extra map[string]any) Outcome { o := synced; o.Extra = extra; return o }
	tests := []struct {
		name    string
		outcome Outcome
		gen     *int64
		current string
		want    bool
	}{
		{"identical, timestamps ignored", synced, gen(3), current, true},
		{"failed identical", failed, gen(3), failedCurrent, true},
		{"no status", synced, gen(3), ``, false},
		{"empty status", synced, gen(3), `{}`, false},
		{"other sync status", failed, gen(3), current, false},
		{"other message", Outcome{Synced: true, Message: "other"}, gen(3), current, false},
		{"new generation", synced, gen(4), current, false},
		{"no generation known", synced, nil, strings.ReplaceAll(current, `"observedGeneration":3,`, ``), true},
		{"stale condition generation", synced, gen(3), strings.Replace(current, `"observedGeneration":3,"lastTransitionTime"`, `"observedGeneration":2,"lastTransitionTime"`, 1), false},
		{"condition generation missing", synced, gen(3), strings.Replace(current, `"observedGeneration":3,"lastTransitionTime"`, `"lastTransitionTime"`, 1), false},
		// The original's older CRDs drop a condition's observedGeneration on write: its status is
		// current without it, else the understack profile would re-patch every run (Decision 2).
		{"original: condition generation dropped by its CRD", original(synced), gen(3), strings.Replace(current, `"observedGeneration":3,"lastTransitionTime"`, `"lastTransitionTime"`, 1), true},
		{"original: stale condition generation", original(synced), gen(3), strings.Replace(current, `"observedGeneration":3,"lastTransitionTime"`, `"observedGeneration":2,"lastTransitionTime"`, 1), false},
		{"original: new generation", original(synced), gen(4), strings.Replace(current, `"observedGeneration":3,"lastTransitionTime"`, `"lastTransitionTime"`, 1), false},
		{"no Ready condition", synced, gen(3), strings.Replace(current, `"type":"Ready"`, `"type":"Other"`, 1), false},
		{"other reason", Outcome{Message: "boom", Reason: "Other"}, gen(3), failedCurrent, false},
		{"cleared reason", Outcome{Message: "boom"}, gen(3), failedCurrent, false},
		{"condition message differs", synced, gen(3), strings.Replace(current, `"message":"Successfully reconciled widget","observedGeneration":3,"last`, `"message":"x","observedGeneration":3,"last`, 1), false},
		{"truncated message compares truncated", Outcome{Message: strings.Repeat("y", 3000)}, nil,
			`{"syncStatus":"Failed","message":"` + Truncate(strings.Repeat("y", 3000), MaxMessage) + `","conditions":[{"type":"Ready","status":"False","reason":"ReconcileError","message":"` + Truncate(strings.Repeat("y", 3000), MaxMessage) + `"}]}`, true},
		{"extra missing forces backfill", withExtra(map[string]any{"prefixes": []any{}}), gen(3), current, false},
		{"extra equal across number types", withExtra(map[string]any{"prefixes": []map[string]any{{"id": 7}}}), gen(3),
			strings.Replace(current, `"syncStatus"`, `"prefixes":[{"id":7}],"syncStatus"`, 1), true},
		{"extra differs", withExtra(map[string]any{"prefixes": []any{"a"}}), gen(3),
			strings.Replace(current, `"syncStatus"`, `"prefixes":["b"],"syncStatus"`, 1), false},
		{"explicit empty extra is a value", withExtra(map[string]any{"prefixes": []any{}}), gen(3),
			strings.Replace(current, `"syncStatus"`, `"prefixes":null,"syncStatus"`, 1), false},
		// A merge patch deletes a null key, so the stored status of a null extra value is its absence;
		// comparing it as a missing key would re-patch the status on every run.
		{"null extra is current when absent", withExtra(map[string]any{"prefixes": nil}), gen(3), current, true},
		{"null extra is stale while the key is set", withExtra(map[string]any{"prefixes": nil}), gen(3),
			strings.Replace(current, `"syncStatus"`, `"prefixes":["a"],"syncStatus"`, 1), false},
		{"nil slice extra is current when absent", withExtra(map[string]any{"prefixes": []string(nil)}), gen(3), current, true},
		{"nested null extra is current when absent", withExtra(map[string]any{"info": map[string]any{"a": 1, "b": nil}}), gen(3),
			strings.Replace(current, `"syncStatus"`, `"info":{"a":1},"syncStatus"`, 1), true},
		{"nested null extra is stale while set", withExtra(map[string]any{"info": map[string]any{"a": 1, "b": nil}}), gen(3),
			strings.Replace(current, `"syncStatus"`, `"info":{"a":1,"b":2},"syncStatus"`, 1), false},
		{"nested extra object with an extra stored key", withExtra(map[string]any{"info": map[string]any{"a": 1}}), gen(3),
			strings.Replace(current, `"syncStatus"`, `"info":{"a":1,"b":2},"syncStatus"`, 1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cur map[string]any
			if tt.current != "" {
				cur = fromJSON(t, tt.current)
			}
			assert.Equal(t, tt.want, IsCurrent(tt.outcome, tt.gen, cur))
		})
	}
}

// A plain-text plugin error may hold invalid UTF-8; JSON would store a replacement character, so
// the status written must compare as current on the next run instead of being re-patched forever.
func TestInvalidUTF8MessageIsCurrentOnceWritten(t *testing.T) {
	for _, msg := range []string{"bad \xff byte", "run \xff\xfe of bad bytes", strings.Repeat("é", 2100) + "\xff"} {
		o := Outcome{Message: msg}
		body, err := json.Marshal(Body(o, gen(1), nil, now))
		require.NoError(t, err)
		var written struct{ Status map[string]any }
		d := json.NewDecoder(strings.NewReader(string(body)))
		d.UseNumber()
		require.NoError(t, d.Decode(&written))
		assert.True(t, IsCurrent(o, gen(1), written.Status), "%q", msg)
		assert.LessOrEqual(t, len([]rune(written.Status["message"].(string))), MaxMessage)
	}
}
