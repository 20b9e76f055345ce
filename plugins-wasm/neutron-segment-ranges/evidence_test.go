package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// The range the CR's status.id names, as the group's list read it, is the memo's evidence: a
// change to any field of the answers the reconcile read is a miss, or does not change the verdict
// (docs/operating.md, "The memo's window"). For a range created by the plugin and for one adopted
// from the testdata.
func TestTheMemosEvidenceIsComplete(t *testing.T) {
	for name, spec := range map[string]map[string]any{
		"created": {"name": "edge", "network_type": "vxlan", "minimum": 4000, "maximum": 4099},
		"vlan":    {"name": "tenants", "network_type": "vlan", "physical_network": "physnet1", "minimum": 100, "maximum": 199},
	} {
		t.Run(name, func(t *testing.T) {
			f := loadFake(t)
			cr := pdktest.CR{Object: pdk.Object{Kind: obj.Kind, Namespace: obj.Namespace, Name: spec["name"].(string),
				UID: "uid-" + spec["name"].(string)}, Spec: spec}
			_, err := cr.Reconcile(pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.handle}))
			require.NoError(t, err)
			require.NotEmpty(t, cr.Status["id"], "the range is recorded")
			pdktest.RequireCompleteEvidence(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.handle}, cr)
		})
	}
}
