package kubetest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// InstallCRD creates the CRD in file through a real API server (one already there is fine) and
// waits until it is Established, so the tests that follow can use its resource at once.
func InstallCRD(t testing.TB, client dynamic.Interface, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(data, &obj))
	crds := client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	_, err = crds.Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	name := obj["metadata"].(map[string]any)["name"].(string)
	for range 200 {
		got, err := crds.Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(t, err)
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("CRD %s never became established", name)
}
