package main

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// getByID answers GET rangesPath/<id> from the fake, as Neutron does.
func (f *fakeNeutron) withGet(r pdktest.Call) (int, any) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.Path, rangesPath+"/") {
		id := strings.TrimPrefix(r.Path, rangesPath+"/")
		for _, cur := range f.ranges {
			if cur["id"] == id {
				return http.StatusOK, map[string]any{"network_segment_range": cur}
			}
		}
		return http.StatusNotFound, pdktest.NeutronFault("Network Segment Range " + id + " could not be found.")
	}
	return f.handle(r)
}

const tenantID = "0b7c3f0e-0000-4000-8000-000000000003"

func TestLifecycleFlows(t *testing.T) {
	vxlan := map[string]any{"name": "edge", "network_type": "vxlan", "minimum": 4000, "maximum": 4099}
	unmanaged := func(imp map[string]any) map[string]any {
		return map[string]any{"managementPolicy": "unmanaged", "import": imp}
	}
	for _, tc := range []struct {
		name        string
		status      map[string]any
		spec        map[string]any
		reason      string
		readyReason string
		id          string
		message     string
		writes      []string
	}{
		{name: "import by id binds the range and never writes", spec: unmanaged(map[string]any{"id": tenantID}),
			reason: "Success", id: tenantID},
		{name: "import by a missing id is terminal", spec: unmanaged(map[string]any{"id": "nope"}),
			reason: "UnrecoverableError", message: "spec.import.id: segment range nope does not exist"},
		{name: "import by filter binds the one match", spec: unmanaged(map[string]any{"filter": map[string]any{"name": "tenant-vlans"}}),
			reason: "Success", id: tenantID},
		{name: "import by a filter matching nothing waits", spec: unmanaged(map[string]any{"filter": map[string]any{"name": "later"}}),
			reason: "Progressing", message: "waiting for a segment range matching spec.import.filter"},
		{name: "import by a filter matching several is terminal", spec: unmanaged(map[string]any{"filter": map[string]any{"name": "twice"}}),
			reason: "InvalidConfiguration", message: "spec.import.filter matches 2 segment ranges"},
		{name: "an unmanaged range deleted in Neutron is reported, not recreated", status: map[string]any{"id": "gone"},
			spec: unmanaged(map[string]any{"id": "gone"}), reason: "UnrecoverableError", id: "gone",
			message: "segment range gone (status.id) no longer exists in OpenStack"},
		{name: "a managed range deleted in Neutron is created again", status: map[string]any{"id": "gone"}, spec: vxlan,
			reason: "Success", id: "new-1", writes: []string{"POST " + rangesPath}},
		{name: "status.id wins over the name", status: map[string]any{"id": tenantID},
			spec:   map[string]any{"name": "renamed-in-k8s", "network_type": "vlan", "physical_network": "physnet1", "minimum": 200, "maximum": 299},
			reason: "Success", id: tenantID},
		{name: "unmanaged without an import is refused", spec: map[string]any{"managementPolicy": "unmanaged"},
			reason: "InvalidConfiguration", message: "unmanaged needs spec.import"},
		{name: "an import beside the range's fields is refused", spec: map[string]any{"managementPolicy": "unmanaged",
			"name": "x", "import": map[string]any{"id": tenantID}},
			reason: "InvalidConfiguration", readyReason: "InvalidSpec", message: "are exclusive"},
		{name: "a managed import is refused", spec: map[string]any{"import": map[string]any{"id": tenantID}},
			reason: "InvalidConfiguration", readyReason: "InvalidSpec", message: "needs spec.managementPolicy unmanaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := loadFake(t)
			ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.withGet})
			res, err := reconcileWith(t, ctx, tc.status, tc.spec)
			require.NoError(t, err, "a lifecycle plugin reports failures in its result")
			lc := res.Lifecycle
			require.NotNil(t, lc)
			assert.Equal(t, tc.reason, lc.Reason, lc.Message)
			assert.Equal(t, tc.id, lc.ID)
			assert.Contains(t, lc.Message, tc.message)
			assert.Equal(t, tc.readyReason, lc.ReadyReason)
			writes, _ := pdktest.Of(t, ctx).WriteLines()
			assert.Equal(t, tc.writes, writes)
		})
	}
}

