//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestObservability drives one runbook CR through failure, recovery, failure, recovery and a
// pruned delete with the real shell-operator, then reads what an operator on call would: the
// Events on the CR from the real API server, and the host's metrics from shell-operator's
// /metrics/hooks endpoint.
func TestObservability(t *testing.T) {
	h := need(t)
	ctx := context.Background()
	ex := h.examples

	cr := renamed(ex.crs[runbooks.kind], "-obs", "spec", "runbookName", "_E2E_OBS")
	good, _, _ := unstructured.NestedString(cr.Object, "spec", "cloudCredentialsRef", "secretName")
	cleanup := func() { assert.NoError(t, h.cloud.deleteRunbook(ctx, osName(cr))) }
	cleanup()
	t.Cleanup(cleanup)

	if _, err := h.kube.CoreV1().Secrets(h.namespace).Get(ctx, badSecret, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		h.applySecrets(t, ctx)
	}
	// Runbooks prune (TestLifecycle may have left PRUNE=false): the delete below must go through a prune.
	out, err := h.helm("upgrade", release, chartDir, "--namespace", h.namespace, "--reuse-values",
		"--set", "pluginData.ironicRunbooks.hook.env.PRUNE=true")
	require.NoError(t, err, out)
	if h.operator != nil {
		h.stopOperator()
	}
	require.NoError(t, h.startOperator(ctx))

	setSecret := func(name string) {
		h.edit(t, ctx, runbooks, cr.GetName(), func(u *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(u.Object, name, "spec", "cloudCredentialsRef", "secretName"))
		})
	}
	bad := cr.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(bad.Object, badSecret, "spec", "cloudCredentialsRef", "secretName"))
	h.create(t, ctx, runbooks, bad)
	h.waitStatus(t, ctx, runbooks, cr.GetName(), "Failed")
	setSecret(good)
	h.waitSynced(t, ctx, runbooks, cr.GetName())
	setSecret(badSecret)
	h.waitStatus(t, ctx, runbooks, cr.GetName(), "Failed")
	setSecret(good)
	h.waitSynced(t, ctx, runbooks, cr.GetName())
	uid := h.get(t, ctx, runbooks, cr.GetName()).GetUID()
	h.delete(t, ctx, runbooks, cr.GetName())
	h.waitFor(t, syncWait, "the runbook CR to be pruned and released", func() (bool, string) {
		u := h.getOrNil(t, ctx, runbooks, cr.GetName())
		if u == nil {
			return true, ""
		}
		return false, fmt.Sprintf("finalizers %v, status %v", u.GetFinalizers(), u.Object["status"])
	})

	t.Run("the CR's Events tell its story, repeats as a series", func(t *testing.T) {
		type seen struct {
			count int32
			note  string
		}
		byReason := map[string]seen{}
		h.waitFor(t, 30*time.Second, "the Pruned Event", func() (bool, string) {
			list, err := h.kube.EventsV1().Events(h.namespace).List(ctx, metav1.ListOptions{})
			require.NoError(t, err)
			byReason = map[string]seen{}
			for _, ev := range list.Items {
				if string(ev.Regarding.UID) != string(uid) {
					continue
				}
				assert.Equal(t, "openstack-sync.io/ironic-runbooks", ev.ReportingController)
				assert.Equal(t, runbooks.kind, ev.Regarding.Kind)
				n := int32(1)
				if ev.Series != nil {
					n = ev.Series.Count
				}
				s := byReason[ev.Reason]
				byReason[ev.Reason] = seen{count: s.count + n, note: ev.Note}
			}
			_, ok := byReason["Pruned"]
			return ok, fmt.Sprintf("%v", byReason)
		})
		assert.Equal(t, int32(2), byReason["ReconcileFailed"].count, "turned Failed twice, one Event with a series: %v", byReason)
		assert.Contains(t, byReason["ReconcileFailed"].note, badSecret)
		assert.Equal(t, int32(2), byReason["Recovered"].count, "%v", byReason)
		assert.Contains(t, byReason["Pruned"].note, "Prune deleted the owned OpenStack resources no CR claims: 1 in baremetal")

		// kubectl describe reads the core/v1 view of the same Events.
		core, err := h.kube.CoreV1().Events(h.namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.uid=" + string(uid)})
		require.NoError(t, err)
		var reasons []string
		for _, ev := range core.Items {
			reasons = append(reasons, ev.Reason)
		}
		assert.Subset(t, reasons, []string{"ReconcileFailed", "Recovered", "Pruned"})
	})

	t.Run("shell-operator serves the host's metrics", func(t *testing.T) {
		labels := map[string]string{"hook": "ironic-runbooks", "plugin": "ironic-runbooks"}
		want := []struct {
			name   string
			labels map[string]string
			min    float64
		}{
			{"openstack_sync_reconciles_total", map[string]string{"result": "failed"}, 2},
			{"openstack_sync_reconciles_total", map[string]string{"result": "synced"}, 2},
			{"openstack_sync_hook_runs_total", map[string]string{"result": "failed"}, 1},
			{"openstack_sync_hook_runs_total", map[string]string{"result": "ok"}, 1},
			{"openstack_sync_hook_run_duration_seconds_count", nil, 3},
			{"openstack_sync_prunes_total", map[string]string{"result": "ok"}, 1},
			{"openstack_sync_openstack_deletions_total", map[string]string{"service": "baremetal"}, 1},
			{"openstack_sync_openstack_requests_total", map[string]string{"service": "baremetal", "method": "GET", "status_class": "2xx"}, 1},
			{"openstack_sync_openstack_requests_total", map[string]string{"service": "baremetal", "method": "DELETE", "status_class": "2xx"}, 1},
			{"openstack_sync_openstack_request_duration_seconds_bucket", map[string]string{"service": "baremetal", "method": "GET", "le": "+Inf"}, 1},
			{"openstack_sync_plugin_load_duration_seconds_count", nil, 1},
			{"openstack_sync_plugin_compile_duration_seconds_count", nil, 1},
			{"openstack_sync_crs_unreadable", nil, 0},
			{"openstack_sync_finalizers_held", nil, 0},
		}
		var samples []sample
		// The host writes totals on every run; the last one may still be on its way.
		h.waitFor(t, syncWait, "the metrics of the pruning run", func() (bool, string) {
			samples = scrape(t, h.listenPort)
			for _, w := range want {
				v, ok := find(samples, w.name, merged(labels, w.labels))
				if !ok || v < w.min {
					return false, fmt.Sprintf("%s%v = %v (found %t), want at least %v", w.name, w.labels, v, ok, w.min)
				}
			}
			return true, ""
		})
		// Bounded cardinality: no label value names a CR or an OpenStack resource.
		for _, s := range samples {
			if !strings.HasPrefix(s.name, "openstack_sync_") {
				continue
			}
			for k, v := range s.labels {
				assert.NotContains(t, v, cr.GetName(), "%s label %s", s.name, k)
				assert.NotContains(t, v, osName(cr), "%s label %s", s.name, k)
			}
		}
	})
}

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

var sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape reads shell-operator's hook metrics in the Prometheus text format.
func scrape(t *testing.T, port int) []sample {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics/hooks", port))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out []sample
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, sc.Text())
		s := sample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range labelPair.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out = append(out, s)
	}
	return out
}

func find(samples []sample, name string, labels map[string]string) (float64, bool) {
	for _, s := range samples {
		if s.name != name {
			continue
		}
		match := true
		for k, v := range labels {
			if s.labels[k] != v {
				match = false
			}
		}
		if match {
			return s.value, true
		}
	}
	return 0, false
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
