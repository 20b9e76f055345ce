//go:build e2e

package shelloperator

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// TestSimulatorMatchesShellOperator runs one sequence of changes twice: against a real
// kube-apiserver watched by the real shell-operator v1.20.2, and against fakekube driven by the
// simulator. The binding contexts the hook receives must be the same, once server-assigned values
// (uid, resourceVersion, timestamps, managedFields) are set aside. Two hooks watch the same CRs:
// one with the jqFilter "." and whole objects, one as the host configures its watch
// (hookenv.ObjectFilter, keepFullObjectsInMemory: false), so the simulator's Go rendering of the
// host's filter is held to the real jq's output, event by event. Real-parts tier: needs
// E2E_KUBECONFIG (or OPENSTACK_SYNC_TEST_KUBECONFIG) and the shell-operator binary
// (E2E_SHELL_OPERATOR, else K8S_BIN, else hack/k8s-tools.sh builds it).
func TestSimulatorMatchesShellOperator(t *testing.T) {
	kubeconfig := cmp.Or(os.Getenv("OPENSTACK_SYNC_TEST_KUBECONFIG"), os.Getenv("E2E_KUBECONFIG"))
	if kubeconfig == "" {
		t.Fatal("the e2e tier needs a real API server: set E2E_KUBECONFIG (hack/e2e.sh does) or OPENSTACK_SYNC_TEST_KUBECONFIG")
	}
	operator := shellOperatorBinary(t)
	ns := fmt.Sprintf("simulator-%d", time.Now().UnixNano())
	dir := t.TempDir()
	config := strings.ReplaceAll(string(mustRead(t, "testdata/config-e2e.json")), "NAMESPACE", ns)
	hostConfig := hostWatchConfig(t, config)

	// The real side.
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	kubetest.InstallCRD(t, client, "testdata/crds/widgets.yaml")
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	_, err = client.Resource(nsGVR).Create(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Resource(nsGVR).Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	widgets, err := fakekube.ParseCRDFile("testdata/crds/widgets.yaml")
	require.NoError(t, err)
	real := realSide{client: client.Resource(widgets.GVR()).Namespace(ns)}

	// The simulated side.
	kube, err := fakekube.Start(widgets)
	require.NoError(t, err)
	defer kube.Close()
	fake := fakeSide{kube: kube, r: widgets, ns: ns}

	for _, s := range []side{real, fake} {
		s.create(t, "a", true)
		s.create(t, "b", false)
	}

	hooks := filepath.Join(dir, "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	type watcher struct {
		name, config, realLog, simLog string
		sim                           *Simulator
	}
	watchers := []*watcher{{name: "widgets", config: config}, {name: "fields", config: hostConfig}}
	for _, w := range watchers {
		w.realLog, w.simLog = filepath.Join(dir, w.name+"-real.log"), filepath.Join(dir, w.name+"-sim.log")
		writeHook(t, filepath.Join(hooks, w.name), w.config, w.realLog)
	}
	startOperator(t, operator, kubeconfig, hooks, filepath.Join(dir, "operator"))

	kc := filepath.Join(dir, "fake-kubeconfig")
	require.NoError(t, kube.WriteKubeconfig(kc))
	for _, w := range watchers {
		simHook := filepath.Join(dir, w.name+"-sim-hook")
		writeHook(t, simHook, w.config, w.simLog)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, w.name+"-sim"), 0o755))
		w.sim, err = New(context.Background(), kube, Hook{Command: []string{simHook}, Env: []string{"PATH=" + os.Getenv("PATH")}}, kc,
			filepath.Join(dir, w.name+"-sim"))
		require.NoError(t, err)
		_, err = w.sim.Synchronization(context.Background())
		require.NoError(t, err)
	}

	steps := []struct {
		name   string
		do     func(t *testing.T, s side)
		events int
	}{
		{"edit a's spec", func(t *testing.T, s side) { s.patch(t, "a", `{"spec":{"size":2}}`) }, 1},
		{"add c", func(t *testing.T, s side) { s.create(t, "c", false) }, 1},
		{"label c (only metadata the filter leaves out changes, and the resourceVersion)", func(t *testing.T, s side) {
			s.patch(t, "c", `{"metadata":{"labels":{"team":"metal"}}}`)
		}, 1},
		{"the hook's status write on c (an echo the planner skips)", func(t *testing.T, s side) {
			s.patchStatus(t, "c", `{"status":{"syncStatus":"Synced","observedGeneration":1}}`)
		}, 1},
		{"add an unreadable CR", func(t *testing.T, s side) {
			s.createObject(t, map[string]any{"apiVersion": "test.openstack-sync.io/v1alpha1", "kind": "Widget",
				"metadata": map[string]any{"name": "broken"}, "spec": map[string]any{"cloudCredentialsRef": "not an object"}})
		}, 1},
		{"delete a (finalizer holds it)", func(t *testing.T, s side) { s.delete(t, "a") }, 1},
		{"release a's finalizer", func(t *testing.T, s side) { s.patch(t, "a", `{"metadata":{"finalizers":null}}`) }, 1},
		{"delete b", func(t *testing.T, s side) { s.delete(t, "b") }, 1},
	}
	want := 1 // the Synchronization
	for _, w := range watchers {
		waitContexts(t, w.realLog, want)
	}
	for _, st := range steps {
		want += st.events
		st.do(t, real)
		for _, w := range watchers {
			waitContexts(t, w.realLog, want)
		}
		st.do(t, fake)
		for _, w := range watchers {
			_, err := w.sim.Events(context.Background())
			require.NoError(t, err, st.name)
		}
	}
	for _, w := range watchers {
		got, wantCtx := normalised(t, readContexts(t, w.simLog)), normalised(t, readContexts(t, w.realLog))
		require.Len(t, got, len(wantCtx), w.name)
		for i := range wantCtx {
			assert.Equal(t, wantCtx[i], got[i], "%s: binding context %d", w.name, i)
		}
	}
	// Every batch the real shell-operator sent plans the same with the host's watch as with whole
	// objects: every rule of docs/contract.md §2–§3 (the echo of the hook's status write needs the
	// generation and the status, finalizer writes the resourceVersion, a release the UID, and an
	// unreadable CR is refused naming its field).
	whole, filtered := readBatches(t, watchers[0].realLog), readBatches(t, watchers[1].realLog)
	require.Len(t, filtered, len(whole))
	for i := range whole {
		a, b := plan(t, whole[i], "widgets"), plan(t, filtered[i], "fields")
		assert.Equal(t, a, b, "batch %d", i)
	}
	var plans []string
	for _, b := range filtered {
		plans = append(plans, plan(t, b, "fields"))
	}
	all := strings.Join(plans, "\n")
	assert.Contains(t, all, `cr=`+ns+`/broken from="Added CR" reason="spec.cloudCredentialsRef is missing or not an object"`)
	assert.Contains(t, all, `msg="Skipping a Modified event; the CR already records the outcome of its generation" kind=Widget cr=`+ns+`/c`)

	// The host's watch hands over no whole object and none of what the filter leaves out.
	fields := readContexts(t, watchers[1].realLog)
	raw, err := json.Marshal(fields)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"object":{`)
	assert.NotContains(t, string(raw), "managedFields")
	assert.NotContains(t, string(raw), `"labels"`)
	assert.Contains(t, string(raw), `"resourceVersion"`)
}

// hostWatchConfig is config's watch as the host configures its own (hookenv.ObjectFilter,
// keepFullObjectsInMemory: false), named "fields".
func hostWatchConfig(t *testing.T, config string) string {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(config), &doc))
	w := doc["kubernetes"].([]any)[0].(map[string]any)
	w["name"], w["queue"], w["includeSnapshotsFrom"] = "fields", "fields", []any{"fields"}
	w["jqFilter"], w["keepFullObjectsInMemory"] = hookenv.ObjectFilter, false
	out, err := json.MarshalIndent(doc, "", "  ")
	require.NoError(t, err)
	return string(out)
}

// plan is what the planner makes of one batch of binding contexts for the binding: the plan
// (CRs as name:resourceVersion:uid) and its log lines.
func plan(t *testing.T, batch []byte, binding string) string {
	t.Helper()
	doc, err := bindingctx.Parse(batch)
	require.NoError(t, err)
	var logs bytes.Buffer
	p, err := planner.Build(doc.Contexts, planner.Options{Binding: binding, Kind: "Widget",
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))})
	require.NoError(t, err)
	crs := func(rs []*resource.Resource) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Name+":"+r.ResourceVersion+":"+r.UID+":"+fmt.Sprint(r.Finalizers)+":"+string(r.Spec))
		}
		return strings.Join(out, " ")
	}
	return fmt.Sprintf("reconcile=[%s] desired=[%s] deleted=[%s] unreadable=%v prune=%v\n%s",
		crs(p.Reconcile), crs(p.Desired), crs(p.Deleted), p.Unreadable, p.PruneCredentials, logs.String())
}

// readBatches are the binding-context arrays a hook received, one per run.
func readBatches(t *testing.T, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out [][]byte
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" {
			out = append(out, []byte(line))
		}
	}
	return out
}

type side interface {
	create(t *testing.T, name string, withFinalizer bool)
	createObject(t *testing.T, obj map[string]any)
	patch(t *testing.T, name, mergePatch string)
	patchStatus(t *testing.T, name, mergePatch string)
	delete(t *testing.T, name string)
}

type realSide struct{ client dynamic.ResourceInterface }

func (r realSide) create(t *testing.T, name string, withFinalizer bool) {
	r.createObject(t, widgetObject(name, withFinalizer))
}

func (r realSide) createObject(t *testing.T, obj map[string]any) {
	_, err := r.client.Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (r realSide) patch(t *testing.T, name, p string) {
	_, err := r.client.Patch(context.Background(), name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
	require.NoError(t, err)
}

func (r realSide) patchStatus(t *testing.T, name, p string) {
	_, err := r.client.Patch(context.Background(), name, types.MergePatchType, []byte(p), metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}

func (r realSide) delete(t *testing.T, name string) {
	require.NoError(t, r.client.Delete(context.Background(), name, metav1.DeleteOptions{}))
}

type fakeSide struct {
	kube *fakekube.Server
	r    fakekube.Resource
	ns   string
}

func (f fakeSide) create(t *testing.T, name string, withFinalizer bool) {
	f.createObject(t, widgetObject(name, withFinalizer))
}

func (f fakeSide) createObject(t *testing.T, obj map[string]any) {
	_, err := f.kube.Create(f.r, f.ns, obj)
	require.NoError(t, err)
}

func (f fakeSide) patch(t *testing.T, name, p string) {
	_, err := f.kube.Patch(f.r, f.ns, name, "", fakekube.MergePatchType, []byte(p))
	require.NoError(t, err)
}

func (f fakeSide) patchStatus(t *testing.T, name, p string) {
	_, err := f.kube.Patch(f.r, f.ns, name, "status", fakekube.MergePatchType, []byte(p))
	require.NoError(t, err)
}

func (f fakeSide) delete(t *testing.T, name string) {
	_, _, err := f.kube.Delete(f.r, f.ns, name, fakekube.DeleteOptions{})
	require.NoError(t, err)
}

func widgetObject(name string, withFinalizer bool) map[string]any {
	meta := map[string]any{"name": name}
	if withFinalizer {
		meta["finalizers"] = []any{"openstack-sync.io/finalizer"}
	}
	return map[string]any{"apiVersion": "test.openstack-sync.io/v1alpha1", "kind": "Widget", "metadata": meta,
		"spec": map[string]any{"size": 1, "cloudCredentialsRef": map[string]any{"secretName": "s", "cloudName": "c"}}}
}

// writeHook writes a bash hook that prints config on --config and appends each binding context
// array to log, one per line.
func writeHook(t *testing.T, path, config, log string) {
	t.Helper()
	cfgPath := path + ".config.json"
	require.NoError(t, os.WriteFile(cfgPath, []byte(config), 0o600))
	script := fmt.Sprintf("#!/bin/bash\nif [ \"$1\" = --config ]; then cat %q; exit 0; fi\n"+
		"tr -d '\\n' < \"$BINDING_CONTEXT_PATH\" >> %q\necho >> %q\n", cfgPath, log, log)
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
}

func startOperator(t *testing.T, binary, kubeconfig, hooks, tmp string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(tmp, 0o700))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cmd := exec.Command(binary, "start", "--kube-config", kubeconfig, "--hooks-dir", hooks, "--tmp-dir", tmp,
		"--listen-address", "127.0.0.1", "--listen-port", fmt.Sprint(port),
		"--debug-unix-socket", filepath.Join(tmp, "debug.sock"), "--log-type", "json")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("shell-operator log:\n%s", logs.String())
		}
	})
}

func shellOperatorBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("E2E_SHELL_OPERATOR"); p != "" {
		return p
	}
	if b := os.Getenv("K8S_BIN"); b != "" {
		return filepath.Join(b, "shell-operator")
	}
	out, err := exec.Command("../../../../hack/k8s-tools.sh").Output()
	require.NoError(t, err, "hack/k8s-tools.sh")
	return filepath.Join(strings.TrimSpace(string(out)), "shell-operator")
}

func readContexts(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var batch []map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &batch), line)
		out = append(out, batch...)
	}
	return out
}

// waitContexts waits, bounded, until the real operator has delivered n contexts.
func waitContexts(t *testing.T, path string, n int) {
	t.Helper()
	for i := 0; i < 600; i++ {
		if len(readContexts(t, path)) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("shell-operator delivered %d of %d binding contexts", len(readContexts(t, path)), n)
}

// normalised drops the managed fields and marks the values the servers assign differently (uid,
// resourceVersion, timestamps) as set, so a filter that lost one of them still shows.
func normalised(t *testing.T, contexts []map[string]any) []map[string]any {
	t.Helper()
	data, err := json.Marshal(contexts)
	require.NoError(t, err)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(data, &out))
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if meta, ok := x["metadata"].(map[string]any); ok {
				delete(meta, "managedFields") // the fake records none
				// Server-assigned values differ between the servers; whether each is there does not.
				for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"} {
					if meta[k] != nil {
						meta[k] = "set"
					}
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, c := range out {
		walk(c)
	}
	return out
}
