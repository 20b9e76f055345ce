package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube/shelloperator"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// With the in-process API server the harness creates and lists the CRs without HTTP; the hook is
// handed byte for byte the binding context a list over HTTP makes of CRs created over HTTP.
func TestInProcessCRsMakeTheSameBindingContext(t *testing.T) {
	crdDir := filepath.Join("..", "..", "..", "crds")
	crds, err := fakekube.LoadCRDs(crdDir)
	require.NoError(t, err)
	cloud := fakecloud.New(fakecloud.Options{})
	defer cloud.Close()
	var res fakekube.Resource
	for _, r := range crds {
		if r.Plural == benchPlugins[0].plural() {
			res = r
		}
	}
	watch := shelloperator.KubernetesBinding{JQFilter: hookenv.ObjectFilter}
	// contexts creates site CRs in a fresh API server, in process or over HTTP, and lists them
	// both ways.
	contexts := func(inProcess bool) (listedInProcess, listedOverHTTP []byte) {
		state := t.TempDir()
		kube, err := startCluster(t.Context(), "fake", "", state, 0, crds, crdDir)
		require.NoError(t, err)
		defer kube.close()
		fake := kube.fake
		if !inProcess {
			kube.fake = nil
		}
		s := &scenario{env: &env{kube: kube, cloud: cloud, state: state, log: t.Logf}, plugin: benchPlugins[0], shape: shapeSite,
			res: res, size: 3, groups: 1, ns: "a"}
		require.NoError(t, s.createCRs(t.Context()))
		kube.fake = fake
		listedInProcess, n, err := kube.bindingContext(t.Context(), res, "a", "x", watch)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		kube.fake = nil
		listedOverHTTP, _, err = kube.bindingContext(t.Context(), res, "a", "x", watch)
		require.NoError(t, err)
		return listedInProcess, listedOverHTTP
	}
	direct, viaHTTP := contexts(true)
	assert.Equal(t, string(viaHTTP), string(direct), "listed in process or over HTTP")
	_, createdOverHTTP := contexts(false)
	assert.Equal(t, withoutIdentity(t, createdOverHTTP), withoutIdentity(t, direct), "created in process or over HTTP")
}

// withoutIdentity is a binding context without what differs between two creations of the same
// objects: their uid, time and resourceVersion.
func withoutIdentity(t *testing.T, bc []byte) []any {
	var doc []map[string]any
	require.NoError(t, json.Unmarshal(bc, &doc))
	items := doc[0]["snapshots"].(map[string]any)["x"].([]any)
	for _, it := range items {
		for _, obj := range it.(map[string]any) { // the object and its filter's result
			meta := obj.(map[string]any)["metadata"].(map[string]any)
			for _, k := range []string{"uid", "creationTimestamp", "resourceVersion"} {
				delete(meta, k)
			}
		}
	}
	require.NotEmpty(t, items)
	return items
}
