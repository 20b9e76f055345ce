package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

var obj = pdk.Object{Kind: "IronicRunbook", Namespace: "openstack", Name: "bios"}

func TestMetadata(t *testing.T) {
	p := pdk.Registered()
	require.NotNil(t, p)
	assert.Equal(t, "IRONIC_RUNBOOK", p.Metadata.EnvPrefix)
	assert.Equal(t, "ironic-runbooks", p.Metadata.BindingName)
	assert.Equal(t, pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune, WhenNoPrune: pdk.CleanupNone}, p.Metadata.Cleanup)
	assert.True(t, p.Metadata.HasPrune)
}

// fakeHost wires the fake Ironic to a pdktest host that enforces the plugin's grants; the fake
// sees the microversion each request carries.
func fakeHost(t *testing.T, f *fakeIronic, cache map[string]any, config map[string]string) *pdk.Context {
	return f.context(t, cache, config)
}

func TestReconcileThroughThePDKUsesTheDiscoveredMicroversion(t *testing.T) {
	for _, tc := range []struct{ max, want string }{{"1.96", "1.96"}, {"1.112", "1.112"}, {"1.200", "1.112"}} {
		t.Run(tc.max, func(t *testing.T) {
			f := newFakeIronic(t, tc.max)
			cache := map[string]any{}
			ctx := fakeHost(t, f, cache, nil)
			spec := bios()
			spec.RunbookName = "CUSTOM_FRESH"
			_, err := pdktest.Reconcile(ctx, nil, obj, spec)
			require.NoError(t, err)
			reqs := pdktest.Of(t, ctx).Requests()
			require.NotEmpty(t, reqs)
			assert.Equal(t, "/", reqs[0].Path)
			assert.Empty(t, reqs[0].Microversion, "the root document is unversioned")
			for _, r := range reqs[1:] {
				assert.Equal(t, tc.want, r.Microversion, "%s %s", r.Method, r.Path)
			}
			// A second CR of the group reuses the discovered version: one GET, nothing else.
			ctx = fakeHost(t, f, cache, nil)
			_, err = pdktest.Reconcile(ctx, nil, obj, spec)
			require.NoError(t, err)
			assert.Len(t, pdktest.Of(t, ctx).Requests(), 1)
		})
	}
}

func TestWaitForAPIRefusesAnIronicWithoutRunbooks(t *testing.T) {
	f := newFakeIronic(t, "1.82")
	err := pdk.Registered().WaitForAPI(fakeHost(t, f, nil, nil))
	require.ErrorContains(t, err, "Ironic supports API microversion 1.82 but this plugin requires 1.92")
	assert.True(t, pdk.IsPermanent(err), "an Ironic too old is not waited for")
	assert.Equal(t, "IronicTooOld", pdk.Reason(err))
}

func TestReconcileReportsInvalidSpec(t *testing.T) {
	f := newFakeIronic(t, "1.112")
	_, err := pdktest.Reconcile(fakeHost(t, f, nil, nil), nil, obj, map[string]any{"runbookName": "CUSTOM_X", "public": true, "owner": "p",
		"steps": []any{map[string]any{"interface": "bios", "step": "s", "order": 1}}})
	require.ErrorContains(t, err, "spec.public and spec.owner are both set")
	assert.Equal(t, "InvalidSpec", pdk.Reason(err))
}

func TestPruneThroughThePDK(t *testing.T) {
	f := newFakeIronic(t, "1.96")
	f.inUse["CUSTOM_ORPHAN"] = true
	ctx := fakeHost(t, f, nil, nil)
	raw, _ := json.Marshal(Spec{RunbookName: "CUSTOM_BIOS_DEFAULTS"})
	err := pdk.Registered().Prune(ctx, &pdk.PruneRequest{DesiredSpecs: []json.RawMessage{raw}})
	require.ErrorContains(t, err, "runbooks still present: CUSTOM_ORPHAN", "an incomplete delete fails the prune so the finalizer is kept")
	assert.NotNil(t, f.find("CUSTOM_ORPHAN"))
	assert.NotNil(t, f.find("CUSTOM_HANDMADE"))

	ctx = fakeHost(t, f, nil, nil)
	require.NoError(t, pdk.Registered().Prune(ctx, &pdk.PruneRequest{}))
	assert.Empty(t, pdktest.Of(t, ctx).Requests(), "an empty, non-authoritative desired set costs nothing")
}
