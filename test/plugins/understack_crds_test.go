package plugins

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The original operator's CRDs (crds/understack/, docs/migrating.md) must be the API its users
// already have: these are the facts of rackerlabs/understack's components/openstack-sync-operator/crds,
// which a cluster holding its CRs must keep serving unchanged under the understack profile.
var understackCRDs = []struct {
	file, group, kind, plural, short string
	columns                          [][2]string // name, jsonPath
	required                         []any
	// conditionsMap: the newer CRDs declare conditions as a map list keyed by type, with each
	// condition's observedGeneration; the segment ranges CRD does not (the status writer's
	// concern, docs/contract.md §11).
	conditionsMap bool
}{
	{file: "ironic.understack.rackspace.net_ironicrunbooks.yaml", group: "ironic.understack.rackspace.net", kind: "IronicRunbook",
		plural: "ironicrunbooks", short: "irb", conditionsMap: true,
		columns: [][2]string{{"Runbook", ".spec.runbookName"}, {"Description", ".spec.description"}, {"Public", ".spec.public"},
			{"SyncStatus", ".status.syncStatus"}, {"Age", ".metadata.creationTimestamp"}},
		required: []any{"cloudCredentialsRef", "runbookName", "steps", "traits"}},
	{file: "neutron.understack.rackspace.net_neutronrouterflavors.yaml", group: "neutron.understack.rackspace.net", kind: "NeutronRouterFlavor",
		plural: "neutronrouterflavors", short: "nrf", conditionsMap: true,
		columns: [][2]string{{"Flavor", ".spec.name"}, {"ServiceType", ".spec.service_type"}, {"Enabled", ".spec.is_enabled"},
			{"SyncStatus", ".status.syncStatus"}, {"Age", ".metadata.creationTimestamp"}},
		required: []any{"name", "service_profiles", "cloudCredentialsRef"}},
	{file: "neutron.understack.rackspace.net_neutronsegmentranges.yaml", group: "neutron.understack.rackspace.net", kind: "NeutronSegmentRange",
		plural: "neutronsegmentranges", short: "nsr",
		columns: [][2]string{{"Name", ".spec.name"}, {"Type", ".spec.network_type"}, {"Physical", ".spec.physical_network"},
			{"Min", ".spec.minimum"}, {"Max", ".spec.maximum"}, {"Shared", ".spec.shared"}, {"SyncStatus", ".status.syncStatus"},
			{"Age", ".metadata.creationTimestamp"}},
		required: []any{"name", "network_type", "minimum", "maximum", "cloudCredentialsRef"}},
	{file: "openstack.understack.rackspace.net_openstackplaceholders.yaml", group: "openstack.understack.rackspace.net", kind: "OpenstackPlaceholder",
		plural: "openstackplaceholders", short: "osph", conditionsMap: true,
		columns: [][2]string{{"Secret", ".spec.cloudCredentialsRef.secretName"}, {"Cloud", ".spec.cloudCredentialsRef.cloudName"},
			{"SyncStatus", ".status.syncStatus"}, {"Age", ".metadata.creationTimestamp"}},
		required: []any{"cloudCredentialsRef"}},
	{file: "neutron.understack.rackspace.net_neutronsubnetpools.yaml", group: "neutron.understack.rackspace.net", kind: "NeutronSubnetPool",
		plural: "neutronsubnetpools", short: "nsp", conditionsMap: true,
		columns: [][2]string{{"Pool", ".spec.name"}, {"AddressScope", ".spec.address_scope.name"}, {"Shared", ".spec.shared"},
			{"SyncStatus", ".status.syncStatus"}, {"Message", ".status.message"}, {"Age", ".metadata.creationTimestamp"}},
		required: []any{"cloudCredentialsRef", "name", "address_scope", "minimum_prefix_length", "default_prefix_length",
			"maximum_prefix_length", "nautobot"}},
}

func TestUnderstackCRDs(t *testing.T) {
	files, err := filepath.Glob(repoPath("crds", "understack", "*.yaml"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	var want []string
	for _, c := range understackCRDs {
		want = append(want, c.file)
	}
	assert.ElementsMatch(t, want, names)
	for _, c := range understackCRDs {
		t.Run(c.kind, func(t *testing.T) {
			doc := readYAML(t, repoPath("crds", "understack", c.file))
			assert.Equal(t, c.plural+"."+c.group, dig(t, doc, "metadata", "name"))
			spec := dig(t, doc, "spec")
			assert.Equal(t, c.group, dig(t, spec, "group"))
			assert.Equal(t, "Namespaced", dig(t, spec, "scope"))
			assert.Equal(t, c.kind, dig(t, spec, "names", "kind"))
			assert.Equal(t, c.kind+"List", dig(t, spec, "names", "listKind"))
			assert.Equal(t, c.plural, dig(t, spec, "names", "plural"))
			assert.Equal(t, []any{c.short}, dig(t, spec, "names", "shortNames"))
			versions := dig(t, spec, "versions").([]any)
			require.Len(t, versions, 1)
			v := versions[0]
			assert.Equal(t, "v1alpha1", dig(t, v, "name"))
			assert.Equal(t, true, dig(t, v, "served"))
			assert.Equal(t, true, dig(t, v, "storage"))
			assert.Equal(t, map[string]any{}, dig(t, v, "subresources", "status"))
			var columns [][2]string
			for _, col := range dig(t, v, "additionalPrinterColumns").([]any) {
				columns = append(columns, [2]string{dig(t, col, "name").(string), dig(t, col, "jsonPath").(string)})
			}
			assert.Equal(t, c.columns, columns)
			schema := dig(t, v, "schema", "openAPIV3Schema")
			assert.ElementsMatch(t, c.required, dig(t, schema, "properties", "spec", "required"))
			status := dig(t, schema, "properties", "status", "properties")
			assert.Equal(t, []string{"conditions", "lastSyncTime", "message", "observedGeneration", "syncStatus"}, keys(status))
			assert.Equal(t, []any{"Synced", "Failed", "Unknown"}, dig(t, status, "syncStatus", "enum"))
			conds := dig(t, status, "conditions").(map[string]any)
			item := keys(dig(t, conds, "items", "properties"))
			if c.conditionsMap {
				assert.Equal(t, "map", conds["x-kubernetes-list-type"])
				assert.Equal(t, []string{"lastTransitionTime", "message", "observedGeneration", "reason", "status", "type"}, item)
			} else {
				assert.NotContains(t, conds, "x-kubernetes-list-type")
				assert.Equal(t, []string{"lastTransitionTime", "message", "reason", "status", "type"}, item)
			}
		})
	}
}
