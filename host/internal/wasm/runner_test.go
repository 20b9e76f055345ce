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

// Each way a wasm plugin can misbehave in reconcile, driven by the real runner: that CR ends Failed
// with a message naming the plugin and the entry point, the other CR of the group still syncs on a
// fresh instance, and the run exits 1 without pruning.
func TestMisbehavingPluginFailsOnlyItsCRThroughTheRunner(t *testing.T) {
	cases := []struct {
		name, guest string
		bad         map[string]any
		opts        func(*wasm.Options)
		want        string
	}{
		{name: "panic", guest: "pdkmock", bad: map[string]any{"action": "panic"},
			want: `wasm plugin "mock" reconcile: panic: mock plugin panics on purpose`},
		{name: "infinite loop", guest: "pdkmock", bad: map[string]any{"action": "loop"},
			opts: func(o *wasm.Options) { o.CallTimeout = 300 * time.Millisecond },
			want: `wasm plugin "mock" reconcile: timeout: `},
		{name: "memory hog", guest: "pdkmock", bad: map[string]any{"action": "hog"},
			opts: func(o *wasm.Options) { o.MemoryLimitPages = 160 },
			want: `wasm plugin "mock" reconcile: out of memory: `},
		{name: "call outside its grant", guest: "pdkmock", bad: map[string]any{"action": "outside-grant"},
			want: "DELETE network v2.0/networks/x: no path pattern the plugin declares for service network matches"},
		{name: "malformed JSON output", guest: "rawmock", bad: map[string]any{"mode": "bad-json"},
			want: `reconcile: protocol: output is not a valid result message`},
		{name: "oversized output", guest: "rawmock", bad: map[string]any{"mode": "huge"},
			want: `reconcile: abi: `},
	}
	cacheDir := t.TempDir() // shared by the cases: each guest compiles once
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, paths, plan := runnerFixture(t, c.bad)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			o := wasm.Options{CacheDir: cacheDir, Logger: log, LookupEnv: func(string) (string, bool) { return "", false }}
			if c.opts != nil {
				c.opts(&o)
			}
			p, err := wasm.Load(context.Background(), guestPath(t, c.guest), o)
			require.NoError(t, err)
			defer p.Close(context.Background())

			code := runOnce(t, srv, p, plan, log)
			if t.Failed() || code != 1 {
				os.Stderr.WriteString(logs.String())
			}
			assert.Equal(t, 1, code)
			bad := readyCondition(t, srv, paths["a-bad"])
			assert.Equal(t, "False", bad["status"])
			assert.Contains(t, bad["message"], c.want)
			good := readyCondition(t, srv, paths["b-good"])
			assert.Equal(t, "True", good["status"], "the neighbour of a failed CR still syncs")
			assert.Contains(t, logs.String(), "failed=1 unreadable=0")
			if c.guest == "pdkmock" {
				st := srv.Object(paths["b-good"])["status"].(map[string]any)
				assert.Equal(t, "t-1", st["thing_id"], "extra status from the plugin reaches the CR")
			}
			if c.name == "panic" {
				assert.Contains(t, logs.String(), "panic: mock plugin panics on purpose", "the guest's panic text is logged")
			}
		})
	}
}

const fixtureGroup, fixtureVersion = "mock.openstack-sync.io", "v1alpha1"

func guestPath(t *testing.T, name string) string {
	return wasmtest.BuildGuest(t, "testdata/guests", name, "../../../pdk")
}

// runnerFixture stores two CRs of one credential group, a-bad with the bad spec and b-good, in a
// fake API server and plans a Synchronization run over them.
func runnerFixture(t *testing.T, bad map[string]any) (*kubetest.Server, map[string]string, planner.Plan) {
	srv := kubetest.NewServer(t)
	paths := map[string]string{}
	var objects []any
	for _, c := range []struct {
		name string
		spec map[string]any
	}{{"a-bad", bad}, {"b-good", nil}} {
		spec := map[string]any{"name": c.name, "cloudCredentialsRef": map[string]any{"secretName": "s1", "cloudName": "c1"}}
		for k, v := range c.spec {
			spec[k] = v
		}
		o := map[string]any{"apiVersion": fixtureGroup + "/" + fixtureVersion, "kind": "Mock",
			"metadata": map[string]any{"name": c.name, "namespace": "ns", "uid": "uid-" + c.name, "generation": 1},
			"spec":     spec}
		paths[c.name] = kubetest.ObjectPath(fixtureGroup, fixtureVersion, "mocks", "ns", c.name)
		srv.Put(paths[c.name], o)
		objects = append(objects, o)
	}
	data, err := json.Marshal([]any{map[string]any{"binding": "mocks", "type": "Synchronization", "objects": objects}})
	require.NoError(t, err)
	doc, err := bindingctx.Parse(data)
	require.NoError(t, err)
	plan, err := planner.Build(doc.Contexts, planner.Options{Binding: "mocks", Kind: "Mock", Log: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return srv, paths, plan
}

func runOnce(t *testing.T, srv *kubetest.Server, p plugin.Plugin, plan planner.Plan, log *slog.Logger) int {
	conn := &plugintest.Connector{Respond: func(_ plugin.Credentials, req plugin.Request) (*plugin.Response, error) {
		if req.Method == "GET" && req.Path != "v2.0/things" {
			return &plugin.Response{StatusCode: 404, Body: []byte(`{"NeutronError":{"message":"not found"}}`)}, nil
		}
		return &plugin.Response{StatusCode: 201, Body: []byte(`{"thing":{"id":"t-1"}}`)}, nil
	}}
	kc, err := kube.NewForConfig(srv.Config(), kube.Limit{})
	require.NoError(t, err)
	rn := &runner.Runner{Plugin: p, Connector: conn, Kube: kc, Log: log,
		Config: hookenv.Config{Prefix: "MOCK", BindingName: "mocks", Enabled: true, APIVersion: fixtureGroup + "/" + fixtureVersion,
			Kind: "Mock", Resource: "mocks." + fixtureGroup, StatusEnabled: true, ReadyRetries: 1, ReadyDelay: time.Second},
		Sleep: func(context.Context, time.Duration) error { return nil },
		Now:   func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	return rn.Run(context.Background(), plan)
}

func readyCondition(t *testing.T, srv *kubetest.Server, path string) map[string]any {
	st, _ := srv.Object(path)["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	require.NotEmpty(t, conds, "status of %s: %v", path, st)
	return conds[0].(map[string]any)
}
