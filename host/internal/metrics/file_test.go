package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readOps parses a metrics file the way shell-operator v1.20 does: JSON lines of operations.
func readOps(t *testing.T, path string) map[string]operation {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]operation{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var op operation
		require.NoError(t, json.Unmarshal(sc.Bytes(), &op), sc.Text())
		out[seriesKey(op.Name, op.Labels)] = op
	}
	return out
}

func op(t *testing.T, ops map[string]operation, name string, labels map[string]string) operation {
	t.Helper()
	o, ok := ops[seriesKey(name, labels)]
	require.True(t, ok, "no operation for %s %v", name, labels)
	return o
}

// Counters and histograms carry over from run to run (shell-operator expires the group each run),
// gauges hold the last value set.
func TestFileKeepsTotalsAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	runs := []func(r Recorder){
		func(r Recorder) {
			Add(r, Reconciles, 2, "p", "synced")
			Add(r, Reconciles, 1, "p", "failed")
			Set(r, Unreadable, 3, "p")
			Observe(r, RequestDuration, 0.02, "p", "network", "GET")
			Observe(r, RequestDuration, 100, "p", "network", "GET")
		},
		func(r Recorder) {
			Add(r, Reconciles, 1, "p", "synced")
			Set(r, Unreadable, 0, "p")
			Observe(r, RequestDuration, 0.02, "p", "network", "GET")
		},
	}
	var ops map[string]operation
	for i, run := range runs {
		path := filepath.Join(dir, "hook-metrics-"+string(rune('a'+i))+".json")
		f := NewFile()
		run(f)
		require.NoError(t, f.Flush(path, "openstack-sync/p"))
		ops = readOps(t, path)
	}
	p := map[string]string{"plugin": "p"}
	synced := op(t, ops, Reconciles.Name, map[string]string{"plugin": "p", "result": "synced"})
	assert.Equal(t, operation{Name: Reconciles.Name, Group: "openstack-sync/p", Action: "add", Value: 3,
		Labels: map[string]string{"plugin": "p", "result": "synced"}}, synced)
	assert.Equal(t, 1.0, op(t, ops, Reconciles.Name, map[string]string{"plugin": "p", "result": "failed"}).Value,
		"a series the last run did not touch is still written")
	un := op(t, ops, Unreadable.Name, p)
	assert.Equal(t, "set", un.Action)
	assert.Equal(t, 0.0, un.Value)

	h := map[string]string{"plugin": "p", "service": "network", "method": "GET"}
	bucket := func(le string) float64 {
		return op(t, ops, RequestDuration.Name+"_bucket", withLabel(h, "le", le)).Value
	}
	assert.Equal(t, 0.0, bucket("0.01"))
	assert.Equal(t, 2.0, bucket("0.025"), "cumulative: both 0.02 observations")
	assert.Equal(t, 2.0, bucket("30"))
	assert.Equal(t, 3.0, bucket("+Inf"))
	assert.Equal(t, 3.0, op(t, ops, RequestDuration.Name+"_count", h).Value)
	sum := op(t, ops, RequestDuration.Name+"_sum", h)
	assert.Equal(t, "set", sum.Action, "a float sum cannot be a shell-operator counter")
	assert.InDelta(t, 100.04, sum.Value, 1e-9)
}

func TestFileReportsMistakesAndBadState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	require.NoError(t, os.WriteFile(StatePath(path, "g"), []byte("not json"), 0o600))
	f := NewFile()
	f.Add(Reconciles, 1, "only-one-label")
	f.Set(Reconciles, 1, "p", "synced")
	f.Add(Reconciles, 1, "p", "synced")
	err := f.Flush(path, "g")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "takes labels plugin, result; got 1 values")
	assert.Contains(t, err.Error(), "is a counter, not a gauge")
	assert.Contains(t, err.Error(), "starting the totals over")
	assert.Equal(t, 1.0, op(t, readOps(t, path), Reconciles.Name, map[string]string{"plugin": "p", "result": "synced"}).Value)

	// The next run reads the totals this one rewrote.
	f = NewFile()
	f.Add(Reconciles, 1, "p", "synced")
	require.NoError(t, f.Flush(path, "g"))
	assert.Equal(t, 2.0, op(t, readOps(t, path), Reconciles.Name, map[string]string{"plugin": "p", "result": "synced"}).Value)
}

func TestFileWithoutPathWritesNothing(t *testing.T) {
	f := NewFile()
	f.Add(Reconciles, 1, "p", "synced")
	assert.NoError(t, f.Flush("", "g"))
	var r Recorder // nil: the helpers record nothing
	Add(r, Reconciles, 1, "p", "synced")
	Set(r, Unreadable, 1, "p")
	Observe(r, RunDuration, 1, "p")
}

var promName = regexp.MustCompile(`^openstack_sync_[a-z0-9_]+$`)

// Prometheus naming: one prefix, base units, _total only on counters; labels from a closed set.
func TestCatalogFollowsPrometheusNaming(t *testing.T) {
	allowed := map[string]bool{"plugin": true, "result": true, "service": true, "method": true,
		"status_class": true, "reason": true, "kind": true, "cache": true}
	seen := map[string]bool{}
	for _, d := range Catalog {
		assert.Regexp(t, promName, d.Name)
		assert.False(t, seen[d.Name], "duplicate %s", d.Name)
		seen[d.Name] = true
		assert.Equal(t, d.Type == Counter, regexp.MustCompile(`_total$`).MatchString(d.Name), "%s: _total iff counter", d.Name)
		if d.Type == Histogram {
			assert.Regexp(t, `_seconds$`, d.Name)
			assert.NotEmpty(t, d.Buckets)
		}
		assert.NotEmpty(t, d.Help)
		assert.Equal(t, "plugin", d.Labels[0], "%s: every metric names its plugin", d.Name)
		for _, l := range d.Labels {
			assert.True(t, allowed[l], "%s: label %q is not one of the bounded ones", d.Name, l)
		}
	}
}

func TestStatusClass(t *testing.T) {
	for code, want := range map[int]string{200: "2xx", 204: "2xx", 404: "4xx", 429: "4xx", 503: "5xx", 0: "error", 600: "error"} {
		assert.Equal(t, want, StatusClass(code), "%d", code)
	}
}

// BenchmarkAdd is one count of a series already recorded, as the runner adds one per CR.
func BenchmarkAdd(b *testing.B) {
	f := NewFile()
	b.ReportAllocs()
	for b.Loop() {
		f.Add(Reconciles, 1, "widgets", "synced")
	}
}
