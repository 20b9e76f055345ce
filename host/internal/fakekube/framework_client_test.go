package fakekube_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// The framework's own client, loaded from KUBECONFIG as a hook loads it, sends the exact request
// forms of docs/contract.md §5.2 and §6.2; the fake must answer them as the real server does, or the demo
// and the fast tier would exercise different code paths than a cluster.
func TestFrameworkClientRequestForms(t *testing.T) {
	crds, err := fakekube.LoadCRDs("testdata/crds")
	require.NoError(t, err)
	srv, err := fakekube.Start(crds...)
	require.NoError(t, err)
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, srv.WriteKubeconfig(path))
	t.Setenv("KUBECONFIG", path)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	client, err := kube.New(kube.Limit{})
	require.NoError(t, err)

	widgets, _ := srv.Resource("test.openstack-sync.io", "widgets")
	obj, err := srv.Create(widgets, "openstack", map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{}})
	require.NoError(t, err)
	rv := obj["metadata"].(map[string]any)["resourceVersion"]
	const fin = "openstack-sync.io/finalizer"
	target := kubeapi.Target{Group: widgets.Group, Version: widgets.Version, Plural: widgets.Plural, Namespace: "openstack", Name: "a"}
	ctx := context.Background()

	// Finalizer add guarded by resourceVersion; a stale guard is rejected.
	require.NoError(t, client.JSONPatch(ctx, target, fmt.Appendf(nil,
		`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"add","path":"/metadata/finalizers","value":[%q]}]`, rv, fin)))
	err = client.JSONPatch(ctx, target, fmt.Appendf(nil,
		`[{"op":"test","path":"/metadata/resourceVersion","value":%q},{"op":"add","path":"/metadata/finalizers/-","value":"x.io/y"}]`, rv))
	ae, ok := kubeapi.AsAPIError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusUnprocessableEntity, ae.Code)
	assert.False(t, ae.ObjectGone("a"))
	fins, err := client.Finalizers(ctx, target)
	require.NoError(t, err)
	assert.Equal(t, []string{fin}, fins)

	// Status merge patch.
	require.NoError(t, client.MergePatchStatus(ctx, target, []byte(`{"status":{"syncStatus":"Synced"}}`)))
	got, err := srv.Get(widgets, "openstack", "a")
	require.NoError(t, err)
	assert.Equal(t, "Synced", got["status"].(map[string]any)["syncStatus"])

	// Delete, then the release patch removes the object.
	_, _, err = srv.Delete(widgets, "openstack", "a", fakekube.DeleteOptions{})
	require.NoError(t, err)
	release := fmt.Appendf(nil, `[{"op":"test","path":"/metadata/finalizers/0","value":%q},{"op":"remove","path":"/metadata/finalizers/0"}]`, fin)
	require.NoError(t, client.JSONPatch(ctx, target, release))

	// A second release meets a 404 naming the object: the framework counts it as released.
	err = client.JSONPatch(ctx, target, release)
	ae, ok = kubeapi.AsAPIError(err)
	require.True(t, ok, "%v", err)
	assert.True(t, ae.ObjectGone("a"))
	err = client.MergePatchStatus(ctx, target, []byte(`{"status":{}}`))
	ae, _ = kubeapi.AsAPIError(err)
	assert.True(t, ae.ObjectGone("a"))

	// A missing CRD route is a plain 404 that names nothing: not "gone".
	err = client.JSONPatch(ctx, kubeapi.Target{Group: "nothing.io", Version: "v1", Plural: "things", Namespace: "openstack", Name: "a"}, release)
	ae, ok = kubeapi.AsAPIError(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusNotFound, ae.Code)
	assert.False(t, ae.ObjectGone("a"))

	// Secrets.
	_, err = srv.Create(fakekube.SecretResource, "openstack", map[string]any{
		"metadata": map[string]any{"name": "creds"}, "stringData": map[string]any{"clouds.yaml": "clouds: {}"},
	})
	require.NoError(t, err)
	data, err := client.GetSecretData(ctx, "openstack", "creds")
	require.NoError(t, err)
	assert.Equal(t, "clouds: {}", string(data["clouds.yaml"]))
}
