package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
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