// A status write that failed leaves the CR without status.id; the next run adopts the range it
// created instead of creating a second one.
func TestLostStatusWriteAdopts(t *testing.T) {
	f := loadFake(t)
	spec := map[string]any{"name": "edge", "network_type": "vxlan", "minimum": 4000, "maximum": 4099}
	var ids []string
	for range 3 {
		ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.withGet})
		res, err := reconcileWith(t, ctx, nil, spec)
		require.NoError(t, err)
		ids = append(ids, res.Lifecycle.ID)
	}
	assert.Equal(t, []string{"new-1", "new-1", "new-1"}, ids)
	assert.Len(t, f.byName("edge"), 1, "one range however often the status write is lost")
}

func TestLifecycleMetadata(t *testing.T) {
	p := pdk.Registered()
	assert.True(t, p.Metadata.Lifecycle)
	assert.Nil(t, p.Delete, "segment ranges are never deleted: deleting a CR always detaches")
}

// A CR bound to a range (status.id) is verified once, then answered from the host's convergence
// memo while its input and that range stay the same; a change to one range reconciles only its CR.
func TestBoundRangesUseTheMemo(t *testing.T) {
	var items []string
	var inputs [][]byte
	for i := range 30 {
		items = append(items, fmt.Sprintf(`{"id":"r%d","name":"range-%d","network_type":"vxlan","physical_network":null,"minimum":%d,"maximum":%d,"shared":true,"project_id":"","revision_number":1}`,
			i, i, 2000+10*i, 2009+10*i))
		inputs = append(inputs, fmt.Appendf(nil, `{"abi_version":1,"object":{"kind":"NeutronSegmentRange","namespace":"net","name":"range-%d","uid":"u%d","generation":1},`+
			`"spec":{"name":"range-%d","network_type":"vxlan","minimum":%d,"maximum":%d,"shared":true},"status":{"id":"r%d","syncStatus":"Synced"}}`,
			i, i, i, 2000+10*i, 2009+10*i, i))
	}
	h := &bench.Replay{Memo: true, Bodies: map[string][]byte{}}
	setList := func() {
		h.Bodies["GET "+rangesPath+"?limit=100"] = []byte(`{"network_segment_ranges":[` + strings.Join(items, ",") + `]}`)
	}
	setList()
	pass := func() int {
		h.Hits = 0
		cache := map[string]any{}
		for i, in := range inputs {
			_, err := bench.ReconcileInput(h, cache, in)
			require.NoError(t, err, "CR %d", i)
		}
		return h.Hits
	}
	assert.Zero(t, pass())
	assert.Equal(t, len(inputs), pass(), "every bound, unchanged CR is answered from the memo")
	items[4] = strings.Replace(items[4], `"name":"range-4"`, `"name":"renamed-by-hand"`, 1)
	setList()
	assert.Equal(t, len(inputs)-1, pass(), "only the CR whose range changed is reconciled in full")
	items[9] = strings.Replace(items[9], `"revision_number":1`, `"revision_number":2`, 1)
	setList()
	assert.Equal(t, len(inputs), pass(), "a field the plugin does not read is no change")
}

// The evidence covers every field the plugin reads of a range.
func TestRangeEvidenceCoversEveryField(t *testing.T) {
	physnet, empty := "physnet1", ""
	base := segmentRange{ID: "r", Name: "n", NetworkType: "vlan", PhysicalNetwork: &physnet, Minimum: 1, Maximum: 2, Shared: true, ProjectID: "p"}
	ref := base.evidence()
	for name, mutate := range map[string]func(r *segmentRange){
		"id": func(r *segmentRange) { r.ID = "s" }, "name": func(r *segmentRange) { r.Name = "m" },
		"type": func(r *segmentRange) { r.NetworkType = "vxlan" }, "physnet": func(r *segmentRange) { r.PhysicalNetwork = nil },
		"empty physnet": func(r *segmentRange) { r.PhysicalNetwork = &empty }, "minimum": func(r *segmentRange) { r.Minimum = 3 },
		"maximum": func(r *segmentRange) { r.Maximum = 3 }, "shared": func(r *segmentRange) { r.Shared = false },
		"project":  func(r *segmentRange) { r.ProjectID = "q" },
		"boundary": func(r *segmentRange) { r.ID, r.Name = "rn", "" },
	} {
		r := base
		mutate(&r)
		assert.NotEqual(t, string(ref), string(r.evidence()), name)
	}
	assert.Equal(t, 8, reflect.TypeFor[segmentRange]().NumField(), "a new field must join the evidence")
}
