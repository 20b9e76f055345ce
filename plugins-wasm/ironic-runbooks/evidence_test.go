package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/memotest"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// The runbook's JSON as the reconcile read it, and the microversion, are the memo's evidence: a
// change to any field of any answer the reconcile reads is a miss, or does not change its verdict
// (docs/operating.md, "The memo's window"). For a runbook read by GET and, at both microversions
// of interest, for one listed with the group.
func TestTheMemosEvidenceIsComplete(t *testing.T) {
	for _, c := range []struct {
		name, max string
		config    map[string]string
	}{
		{"by GET at 1.112", "1.112", nil},
		{"by GET at 1.96, traits and description noted", "1.96", nil},
		{"listed with the group", "1.112", map[string]string{"LIST_AFTER": "0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeIronic(t, c.max)
			spec := bios()
			_, err := pdktest.Reconcile(f.context(t, nil, c.config), nil, obj, spec)
			require.NoError(t, err, "the runbook is created")
			pdktest.RequireCompleteEvidence(t, pdktest.Options{Grants: metadata.Grants, Config: c.config, Cloud: f.handle},
				pdktest.CR{Object: pdk.Object{Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name, UID: "uid-bios"}, Spec: spec})
		})
	}
}

// Once the group has listed, a CR is checked against the memo before its spec is decoded (only
// its runbook's name is read): with the evidence the full check gives, without a request, and a
// hit is trusted for the spec as well, since the host answers only for an input this module
// reconciled successfully. Before the list, and on a miss, the CR takes the full path: an invalid
// spec is refused without a request, as in the original.
func TestTheMemoIsAskedBeforeTheSpecIsDecoded(t *testing.T) {
	f := newFakeIronic(t, "1.112")
	config := map[string]string{"LIST_AFTER": "0"}
	cache := map[string]any{}
	ctx := fakeHost(t, f, cache, config)
	host := pdktest.Of(t, ctx)
	hit := false
	memotest.Answer(host, func([][]byte) bool { return hit })

	// A spec with a member the Spec does not know: refused when decoded, before any request.
	unknown := map[string]any{"runbookName": "CUSTOM_BIOS_DEFAULTS", "steps": bios().Steps, "public": true,
		"traits": []string{"CUSTOM_BIOS_DEFAULTS"}, "newField": true}
	_, err := pdktest.Reconcile(ctx, nil, obj, unknown)
	require.ErrorContains(t, err, `unknown field "newField"`)
	assert.Empty(t, host.Calls(), "the group has not listed: the spec is decoded first")

	// The first CR lists the group and asks the memo after decoding its spec (the full path).
	res, err := pdktest.Reconcile(ctx, nil, obj, bios())
	require.NoError(t, err)
	assert.Empty(t, res.Notes)
	full := host.Evidence()
	require.Len(t, full, 1)
	requests := len(host.Calls())

	// Listed now: asked before the spec, with the same evidence, without a request; a miss is
	// not asked twice.
	_, err = pdktest.Reconcile(ctx, nil, obj, bios())
	require.NoError(t, err)
	require.Len(t, host.Evidence(), 2)
	assert.Equal(t, full[0], host.Evidence()[1], "the early check's evidence is the full check's")
	assert.Len(t, host.Calls(), requests)

	hit = true
	res, err = pdktest.Reconcile(ctx, nil, obj, bios())
	require.NoError(t, err)
	assert.Equal(t, experimental.Recorded(), res)
	assert.Equal(t, full[0], host.Evidence()[2])
	res, err = pdktest.Reconcile(ctx, nil, obj, unknown)
	require.NoError(t, err, "a hit stands for the spec it recorded: it is not decoded again")
	assert.Equal(t, experimental.Recorded(), res)
	assert.Len(t, host.Calls(), requests)

	hit = false
	_, err = pdktest.Reconcile(ctx, nil, obj, unknown)
	require.ErrorContains(t, err, `unknown field "newField"`, "a miss decodes the spec")
}
