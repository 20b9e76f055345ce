//go:build e2e

package fakekube

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
)

// TestScenariosAgainstAPIServer runs the fake's scenarios against a real kube-apiserver (the
// real-parts tier: hack/kube-up.sh, kubeconfig in E2E_KUBECONFIG or OPENSTACK_SYNC_TEST_KUBECONFIG).
func TestScenariosAgainstAPIServer(t *testing.T) {
	kubeconfig := cmp.Or(os.Getenv("OPENSTACK_SYNC_TEST_KUBECONFIG"), os.Getenv("E2E_KUBECONFIG"))
	if kubeconfig == "" {
		t.Fatal("the e2e tier needs a real API server: set E2E_KUBECONFIG (hack/e2e.sh does) or OPENSTACK_SYNC_TEST_KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	for _, file := range []string{"testdata/crds/widgets.yaml", "testdata/crds/gadgets.yaml"} {
		kubetest.InstallCRD(t, client, file)
	}
	seq := 0
	newFixture := func(t *testing.T) *fixture {
		seq++
		ns := fmt.Sprintf("fakekube-%d-%d", time.Now().UnixNano(), seq)
		f := &fixture{cfg: cfg, client: client, ns: ns, otherNS: ns + "-other",
			widgets: client.Resource(widgetsGVR).Namespace(ns), gadgets: client.Resource(gadgetsGVR).Namespace(ns)}
		nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
		for _, n := range []string{f.ns, f.otherNS} {
			_, err := client.Resource(nsGVR).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": n}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Resource(nsGVR).Delete(context.Background(), n, metav1.DeleteOptions{}) })
		}
		t.Cleanup(func() { clearFinalizers(client, f) })
		list, err := f.widgets.List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		w, err := f.widgets.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		require.NoError(t, err)
		t.Cleanup(w.Stop)
		var mu sync.Mutex
		var seen []observed
		go func() {
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				names := map[watch.EventType]string{watch.Added: "Added", watch.Modified: "Modified", watch.Deleted: "Deleted"}
				mu.Lock()
				seen = append(seen, observed{Type: names[ev.Type], Name: u.GetName(), Object: u.Object})
				mu.Unlock()
			}
		}()
		f.events = func(t *testing.T, from, want int) []observed {
			// The watch is asynchronous: wait (bounded) for the events the scenario expects.
			for i := 0; i < 200; i++ {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n >= from+want {
					break
				}
				time.Sleep(25 * time.Millisecond)
			}
			mu.Lock()
			defer mu.Unlock()
			if from > len(seen) {
				return nil
			}
			return append([]observed(nil), seen[from:]...)
		}
		return f
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.run(t, newFixture) })
	}
}

// clearFinalizers lets the namespaces go: a scenario may leave a terminating widget behind.
func clearFinalizers(client dynamic.Interface, f *fixture) {
	list, err := f.widgets.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, it := range list.Items {
		if len(it.GetFinalizers()) > 0 {
			_, _ = f.widgets.Patch(context.Background(), it.GetName(), "application/merge-patch+json",
				[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	}
}
