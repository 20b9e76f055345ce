package pluginpass

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

func rangesEnv(t *testing.T, b backend, prune bool) *env {
	return newEnv(t, b, setup{plugin: "neutron-segment-ranges", crd: "neutron.openstack-sync.io/v1alpha1",
		kind: "NeutronSegmentRange", prefix: "NEUTRON_SEGMENT_RANGE", prune: prune})
}

type segmentRange struct {
	ID              string `json:"id"`
	Name            string `json:"name"`
	NetworkType     string `json:"network_type"`
	PhysicalNetwork string `json:"physical_network"`
	Minimum         int    `json:"minimum"`
	Maximum         int    `json:"maximum"`
}

// rangeNamed reads the segment ranges with a name back from Neutron; n is how many there are.
func (e *env) rangeNamed(name string) (r segmentRange, n int) {
	var body struct {
		Ranges []segmentRange `json:"network_segment_ranges"`
	}
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/network_segment_ranges",
		Query: url.Values{"name": {name}}}, &body)
	if len(body.Ranges) == 0 {
		return segmentRange{}, 0
	}
	return body.Ranges[0], len(body.Ranges)
}

// rangeBase picks segment ids of the env's own: Neutron refuses ranges that overlap, and a range a
// crashed run left on the shared cloud must not fail the next.
func rangeBase() int { return rand.IntN(80) }

func segmentRangeLifecycle(t *testing.T, b backend) {
	e := rangesEnv(t, b, true)
	k := rangeBase()
	vlanLo, vxlanLo := 300+40*k, 100000+1000*k
	tenant, overlay := e.name("tenant-vlans"), e.name("overlay")
	e.apply("tenant", fmt.Sprintf("name: %s\nnetwork_type: vlan\nphysical_network: physnet1\nminimum: %d\nmaximum: %d\n", tenant, vlanLo, vlanLo+19))
	e.apply("overlay", fmt.Sprintf("name: %s\nnetwork_type: vxlan\nminimum: %d\nmaximum: %d\n", overlay, vxlanLo, vxlanLo+99))

	// Create.
	require.Equal(t, 0, e.synchronize())
	r, n := e.rangeNamed(tenant)
	require.Equal(t, 1, n)
	assert.Equal(t, "physnet1", r.PhysicalNetwork)
	assert.Equal(t, vlanLo, r.Minimum)
	st := e.status("tenant")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Equal(t, "Successfully reconciled segment range", st["message"])
	assert.Equal(t, r.ID, st["id"], "status.id records the created range")
	assert.Equal(t, "True", condOf(st, "Available")["status"])
	assert.Equal(t, "Success", condOf(st, "Progressing")["reason"])
	assert.Empty(t, e.finalizers("tenant"), "segment ranges never hold a finalizer, even with PRUNE=true")

	require.NotEmpty(t, e.kubeWrites(), "the first run patched the statuses")

	// Converged: no writes, and one range list for the whole group.
	e.rec.reset()
	kubeBefore := len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a converged run patches no status")
	assert.Empty(t, e.writes())
	assert.Equal(t, []string{"GET /v2.0/network_segment_ranges", "GET /v2.0/network_segment_ranges"}, e.requests("network"),
		"readiness plus one list serve both CRs")

	// Drift on a mutable field is corrected; drift on an immutable one fails naming it.
	e.rec.reset()
	obj := e.get("tenant")
	obj["spec"].(map[string]any)["maximum"] = vlanLo + 29
	_, err := e.kube.Update(e.res, namespace, "tenant", "", obj)
	require.NoError(t, err)
	require.Equal(t, 0, e.synchronize())
	r, _ = e.rangeNamed(tenant)
	assert.Equal(t, vlanLo+29, r.Maximum)
	assert.Len(t, e.writes(), 1)

	obj = e.get("overlay")
	obj["spec"].(map[string]any)["network_type"] = "geneve"
	obj["spec"].(map[string]any)["minimum"] = 5000
	obj["spec"].(map[string]any)["maximum"] = 5099
	_, err = e.kube.Update(e.res, namespace, "overlay", "", obj)
	require.NoError(t, err)
	// A field Neutron cannot change is terminal (the lifecycle's InvalidConfiguration): recorded,
	// not retried until the spec changes, and so no failing exit that would only repeat it.
	assert.Equal(t, 0, e.synchronize())
	st = e.status("overlay")
	assert.Equal(t, "Failed", st["syncStatus"])
	assert.Contains(t, st["message"], "network_type: have='vxlan' want='geneve'")
	cond := st["conditions"].([]any)[0].(map[string]any)
	assert.Equal(t, "ImmutableFieldChanged", cond["reason"])
	assert.Equal(t, "InvalidConfiguration", condOf(st, "Progressing")["reason"])
	assert.NotEmpty(t, st["id"], "the bound range stays recorded")

	// The next run does not retry it: no OpenStack request for the CR, no status write.
	e.rec.reset()
	kubeBefore = len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Empty(t, e.writes())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a terminal failure of this generation is not run again")

	// A spec change (a new generation) is run again at once.
	obj = e.get("overlay")
	obj["spec"].(map[string]any)["network_type"] = "vxlan"
	obj["spec"].(map[string]any)["minimum"] = vxlanLo
	obj["spec"].(map[string]any)["maximum"] = vxlanLo + 99
	_, err = e.kube.Update(e.res, namespace, "overlay", "", obj)
	require.NoError(t, err)
	require.Equal(t, 0, e.synchronize())
	st = e.status("overlay")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Equal(t, "Success", condOf(st, "Progressing")["reason"])
}

