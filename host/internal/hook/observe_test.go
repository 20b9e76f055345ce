package hook_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
)

// opsIn reads a metrics file into "name{k=v,...}" -> value.
func opsIn(t *testing.T, path string) map[string]float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var op struct {
			Name   string            `json:"name"`
			Group  string            `json:"group"`
			Action string            `json:"action"`
			Value  float64           `json:"value"`
			Labels map[string]string `json:"labels"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &op), line)
		require.Equal(t, "openstack-sync/widgets.wasm", op.Group, "one group per hook")
		if op.Labels["le"] != "" || strings.HasSuffix(op.Name, "_sum") {
			continue
		}
		key := op.Name + "{plugin=" + op.Labels["plugin"]
		if r := op.Labels["result"]; r != "" {
			key += ",result=" + r
		}
		out[key+"}"] = op.Value
	}
	return out
}

// Three runs of one hook: a CR fails, recovers, then nothing changes. The metrics file carries
// running totals (shell-operator expires the group each run); Events tell the CR's story and a
// run that changed nothing records none.
func TestRunsReportMetricsAndEvents(t *testing.T) {
	dir := t.TempDir()
	objPath := kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a")
	var posted []map[string]any
	run := func(t *testing.T, n int, cr map[string]any, fail bool) (int, map[string]float64, any) {
		h := newHarness(t).enable().contexts(syncOf(cr))
		h.srv.Put(objPath, cr)
		h.srv.Intercept = func(r kubetest.Request) (int, string, bool) {
			if !strings.HasPrefix(r.Path, "/apis/events.k8s.io/v1/namespaces/ns/events") {
				return 0, "", false
			}
			var ev map[string]any
			require.NoError(t, json.Unmarshal([]byte(r.Body), &ev))
			posted = append(posted, ev)
			return 201, r.Body, true
		}
		if fail {
			h.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
		}
		h.env[metrics.PathEnv] = filepath.Join(dir, "hook-metrics-"+string(rune('0'+n))+".json")
		code := h.mainWith(func(d *hook.Deps) {
			d.NewMetrics = func() hook.MetricsFile { return metrics.NewFile() }
			d.Events = true
		}, "--plugin", "widgets.wasm")
		return code, opsIn(t, h.env[metrics.PathEnv]), h.srv.Object(objPath)["status"]
	}
	// The harness's server is new each run; the CR carries its status from run to run.
	cr := widget("a")
	code, m, _ := run(t, 1, cr, true)
	assert.Equal(t, 0, code, "a start-up Synchronization exits 0 (Decision 20), and its metrics say it failed")
	assert.Equal(t, 1.0, m["openstack_sync_reconciles_total{plugin=widgets,result=failed}"])
	assert.Equal(t, 1.0, m["openstack_sync_hook_runs_total{plugin=widgets,result=failed}"])
	assert.Equal(t, 1.0, m["openstack_sync_hook_run_duration_seconds_count{plugin=widgets}"])
	assert.Equal(t, 1.0, m["openstack_sync_plugin_load_duration_seconds_count{plugin=widgets}"])
	assert.Equal(t, 0.0, m["openstack_sync_crs_unreadable{plugin=widgets}"])
	require.Len(t, posted, 1)
	assert.Equal(t, "ReconcileFailed", posted[0]["reason"])
	assert.Equal(t, "Warning", posted[0]["type"])
	assert.Equal(t, "boom", posted[0]["note"])
	assert.Equal(t, "openstack-sync.io/widgets", posted[0]["reportingController"])
	assert.Equal(t, map[string]any{"apiVersion": "example.openstack-sync.io/v1alpha1", "kind": "Widget",
		"namespace": "ns", "name": "a", "uid": "u-a"}, posted[0]["regarding"])

	cr["status"] = map[string]any{"syncStatus": "Failed", "observedGeneration": 1, "message": "boom"}
	code, m, written := run(t, 2, cr, false)
	assert.Equal(t, 0, code)
	assert.Equal(t, 1.0, m["openstack_sync_reconciles_total{plugin=widgets,result=failed}"], "totals carry over")
	assert.Equal(t, 1.0, m["openstack_sync_reconciles_total{plugin=widgets,result=synced}"])
	assert.Equal(t, 1.0, m["openstack_sync_hook_runs_total{plugin=widgets,result=ok}"])
	assert.Equal(t, 2.0, m["openstack_sync_hook_run_duration_seconds_count{plugin=widgets}"])
	require.Len(t, posted, 2)
	assert.Equal(t, "Recovered", posted[1]["reason"])
	assert.Equal(t, "Normal", posted[1]["type"])

	// The status the second run wrote, as the next binding context carries it.
	synced := widget("a")
	synced["status"] = written
	code, m, _ = run(t, 3, synced, false)
	assert.Equal(t, 0, code)
	assert.Equal(t, 2.0, m["openstack_sync_reconciles_total{plugin=widgets,result=synced}"])
	assert.Len(t, posted, 2, "a run that changed nothing records no Event")
}
