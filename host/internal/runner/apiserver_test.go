//go:build e2e

package runner_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

// apiServer is a real kube-apiserver reached with the admin kubeconfig hack/kube-up.sh writes.
type apiServer struct {
	t    *testing.T
	host string
	hc   *http.Client
}

func (a *apiServer) do(method, path string, body any) (int, map[string]any) {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(a.t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, a.host+path, rd)
	require.NoError(a.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.hc.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

const realGroup = "fwtest.openstack-sync.io"

func (a *apiServer) crPath(ns, name string) string {
	return "/apis/" + realGroup + "/v1alpha1/namespaces/" + ns + "/widgets/" + name
}

// TestAgainstAPIServer checks the finalizer and status rules against the real API server's
// answers (422 for a failed JSON-patch test, 404 Status naming a gone object, the terminating
// state), which kubetest only imitates. It belongs to the e2e tier (build tag e2e) and needs an
// admin kubeconfig in E2E_KUBECONFIG or OPENSTACK_SYNC_TEST_KUBECONFIG.
func TestAgainstAPIServer(t *testing.T) {
	kubeconfig := cmp.Or(os.Getenv("OPENSTACK_SYNC_TEST_KUBECONFIG"), os.Getenv("E2E_KUBECONFIG"))
	if kubeconfig == "" {
		t.Fatal("the e2e tier needs a real API server: set E2E_KUBECONFIG (hack/e2e.sh does) or OPENSTACK_SYNC_TEST_KUBECONFIG")
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	cfg, err := kube.Config()
	require.NoError(t, err)
	hc, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	a := &apiServer{t: t, host: cfg.Host, hc: hc}

	code, _ := a.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + realGroup},
		"spec": map[string]any{"group": realGroup, "scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{"name": "v1alpha1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object",
					"x-kubernetes-preserve-unknown-fields": true}}}}},
	})
	require.Contains(t, []int{201, 409}, code)
	established := false
	for i := 0; i < 100 && !established; i++ {
		_, crd := a.do("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets."+realGroup, nil)
		conds, _ := crd["status"].(map[string]any)["conditions"].([]any)
		for _, c := range conds {
			m := c.(map[string]any)
			established = established || (m["type"] == "Established" && m["status"] == "True")
		}
		if !established {
			time.Sleep(100 * time.Millisecond)
		}
	}
	require.True(t, established, "the CRD never became established")
	ns := fmt.Sprintf("fw-%d", time.Now().UnixNano())
	code, _ = a.do("POST", "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": ns}})
	require.Equal(t, 201, code)
	t.Cleanup(func() { a.do("DELETE", "/api/v1/namespaces/"+ns, nil) })
	code, _ = a.do("POST", "/apis/"+realGroup+"/v1alpha1/namespaces/"+ns+"/widgets", map[string]any{
		"apiVersion": realGroup + "/v1alpha1", "kind": "Widget", "metadata": map[string]any{"name": "a"},
		"spec": map[string]any{"name": "alpha", "cloudCredentialsRef": map[string]any{"secretName": "s", "cloudName": "c"}}})
	require.Equal(t, 201, code)

	hcfg := hookenv.Config{APIVersion: realGroup + "/v1alpha1", Kind: "Widget", Resource: "widgets." + realGroup,
		StatusEnabled: true, Prune: true, ReadyRetries: 1}
	get := func() any { _, o := a.do("GET", a.crPath(ns, "a"), nil); return o }
	run := func(c hookenv.Config, p *plugintest.Plugin, objs ...any) (int, *plugintest.Journal, string) {
		data, err := json.Marshal([]any{map[string]any{"binding": "widgets", "type": "Synchronization", "objects": objs}})
		require.NoError(t, err)
		doc, err := bindingctx.Parse(data)
		require.NoError(t, err)
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		plan, err := planner.Build(doc.Contexts, planner.Options{Binding: "widgets", Kind: "Widget", Log: log})
		require.NoError(t, err)
		client, err := kube.New(kube.Limit{})
		require.NoError(t, err)
		j := &plugintest.Journal{}
		p.Journal = j
		rn := &runner.Runner{Plugin: p, Connector: &plugintest.Connector{Journal: j}, Kube: client, Config: c, Log: log}
		return rn.Run(context.Background(), plan), j, logs.String()
	}
	finalizers := func() []any {
		fs, _ := get().(map[string]any)["metadata"].(map[string]any)["finalizers"].([]any)
		return fs
	}

	stale := get()
	code, _, logs := run(hcfg, &plugintest.Plugin{}, stale)
	require.Equal(t, 0, code, logs)
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, finalizers())
	st := get().(map[string]any)["status"].(map[string]any)
	assert.Equal(t, "Synced", st["syncStatus"])

	// The API server kept every field written, so the next run finds the status current.
	code, j, logs := run(hcfg, &plugintest.Plugin{}, get())
	require.Equal(t, 0, code, logs)
	assert.Contains(t, logs, "status is already current")
	assert.NotContains(t, j.Entries(), "patch status a")

	// PRUNE off removes the finalizer; then an add tested against the stale resourceVersion is
	// rejected with 422 and verified absent: the CR fails before any connection.
	off := hcfg
	off.Prune = false
	code, _, logs = run(off, &plugintest.Plugin{}, get())
	require.Equal(t, 0, code, logs)
	assert.Empty(t, finalizers())
	code, j, logs = run(hcfg, &plugintest.Plugin{}, stale)
	assert.Equal(t, 1, code)
	assert.Contains(t, logs, "failed to add finalizer to Widget a: HTTP 422 Unprocessable Entity")
	assert.Empty(t, j.Entries(), "no OpenStack connection after a failed finalizer write")
	assert.Equal(t, "Unable to add finalizer before reconciling", get().(map[string]any)["status"].(map[string]any)["message"])

	// A wrong plural is a missing route: its 404 names no object and fails the write.
	wrong := hcfg
	wrong.Resource = "gadgets." + realGroup
	code, _, logs = run(wrong, &plugintest.Plugin{}, get())
	assert.Equal(t, 1, code)
	assert.Contains(t, logs, "failed to add finalizer to Widget a: HTTP 404 Not Found")

	// Delete: the CR terminates on our finalizer; the next run prunes its group authoritatively
	// and releases it, and Kubernetes completes the deletion.
	code, _, logs = run(hcfg, &plugintest.Plugin{}, get())
	require.Equal(t, 0, code, logs)
	code, _ = a.do("DELETE", a.crPath(ns, "a"), nil)
	require.Equal(t, 200, code)
	terminating := get()
	require.NotNil(t, terminating.(map[string]any)["metadata"].(map[string]any)["deletionTimestamp"])
	code, j, logs = run(hcfg, &plugintest.Plugin{}, terminating)
	require.Equal(t, 0, code, logs)
	assert.Contains(t, j.Entries(), "prune "+ns+"/s/c via "+ns+"/s/c desired=[] authoritative=true")
	code, _ = a.do("GET", a.crPath(ns, "a"), nil)
	assert.Equal(t, 404, code)

	// Releasing again (a repeated batch) meets a 404 Status naming the object: done, not failed.
	code, _, logs = run(hcfg, &plugintest.Plugin{}, terminating)
	assert.Equal(t, 0, code, logs)
	// A status patch for the gone CR is informational.
	_, _, logs = run(hcfg, &plugintest.Plugin{Results: map[string]plugintest.Result{"a": {Notes: []string{"n"}}}}, stale)
	assert.Contains(t, logs, `msg="Not patching the status; the CR is gone"`)
	assert.Contains(t, logs, `error="HTTP 404 Not Found`)
}
