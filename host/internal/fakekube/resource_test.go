package fakekube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadCRDs(t *testing.T) {
	got, err := LoadCRDs("testdata/crds")
	require.NoError(t, err)
	assert.Equal(t, []Resource{
		{Group: "test.openstack-sync.io", Version: "v1alpha1", Plural: "gadgets", Kind: "Gadget"},
		{Group: "test.openstack-sync.io", Version: "v1alpha1", Plural: "widgets", Kind: "Widget", StatusSubresource: true},
	}, got)
	assert.Equal(t, "widgets.test.openstack-sync.io", got[1].ResourceName())
	assert.Equal(t, "test.openstack-sync.io/v1alpha1", got[1].APIVersion())
}

func TestParseCRDRejects(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{"not-a-crd.yaml", `kind is "ConfigMap", want CustomResourceDefinition`},
		{"cluster-scoped.yaml", `scope is "Cluster"; only Namespaced is served`},
		{"no-storage-version.yaml", "no version has storage: true"},
		{"no-plural.yaml", "spec.names.plural is empty"},
		{"not-yaml.yaml", "parse CRD"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata/badcrds", tt.file))
			require.NoError(t, err)
			_, err = ParseCRD(data)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestLoadCRDsNamesTheBadFile(t *testing.T) {
	_, err := LoadCRDs("testdata/badcrds")
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join("testdata/badcrds", "cluster-scoped.yaml"))

	_, err = LoadCRDs(t.TempDir())
	require.ErrorContains(t, err, "no *.yaml file")
}
