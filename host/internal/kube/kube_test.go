package kube_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

var target = kubeapi.Target{Group: "example.openstack-sync.io", Version: "v1alpha1", Plural: "widgets", Namespace: "ns", Name: "a"}

var path = kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a")

func client(t *testing.T, s *kubetest.Server) *kube.Client {
	c, err := kube.NewForConfig(s.Config(), kube.Limit{})
	require.NoError(t, err)
	return c
}

func TestMergePatchStatus(t *testing.T) {
	s := kubetest.NewServer(t)
	s.Put(path, map[string]any{"metadata": map[string]any{"name": "a", "resourceVersion": "1"}, "spec": map[string]any{"x": 1}})
	c := client(t, s)
	require.NoError(t, c.MergePatchStatus(context.Background(), target, []byte(`{"status":{"syncStatus":"Synced"},"spec":{"x":2}}`)))
	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "PATCH", reqs[0].Method)
	assert.Equal(t, path+"/status", reqs[0].Path)
	assert.Equal(t, "application/merge-patch+json", reqs[0].ContentType)
	obj := s.Object(path)
	assert.Equal(t, map[string]any{"syncStatus": "Synced"}, obj["status"])
	assert.Equal(t, map[string]any{"x": float64(1)}, obj["spec"], "the status subresource never changes spec")
}

func TestJSONPatchAndFinalizers(t *testing.T) {
	s := kubetest.NewServer(t)
	s.Put(path, map[string]any{"metadata": map[string]any{"name": "a", "resourceVersion": "1", "finalizers": []any{"x/y"}}})
	c := client(t, s)
	ctx := context.Background()
	require.NoError(t, c.JSONPatch(ctx, target, []byte(`[{"op":"add","path":"/metadata/finalizers/-","value":"z"}]`)))
	assert.Equal(t, "application/json-patch+json", s.Requests()[0].ContentType)
	got, err := c.Finalizers(ctx, target)
	require.NoError(t, err)
	assert.Equal(t, []string{"x/y", "z"}, got)
}

func TestAPIErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		code     int
		body     string
		wantText string
		gone     bool
		notFound bool
	}{
		{name: "object gone", code: 404, body: kubetest.Status(404, "NotFound", "a", `widgets "a" not found`),
			wantText: `HTTP 404 Not Found: {"apiVersion":"v1"`, gone: true, notFound: true},
		{name: "other name", code: 404, body: kubetest.Status(404, "NotFound", "b", "not found"), wantText: "HTTP 404 Not Found: ", notFound: true},
		{name: "no details", code: 404, body: kubetest.Status(404, "NotFound", "", "not found"), wantText: "HTTP 404 Not Found: ", notFound: true},
		{name: "null details", code: 404, body: `{"kind":"Status","details":null,"code":404}`, wantText: `HTTP 404 Not Found: {"kind":"Status","details":null,"code":404}`, notFound: true},
		{name: "not an object", code: 404, body: `["a"]`, wantText: `HTTP 404 Not Found`, notFound: true},
		{name: "route missing", code: 404, body: "404 page not found\n", wantText: "HTTP 404 Not Found: ", notFound: true},
		{name: "forbidden", code: 403, body: kubetest.Status(403, "Forbidden", "a", "forbidden"), wantText: "HTTP 403 Forbidden: "},
		{name: "long multi-line body", code: 500, body: "{\"kind\":\"Status\",\"message\":\"" + strings.Repeat("x\\n", 400) + "\"}",
			wantText: "HTTP 500 Internal Server Error: "},
		// Cut on a character, not a byte: the detail goes into log lines and JSON logs.
		{name: "long multi-byte body", code: 500, body: "{\"kind\":\"Status\",\"message\":\"" + strings.Repeat("é", 600) + "\"}",
			wantText: "HTTP 500 Internal Server Error: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := kubetest.NewServer(t)
			s.Intercept = func(kubetest.Request) (int, string, bool) { return tt.code, tt.body, true }
			err := client(t, s).MergePatchStatus(ctx, target, []byte(`{}`))
			ae, ok := kubeapi.AsAPIError(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tt.code, ae.Code)
			assert.True(t, strings.HasPrefix(ae.Error(), tt.wantText), ae.Error())
			assert.LessOrEqual(t, len(ae.Error()), len("HTTP 500 Internal Server Error: ")+512)
			assert.NotContains(t, ae.Error(), "\n")
			assert.True(t, utf8.ValidString(ae.Error()), "detail cut inside a character: %q", ae.Error())
			assert.Equal(t, tt.gone, ae.ObjectGone("a"))
			assert.Equal(t, tt.notFound, apierrors.IsNotFound(err), "client-go's error stays reachable")
		})
	}
}

func TestTransportErrorIsNotAnAPIError(t *testing.T) {
	s := kubetest.NewServer(t)
	c := client(t, s)
	s.Close()
	err := c.JSONPatch(context.Background(), target, []byte(`[]`))
	require.Error(t, err)
	_, ok := kubeapi.AsAPIError(err)
	assert.False(t, ok)
}

func TestGetSecretData(t *testing.T) {
	s := kubetest.NewServer(t)
	s.PutSecret("ns", "creds", map[string][]byte{"clouds.yaml": []byte("clouds: {}\n")})
	c := client(t, s)
	data, err := c.GetSecretData(context.Background(), "ns", "creds")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"clouds.yaml": []byte("clouds: {}\n")}, data)
	_, err = c.GetSecretData(context.Background(), "other", "creds")
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
}

func TestConfigFromKubeconfig(t *testing.T) {
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t0k}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBECONFIG", kc)
	cfg, err := kube.Config()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.Host)
	assert.Equal(t, "t0k", cfg.BearerToken)

	t.Setenv("KUBECONFIG", "")
	_, err = kube.Config()
	assert.EqualError(t, err, "no Kubernetes configuration: not running in a cluster and KUBECONFIG is not set")
}
