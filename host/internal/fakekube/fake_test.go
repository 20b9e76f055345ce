package fakekube

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// fakeFixture serves testdata/crds on a fresh fake, reached through a kubeconfig file as clients
// in other processes reach it.
func fakeFixture(t *testing.T) *fixture {
	t.Helper()
	crds, err := LoadCRDs("testdata/crds")
	require.NoError(t, err)
	srv, err := Start(crds...)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, srv.WriteKubeconfig(path))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	client, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	const ns = "openstack"
	return &fixture{
		cfg: cfg, client: client, ns: ns, otherNS: "elsewhere",
		widgets: client.Resource(widgetsGVR).Namespace(ns),
		gadgets: client.Resource(gadgetsGVR).Namespace(ns),
		events: func(t *testing.T, from, want int) []observed {
			all, _ := srv.Events(0)
			var out []observed
			for _, e := range all {
				if e.Resource.Plural == "widgets" && e.Namespace == ns {
					out = append(out, observed{Type: string(e.Type), Name: e.Name, Object: e.Object})
				}
			}
			if from > len(out) {
				return nil
			}
			return out[from:]
		},
	}
}

func TestScenarios(t *testing.T) {
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.run(t, fakeFixture) })
	}
}

func TestRequestsNeedTheKubeconfigToken(t *testing.T) {
	crds, err := LoadCRDs("testdata/crds")
	require.NoError(t, err)
	srv, err := Start(crds...)
	require.NoError(t, err)
	defer srv.Close()
	resp, err := srv.http.Client().Get(srv.URL() + "/apis/test.openstack-sync.io/v1alpha1/namespaces/openstack/widgets")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
