package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
)

func (w *world) remark(spec map[string]any, dry bool) (*pdk.RemarkResult, error) {
	w.t.Helper()
	raw, err := json.Marshal(spec)
	require.NoError(w.t, err)
	return pdk.Registered().Remark(w.context(), &pdk.RemarkRequest{Object: pdk.Object{Kind: "NeutronSubnetPool", Namespace: "openstack", Name: "cr"},
		Spec: raw, From: "understack", To: "openstack-sync", DryRun: dry})
}

// TestRemarkMovesTheTagInOneWrite: openstack-sync migrate re-tags the pool a CR names from the
// original's ownership tag to this project's, keeping every other tag, in one PUT; a second run
// writes nothing, and the pool is then converged under this project's profile once its CR has
// tagged it with its credential group.
func TestRemarkMovesTheTagInOneWrite(t *testing.T) {
	w := reconcileWorld(t, "10.0.0.0/8")
	w.neutron.addPool(map[string]any{"id": "p1", "name": "pool-a", "prefixes": []string{"10.0.0.0/8"}, "description": "pool desc",
		"tags": []string{"tenant", theirTag}})
	spec := originalSpec(map[string]any{"address_scope": nil})

	res, err := w.remark(spec, true)
	require.NoError(t, err)
	assert.Equal(t, []string{"subnet pool pool-a (p1): tag " + theirTag + " -> " + ownTag}, res.Changes)
	assert.Empty(t, writes(w), "a dry run writes nothing")

	_, err = w.remark(spec, false)
	require.NoError(t, err)
	assert.Equal(t, []string{"PUT v2.0/subnetpools/p1/tags"}, writes(w))
	assert.Equal(t, []any{ownTag, "tenant"}, bodyOf(t, w, "PUT v2.0/subnetpools/p1/tags")["tags"])

	res, err = w.remark(spec, false)
	require.NoError(t, err)
	assert.Empty(t, res.Changes)
	assert.Empty(t, writes(w), "idempotent")

	// The remark names no credential group: the CR's first reconcile under this project's
	// profile tags the pool with its group's, then it is converged.
	_, err = w.reconcile(spec)
	require.NoError(t, err)
	assert.Equal(t, []string{"PUT v2.0/subnetpools/p1/tags"}, writes(w))
	assert.Equal(t, []any{groupTag, ownTag, "tenant"}, bodyOf(t, w, "PUT v2.0/subnetpools/p1/tags")["tags"])
	_, err = w.reconcile(spec)
	require.NoError(t, err)
	assert.Empty(t, writes(w), "converged under this project's profile")
}