// condOf returns the condition of type typ in a status.
func condOf(st map[string]any, typ string) map[string]any {
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == typ {
			return m
		}
	}
	return nil
}

// addSegmentRange seeds an unowned shared range, made by hand as an operator would.
func (e *env) addSegmentRange(name, networkType string, lo, hi int) segmentRange {
	var body struct {
		Range segmentRange `json:"network_segment_range"`
	}
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "POST", Path: "v2.0/network_segment_ranges",
		Body: jsonBody(map[string]any{"network_segment_range": map[string]any{"name": name, "network_type": networkType,
			"minimum": lo, "maximum": hi, "shared": true}})}, &body)
	return body.Range
}

func segmentRangeAdoptsByName(t *testing.T, b backend) {
	e := rangesEnv(t, b, false)
	lo, legacy := 300000+1000*rangeBase(), e.name("legacy")
	seeded := e.addSegmentRange(legacy, "vxlan", lo, lo+50)
	e.apply("legacy", fmt.Sprintf("name: %s\nnetwork_type: vxlan\nminimum: %d\nmaximum: %d\n", legacy, lo, lo+99))
	require.Equal(t, 0, e.synchronize())
	r, n := e.rangeNamed(legacy)
	require.Equal(t, 1, n, "the existing range is adopted, not duplicated")
	assert.Equal(t, seeded.ID, r.ID)
	assert.Equal(t, lo+99, r.Maximum)
}

// progress runs the hook as the progress schedule does: a Schedule context of the progress binding.
func (e *env) progress() int {
	e.t.Helper()
	objs, err := e.kube.List(e.res, namespace, "")
	require.NoError(e.t, err)
	items := []any{}
	for _, o := range objs {
		items = append(items, map[string]any{"object": o})
	}
	return e.run([]any{map[string]any{"binding": "progress sync", "type": "Schedule", "snapshots": map[string]any{e.plugin: items}}})
}

// deleteRange deletes a segment range by id behind the plugin's back, as an operator would.
func (e *env) deleteRange(id string) {
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/network_segment_ranges/" + id}, nil)
}

// segmentRangeImport: an unmanaged CR imports by filter (waiting while nothing matches), observes
// the range, never writes to Neutron, and reports (never recreates) a range deleted outside.
func segmentRangeImport(t *testing.T, b backend) {
	e := rangesEnv(t, b, true)
	lo, name := 400000+1000*rangeBase(), e.name("observed")
	e.apply("observed", fmt.Sprintf("managementPolicy: unmanaged\nimport:\n  filter:\n    name: %s\n    network_type: vxlan\n", name))

	require.Equal(t, 0, e.synchronize(), "nothing to import yet is not a failure")
	st := e.status("observed")
	assert.Equal(t, "Progressing", st["syncStatus"])
	assert.Equal(t, "Progressing", condOf(st, "Progressing")["reason"])
	assert.Empty(t, e.writes(), "an unmanaged CR never writes to Neutron")

	seeded := e.addSegmentRange(name, "vxlan", lo, lo+9)
	e.rec.reset()
	require.Equal(t, 0, e.progress(), "the progress run picks the Progressing CR up")
	st = e.status("observed")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Equal(t, seeded.ID, st["id"])
	assert.Equal(t, fmt.Sprint(lo+9), fmt.Sprint(st["resource"].(map[string]any)["maximum"]))
	assert.Empty(t, e.writes(), "an unmanaged CR never writes to Neutron")

	e.deleteRange(seeded.ID)
	e.rec.reset()
	require.Equal(t, 0, e.synchronize())
	st = e.status("observed")
	assert.Equal(t, "UnrecoverableError", condOf(st, "Progressing")["reason"])
	assert.Contains(t, st["message"], "no longer exists")
	assert.Empty(t, e.writes(), "an unmanaged range deleted outside is reported, never recreated")
	_, n := e.rangeNamed(name)
	assert.Equal(t, 0, n)
}

// segmentRangeLostStatusAndRecreate: a status write that failed leaves no status.id; the next run
// adopts the range it created instead of creating a second one. A managed range deleted outside
// is created again.
func segmentRangeLostStatusAndRecreate(t *testing.T, b backend) {
	e := rangesEnv(t, b, false)
	lo, name := 500000+1000*rangeBase(), e.name("managed")
	e.apply("managed", fmt.Sprintf("name: %s\nnetwork_type: vxlan\nminimum: %d\nmaximum: %d\n", name, lo, lo+9))

	e.failStatus = true
	e.synchronize()
	assert.Nil(t, e.status("managed"), "the injected failure kept every status write out")
	first, n := e.rangeNamed(name)
	require.Equal(t, 1, n)

	e.failStatus = false
	require.Equal(t, 0, e.synchronize())
	_, n = e.rangeNamed(name)
	assert.Equal(t, 1, n, "no duplicate after a lost status write")
	assert.Equal(t, first.ID, e.status("managed")["id"], "the range is adopted")

	e.deleteRange(first.ID)
	e.rec.reset()
	require.Equal(t, 0, e.synchronize())
	again, n := e.rangeNamed(name)
	require.Equal(t, 1, n, "a managed range deleted outside is created again")
	assert.NotEqual(t, first.ID, again.ID)
	assert.Equal(t, again.ID, e.status("managed")["id"])
}
