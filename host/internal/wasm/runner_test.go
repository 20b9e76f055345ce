package wasm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// A wasm plugin that panics on one CR, driven by the real runner: that CR ends Failed with a
// message naming the plugin and entry point, the other CR of the group still syncs on a fresh
// instance, and the run exits 1 without pruning.
func TestPanickingPluginFailsOnlyItsCRThroughTheRunner(t *testing.T) {
	const group, version = "mock.openstack-sync.io", "v1alpha1"
	path := func(name string) string { return kubetest.ObjectPath(group, version, "mocks", "ns", name) }
	srv := kubetest.NewServer(t)
	var objects []any
	for _, c := range []struct{ name, action string }{{"a-bad", "panic"}, {"b-good", ""}} {
		o := map[string]any{"apiVersion": group + "/" + version, "kind": "Mock",
			"metadata": map[string]any{"name": c.name, "namespace": "ns", "uid": "uid-" + c.name, "generation": 1},
			"spec": map[string]any{"name": c.name, "action": c.action,
				"cloudCredentialsRef": map[string]any{"secretName": "s1", "cloudName": "c1"}}}
		srv.Put(path(c.name), o)
		objects = append(objects, o)
	}
	data, err := json.Marshal([]any{map[string]any{"binding": "mocks", "type": "Synchronization", "objects": objects}})
	require.NoError(t, err)
	ctxs, err := bindingctx.Parse(data)
	require.NoError(t, err)
	plan, err := planner.Build(ctxs, planner.Options{Binding: "mocks", Kind: "Mock", Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)

	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	wasmPath := wasmtest.BuildGuest(t, "testdata/guests", "pdkmock", "../../../pdk")
	p, err := wasm.Load(context.Background(), wasmPath, wasm.Options{CacheDir: t.TempDir(), Logger: log,
		LookupEnv: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	defer p.Close(context.Background())

	conn := &plugintest.Connector{Respond: func(_ plugin.Credentials, req plugin.Request) (*plugin.Response, error) {
		if req.Method == "GET" && req.Path != "v2.0/things" {
			return &plugin.Response{StatusCode: 404, Body: []byte(`{"NeutronError":{"message":"not found"}}`)}, nil
		}
		return &plugin.Response{StatusCode: 201, Body: []byte(`{"thing":{"id":"t-1"}}`)}, nil
	}}
	kc, err := kube.NewForConfig(srv.Config())
	require.NoError(t, err)
	rn := &runner.Runner{Plugin: p, Connector: conn, Kube: kc, Log: log,
		Config: hookenv.Config{Prefix: "MOCK", BindingName: "mocks", Enabled: true, APIVersion: group + "/" + version,
			Kind: "Mock", Resource: "mocks." + group, StatusEnabled: true, ReadyRetries: 1, ReadyDelay: time.Second},
		Sleep: func(context.Context, time.Duration) error { return nil },
		Now:   func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	code := rn.Run(context.Background(), plan)
	if t.Failed() || code != 1 {
		os.Stderr.WriteString(logs.String())
	}
	assert.Equal(t, 1, code)

	ready := func(name string) map[string]any {
		st, _ := srv.Object(path(name))["status"].(map[string]any)
		conds, _ := st["conditions"].([]any)
		require.NotEmpty(t, conds, "status of %s: %v", name, st)
		return conds[0].(map[string]any)
	}
	bad := ready("a-bad")
	assert.Equal(t, "False", bad["status"])
	assert.Contains(t, bad["message"], `wasm plugin "mock" reconcile: panic: mock plugin panics on purpose`)
	good := ready("b-good")
	assert.Equal(t, "True", good["status"])
	st := srv.Object(path("b-good"))["status"].(map[string]any)
	assert.Equal(t, "t-1", st["thing_id"], "extra status from the plugin reaches the CR")
	assert.Contains(t, logs.String(), "panic: mock plugin panics on purpose", "the guest's panic text is logged")
}
