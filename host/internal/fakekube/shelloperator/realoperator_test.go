//go:build e2e

package shelloperator

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
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

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
)

// TestSimulatorMatchesShellOperator runs one sequence of changes twice: against a real
// kube-apiserver watched by the real shell-operator v1.20.2, and against fakekube driven by the
// simulator. The binding contexts the hook receives must be the same, once server-assigned values
// (uid, resourceVersion, timestamps, managedFields) are set aside. Real-parts tier: needs
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

	realLog := filepath.Join(dir, "real.log")
	hooks := filepath.Join(dir, "hooks")
	require.NoError(t, os.MkdirAll(hooks, 0o755))
	writeHook(t, filepath.Join(hooks, "widgets"), config, realLog)
	startOperator(t, operator, kubeconfig, hooks, filepath.Join(dir, "operator"))

	simLog := filepath.Join(dir, "sim.log")
	simHook := filepath.Join(dir, "sim-hook")
	writeHook(t, simHook, config, simLog)
	kc := filepath.Join(dir, "fake-kubeconfig")
	require.NoError(t, kube.WriteKubeconfig(kc))
	sim, err := New(context.Background(), kube, Hook{Command: []string{simHook}, Env: []string{"PATH=" + os.Getenv("PATH")}}, kc, dir)
	require.NoError(t, err)
	_, err = sim.Synchronization(context.Background())
	require.NoError(t, err)

	steps := []struct {
		name   string
		do     func(t *testing.T, s side)
		events int
	}{
		{"edit a's spec", func(t *testing.T, s side) { s.patch(t, "a", `{"spec":{"size":2}}`) }, 1},
		{"add c", func(t *testing.T, s side) { s.create(t, "c", false) }, 1},
		{"delete a (finalizer holds it)", func(t *testing.T, s side) { s.delete(t, "a") }, 1},
		{"release a's finalizer", func(t *testing.T, s side) { s.patch(t, "a", `{"metadata":{"finalizers":null}}`) }, 1},
		{"delete b", func(t *testing.T, s side) { s.delete(t, "b") }, 1},
	}
	want := 1 // the Synchronization
	waitContexts(t, realLog, want)
	for _, st := range steps {
		want += st.events
		st.do(t, real)
		waitContexts(t, realLog, want)
		st.do(t, fake)
		_, err := sim.Events(context.Background())
		require.NoError(t, err, st.name)
	}
	got, wantCtx := normalised(t, readContexts(t, simLog)), normalised(t, readContexts(t, realLog))
	require.Len(t, got, len(wantCtx))
	for i := range wantCtx {
		assert.Equal(t, wantCtx[i], got[i], "binding context %d", i)
	}
}

type side interface {
	create(t *testing.T, name string, withFinalizer bool)
	patch(t *testing.T, name, mergePatch string)
	delete(t *testing.T, name string)
}

type realSide struct{ client dynamic.ResourceInterface }

func (r realSide) create(t *testing.T, name string, withFinalizer bool) {
	_, err := r.client.Create(context.Background(), &unstructured.Unstructured{Object: widgetObject(name, withFinalizer)}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func (r realSide) patch(t *testing.T, name, p string) {
	_, err := r.client.Patch(context.Background(), name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
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
	_, err := f.kube.Create(f.r, f.ns, widgetObject(name, withFinalizer))
	require.NoError(t, err)
}

func (f fakeSide) patch(t *testing.T, name, p string) {
	_, err := f.kube.Patch(f.r, f.ns, name, "", fakekube.MergePatchType, []byte(p))
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
		"spec": map[string]any{"size": 1}}
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

// normalised drops what the servers assign differently and marks deletionTimestamp as set.
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
				for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
					delete(meta, k)
				}
				if meta["deletionTimestamp"] != nil {
					meta["deletionTimestamp"] = "set"
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
