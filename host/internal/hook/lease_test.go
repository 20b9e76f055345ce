package hook_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/lease"
	"github.com/openstack-sync/openstack-sync/host/internal/lease/leasetest"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
)

// eventOf is an event about one widget whose snapshot holds all of them.
func eventOf(binding, changed string, all ...string) []any {
	snap := []any{}
	for _, n := range all {
		snap = append(snap, map[string]any{"object": widget(n)})
	}
	return []any{map[string]any{"binding": binding, "type": "Event", "watchEvent": "Modified",
		"object": widget(changed), "snapshots": map[string]any{"widgets": snap}}}
}

func leaseRun(binding, changed string, all ...string) []any {
	ctx := eventOf(binding, changed, all...)
	m := ctx[0].(map[string]any)
	if binding == "lease" {
		m["type"] = "Schedule"
		delete(m, "object")
		delete(m, "watchEvent")
	}
	return ctx
}

// TestLease: with OPENSTACK_SYNC_LEASE_NAME set, a run acts only while its pod holds the plugin's
// lease; another pod's run stands down (exit 0, nothing loaded beyond the plugin, nothing
// reconciled); a run that takes the lease over reconciles every CR of its snapshot, not only the
// event's; the lease binding's own runs only renew.
func TestLease(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const leaseName = "oso-widgets"
	tests := []struct {
		name       string
		holder     string // the lease's holder before the run ("": no lease)
		renewedAgo time.Duration
		contexts   []any
		code       int
		reconciled []string
		after      string // the holder after the run
		stderr     []string
		// metrics are the run's lease counters (standdowns, takeovers).
		standDowns, takeovers float64
	}{
		{name: "another live holder: the run stands down", holder: "pod-b", renewedAgo: 10 * time.Second,
			contexts: eventOf("widgets", "a", "a", "b"), after: "pod-b", standDowns: 1,
			stderr: []string{"Standing down: another replica holds the lease", "activeHolder=pod-b",
				"leaseExpires=2026-01-02T03:05:25Z", "lease=ops/" + leaseName, "holder=pod-a"}},
		{name: "the holder acts on the event only", holder: "pod-a", renewedAgo: 10 * time.Second,
			contexts: eventOf("widgets", "a", "a", "b"), reconciled: []string{"a"}, after: "pod-a"},
		{name: "a first holder reconciles the whole snapshot", takeovers: 1,
			contexts: eventOf("widgets", "a", "a", "b"), reconciled: []string{"a", "b"}, after: "pod-a",
			stderr: []string{"Holding the lease from now on; this run reconciles every CR it sees"}},
		{name: "taking over from an expired holder reconciles the whole snapshot", holder: "pod-b", renewedAgo: 2 * time.Minute, takeovers: 1,
			contexts: eventOf("widgets", "a", "a", "b"), reconciled: []string{"a", "b"}, after: "pod-a",
			stderr: []string{"took over the lease", "previousHolder=pod-b"}},
		{name: "a lease run of the holder only renews", holder: "pod-a", renewedAgo: 20 * time.Second,
			contexts: leaseRun("lease", "", "a", "b"), after: "pod-a"},
		{name: "a lease run of a standby stands down", holder: "pod-b", renewedAgo: 20 * time.Second,
			contexts: leaseRun("lease", "", "a", "b"), after: "pod-b", standDowns: 1},
		{name: "a lease run that takes over reconciles everything", holder: "pod-b", renewedAgo: 91 * time.Second, takeovers: 1,
			contexts: leaseRun("lease", "", "a", "b"), reconciled: []string{"a", "b"}, after: "pod-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.enable().contexts(tt.contexts)
			h.env["OPENSTACK_SYNC_LEASE_NAME"] = "oso"
			h.env["OPENSTACK_SYNC_LEASE_NAMESPACE"] = "ops"
			h.env["OPENSTACK_SYNC_LEASE_HOLDER"] = "pod-a"
			for _, n := range []string{"a", "b"} {
				h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", n), widget(n))
			}
			store := &leasetest.Store{}
			if tt.holder != "" {
				store.Set("ops", leaseName, lease.Record{Holder: tt.holder, Duration: 90 * time.Second, RenewTime: now.Add(-tt.renewedAgo)})
			}
			h.env[metrics.PathEnv] = filepath.Join(t.TempDir(), "metrics.json")
			code := h.mainWith(func(d *hook.Deps) {
				d.NewLeaseStore = func(hookenv.KubeLimit) (lease.Store, error) { return store, nil }
				d.NewMetrics = func() hook.MetricsFile { return metrics.NewFile() }
				d.Now = func() time.Time { return now }
			}, "--plugin", "widgets.wasm")
			assert.Equal(t, tt.code, code, h.stderr.String())
			var got []string
			for _, r := range h.plugin.Reconciled() {
				got = append(got, r.Object.Name)
			}
			assert.Equal(t, tt.reconciled, got)
			rec, err := store.Get(context.Background(), "ops", leaseName)
			require.NoError(t, err)
			assert.Equal(t, tt.after, rec.Holder)
			for _, s := range tt.stderr {
				assert.Contains(t, h.stderr.String(), s)
			}
			m := opsIn(t, h.env[metrics.PathEnv])
			assert.Equal(t, tt.standDowns, m["openstack_sync_lease_standdowns_total{plugin=widgets}"])
			assert.Equal(t, tt.takeovers, m["openstack_sync_lease_takeovers_total{plugin=widgets}"])
		})
	}
}

func TestLeaseErrors(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		store  func(hookenv.KubeLimit) (lease.Store, error)
		stderr string
	}{
		{name: "no holder", env: map[string]string{"OPENSTACK_SYNC_LEASE_HOLDER": ""},
			stderr: "OPENSTACK_SYNC_LEASE_HOLDER is required but not set"},
		{name: "a short duration", env: map[string]string{"OPENSTACK_SYNC_LEASE_DURATION": "20"},
			stderr: "OPENSTACK_SYNC_LEASE_DURATION must be whole seconds, at least 40"},
		{name: "a bad name", env: map[string]string{"OPENSTACK_SYNC_LEASE_NAME": "Oso"},
			stderr: "which is not a lower-case DNS subdomain of at most 253 characters"},
		{name: "no store", store: func(hookenv.KubeLimit) (lease.Store, error) { return nil, errors.New("no kubeconfig") },
			stderr: "cannot reach the lease: no kubeconfig"},
		{name: "the API refuses", store: func(hookenv.KubeLimit) (lease.Store, error) {
			return &leasetest.Store{Fail: errors.New("HTTP 403 Forbidden")}, nil
		}, stderr: "cannot tell which replica may act: reading lease ops/oso-widgets: HTTP 403 Forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.enable().contexts(eventOf("widgets", "a", "a"))
			h.env["OPENSTACK_SYNC_LEASE_NAME"] = "oso"
			h.env["OPENSTACK_SYNC_LEASE_NAMESPACE"] = "ops"
			h.env["OPENSTACK_SYNC_LEASE_HOLDER"] = "pod-a"
			for k, v := range tt.env {
				h.env[k] = v
			}
			store := tt.store
			if store == nil {
				store = func(hookenv.KubeLimit) (lease.Store, error) { return &leasetest.Store{}, nil }
			}
			code := h.mainWith(func(d *hook.Deps) { d.NewLeaseStore = store }, "--plugin", "widgets.wasm", "--binding", "widgets")
			assert.Equal(t, hook.ExitFail, code)
			assert.Contains(t, h.stderr.String(), tt.stderr)
			assert.Empty(t, h.plugin.Reconciled(), "a run that cannot tell who acts does nothing")
		})
	}
}
