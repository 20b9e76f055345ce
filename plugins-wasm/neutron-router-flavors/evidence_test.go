package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// The group's view of the flavors and service profiles the reconcile read (its digest) is the
// memo's evidence: a change to any field of either listing is a miss, or does not change the
// verdict (docs/operating.md, "The memo's window"). For a flavor adopted as it is in the testdata
// and for one this plugin created.
func TestTheMemosEvidenceIsComplete(t *testing.T) {
	created := Spec{Name: "edge", Description: "edge routers",
		ServiceProfiles: []ProfileSpec{{Driver: dvr, MetaInfo: map[string]any{"vni_alloc": "auto"}}}}
	for name, spec := range map[string]Spec{"adopted": asa(), "created": created} {
		t.Run(name, func(t *testing.T) {
			f := loadFake(t)
			cr := pdktest.CR{Object: pdk.Object{Kind: obj.Kind, Namespace: obj.Namespace, Name: spec.Name, UID: "uid-" + spec.Name},
				Spec: spec}
			_, err := cr.Reconcile(host(t, f, nil))
			require.NoError(t, err)
			require.NotEmpty(t, cr.Status["id"], "the flavor is recorded")
			pdktest.RequireCompleteEvidence(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.handle}, cr)
		})
	}
}
