package pluginpass

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
)

func rangesEnv(t *testing.T, prune bool) *env {
	return newEnv(t, setup{plugin: "neutron-segment-ranges", crd: "neutron.openstack-sync.io/v1alpha1",
		kind: "NeutronSegmentRange", prefix: "NEUTRON_SEGMENT_RANGE", prune: prune})
}

func rangeNamed(c *fakecloud.Cloud, name string) (fakecloud.SegmentRange, int) {
	var found fakecloud.SegmentRange
	n := 0
	for _, r := range c.SegmentRanges() {
		if r.Name == name {
			found = r
			n++
		}
	}
	return found, n
}

func TestSegmentRangeLifecycle(t *testing.T) {
	e := rangesEnv(t, true)
	e.apply("tenant", "name: tenant-vlans\nnetwork_type: vlan\nphysical_network: physnet1\nminimum: 300\nmaximum: 399\n")
	e.apply("overlay", "name: overlay\nnetwork_type: vxlan\nminimum: 2000\nmaximum: 2099\n")

	// Create.
	require.Equal(t, 0, e.synchronize())
	r, n := rangeNamed(e.cloud, "tenant-vlans")
	require.Equal(t, 1, n)
	assert.Equal(t, "physnet1", r.PhysicalNetwork)
	assert.Equal(t, 300, r.Minimum)
	st := e.status("tenant")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Equal(t, "Successfully reconciled segment range", st["message"])
	assert.Empty(t, e.finalizers("tenant"), "segment ranges never hold a finalizer, even with PRUNE=true")

	require.NotEmpty(t, e.kubeWrites(), "the first run patched the statuses")

	// Converged: no writes, and one range list for the whole group.
	e.cloud.ResetRequests()
	kubeBefore := len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a converged run patches no status and no finalizer: the status is current")
	assert.Empty(t, e.writes())
	var neutron []string
	for _, r := range e.cloud.Requests() {
		if r.Service == fakecloud.Network {
			neutron = append(neutron, r.Method+" "+r.Path)
		}
	}
	assert.Equal(t, []string{"GET /v2.0/network_segment_ranges", "GET /v2.0/network_segment_ranges"}, neutron,
		"readiness plus one list serve both CRs")

	// Drift on a mutable field is corrected; drift on an immutable one fails naming it.
	e.cloud.ResetRequests()
	obj := e.get("tenant")
	obj["spec"].(map[string]any)["maximum"] = 450
	_, err := e.kube.Update(e.res, namespace, "tenant", "", obj)
	require.NoError(t, err)
	require.Equal(t, 0, e.synchronize())
	r, _ = rangeNamed(e.cloud, "tenant-vlans")
	assert.Equal(t, 450, r.Maximum)
	assert.Len(t, e.writes(), 1)

	obj = e.get("overlay")
	obj["spec"].(map[string]any)["network_type"] = "geneve"
	obj["spec"].(map[string]any)["minimum"] = 5000
	obj["spec"].(map[string]any)["maximum"] = 5099
	_, err = e.kube.Update(e.res, namespace, "overlay", "", obj)
	require.NoError(t, err)
	assert.Equal(t, 1, e.synchronize())
	st = e.status("overlay")
	assert.Equal(t, "Failed", st["syncStatus"])
	assert.Contains(t, st["message"], "network_type: have='vxlan' want='geneve'")
	cond := st["conditions"].([]any)[0].(map[string]any)
	assert.Equal(t, "ImmutableFieldChanged", cond["reason"])
}

func TestSegmentRangeAdoptsByName(t *testing.T) {
	e := rangesEnv(t, false)
	seeded := e.cloud.AddSegmentRange(fakecloud.SegmentRange{Name: "legacy", NetworkType: "vxlan", Minimum: 3000, Maximum: 3050, Shared: true})
	e.apply("legacy", "name: legacy\nnetwork_type: vxlan\nminimum: 3000\nmaximum: 3099\n")
	require.Equal(t, 0, e.synchronize())
	r, n := rangeNamed(e.cloud, "legacy")
	require.Equal(t, 1, n, "the existing range is adopted, not duplicated")
	assert.Equal(t, seeded.ID, r.ID)
	assert.Equal(t, 3099, r.Maximum)
}
