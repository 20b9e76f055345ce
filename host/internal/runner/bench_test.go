package runner_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/openstack-sync/openstack-sync/host/internal/finalizer"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
	"github.com/openstack-sync/openstack-sync/host/internal/status"
)

// BenchmarkConvergedPass is the runner's own share of a converged pass: every CR holds its
// finalizer and a current status, the plugin converges each at once and prunes nothing, so
// nothing is written. It measures the runner's bookkeeping per CR (loggers, status checks,
// metrics, the prune's request), not the plugin's.
func BenchmarkConvergedPass(b *testing.B) {
	for _, bc := range []struct {
		name  string
		notes []string
	}{{"crs=1000", nil}, {"crs=1000/notes", []string{"traits are not applied"}}} {
		n := 1000
		b.Run(bc.name, func(b *testing.B) {
			e := newEnv(&testing.T{}, true)
			crs := make([]cr, n)
			msg := status.SyncedMessage("widget", bc.notes)
			for i := range crs {
				name := fmt.Sprintf("w%05d", i)
				crs[i] = cr{name: name, finalizers: []string{F}, status: map[string]any{
					"syncStatus": "Synced", "message": msg, "observedGeneration": 1,
					"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled",
						"message": msg, "observedGeneration": 1,
						"lastTransitionTime": "2026-01-01T00:00:00Z"}}}}
			}
			var objects []any
			for _, c := range crs {
				objects = append(objects, c.object())
			}
			plan := e.planContexts([]any{map[string]any{"binding": "widgets", "type": "Synchronization", "objects": objects}})
			cfg := hookenv.Config{Prefix: "WIDGET", BindingName: "widgets", Enabled: true, APIVersion: group + "/" + version,
				Kind: "Widget", Resource: "widgets." + group, StatusEnabled: true, Prune: true, ReadyRetries: 1}
			p := convergedPlugin{notes: bc.notes}
			b.ReportAllocs()
			for b.Loop() {
				rn := &runner.Runner{Plugin: p, Connector: &plugintest.Connector{Journal: &plugintest.Journal{}},
					Kube: noWrites{b}, Config: cfg, Metrics: metrics.NewFile(),
					Log: slog.New(slog.NewTextHandler(io.Discard, nil)).With("plugin", "widgets")}
				if code := rn.Run(context.Background(), plan); code != 0 {
					b.Fatalf("exit code %d", code)
				}
			}
		})
	}
}

// convergedPlugin finds every CR converged, with its notes, and has nothing to prune.
type convergedPlugin struct{ notes []string }

func (convergedPlugin) Metadata() plugin.Metadata {
	return plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets", HasPrune: true}
}
func (convergedPlugin) CleanupPolicy(bool) plugin.CleanupPolicy                          { return plugin.CleanupFinalizedPrune }
func (convergedPlugin) WaitForAPI(context.Context, plugin.Session) error                 { return nil }
func (convergedPlugin) NewCache(context.Context) (plugin.Cache, error)                   { return noCache{}, nil }
func (convergedPlugin) Prune(context.Context, plugin.Session, plugin.PruneRequest) error { return nil }
func (convergedPlugin) Close(context.Context) error                                      { return nil }
func (p convergedPlugin) Reconcile(context.Context, plugin.Session, plugin.Cache, plugin.ReconcileRequest) (plugin.Result, error) {
	return plugin.Result{Notes: p.notes}, nil
}

type noCache struct{}

func (noCache) Close(context.Context) error { return nil }

// noWrites fails the benchmark on any Kubernetes request: a converged pass makes none.
type noWrites struct{ b *testing.B }

var _ runner.Kube = noWrites{}

func (k noWrites) JSONPatch(context.Context, kubeapi.Target, []byte) error {
	k.b.Fatal("a converged pass patched finalizers")
	return nil
}
func (k noWrites) Finalizers(context.Context, kubeapi.Target) ([]string, error) {
	k.b.Fatal("a converged pass read finalizers")
	return nil, nil
}
func (k noWrites) MergePatchStatus(context.Context, kubeapi.Target, []byte) error {
	k.b.Fatal("a converged pass patched a status")
	return nil
}

var _ finalizer.API = noWrites{}
