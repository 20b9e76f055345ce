package metrics_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
)

var metricName = regexp.MustCompile(`openstack_sync_[a-z0-9_]+`)

// known maps every series name the host writes (a histogram's _bucket, _count and _sum too) to
// its metric's labels.
func known() map[string][]string {
	out := map[string][]string{}
	for _, d := range metrics.Catalog {
		out[d.Name] = d.Labels
		if d.Type == metrics.Histogram {
			out[d.Name+"_bucket"] = append([]string{"le"}, d.Labels...)
			out[d.Name+"_count"] = d.Labels
			out[d.Name+"_sum"] = d.Labels
		}
	}
	return out
}

// The example alerts, the dashboard and docs/operating.md name only metrics the host writes, and
// the guide lists every one of them.
func TestMonitoringExamplesUseTheCatalog(t *testing.T) {
	names := known()
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	data, err := os.ReadFile(filepath.Join("../../..", "docs/monitoring/prometheusrule.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, &rule))
	assert.Equal(t, "PrometheusRule", rule.Kind)
	var exprs []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			assert.NotEmpty(t, r.Alert)
			exprs = append(exprs, r.Expr)
		}
	}
	require.NotEmpty(t, exprs)

	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	data, err = os.ReadFile(filepath.Join("../../..", "docs/monitoring/grafana-dashboard.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &dash))
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	used := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			_, ok := names[n]
			assert.True(t, ok, "%s names %s, which the host does not write", e, n)
			used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")] = true
		}
	}
	guide, err := os.ReadFile(filepath.Join("../../..", "docs/operating.md"))
	require.NoError(t, err)
	for _, d := range metrics.Catalog {
		assert.True(t, used[d.Name], "neither the alerts nor the dashboard use %s", d.Name)
		assert.Contains(t, string(guide), "`"+d.Name+"`", "docs/operating.md lists every metric")
	}
	for _, n := range metricName.FindAllString(string(guide), -1) {
		_, ok := names[n]
		assert.True(t, ok, "docs/operating.md names %s, which the host does not write", n)
	}
}
