package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// fakeNeutron holds segment ranges and applies Neutron's update rule: only name, description,
// minimum and maximum can change ("Cannot update read-only attribute" otherwise).
type fakeNeutron struct {
	ranges []map[string]any
	nextID int
}

func loadFake(t *testing.T) *fakeNeutron {
	t.Helper()
	b, err := os.ReadFile("testdata/ranges.json")
	require.NoError(t, err)
	f := &fakeNeutron{}
	require.NoError(t, json.Unmarshal(b, &f.ranges))
	return f
}

// service returns a network client answered by f through a pdktest host that enforces the
// plugin's grants.
func (f *fakeNeutron) service(t testing.TB) (*pdk.ServiceClient, *pdktest.Host) {
	ctx := pdktest.New(t, pdktest.Options{Grants: metadata.Grants, Cloud: f.handle})
	return ctx.OpenStack("network"), pdktest.Of(t, ctx)
}

func (f *fakeNeutron) byName(name string) []map[string]any {
	var out []map[string]any
	for _, r := range f.ranges {
		if r["name"] == name {
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeNeutron) handle(r pdktest.Call) (int, any) {
	switch {
	case r.Method == http.MethodGet && r.Path == rangesPath:
		return http.StatusOK, map[string]any{"network_segment_ranges": f.ranges}
	case r.Method == http.MethodPost && r.Path == rangesPath:
		var body struct {
			Range map[string]any `json:"network_segment_range"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			return http.StatusBadRequest, pdktest.NeutronFault(err.Error())
		}
		f.nextID++
		body.Range["id"] = fmt.Sprintf("new-%d", f.nextID)
		if _, ok := body.Range["physical_network"]; !ok {
			body.Range["physical_network"] = nil
		}
		f.ranges = append(f.ranges, body.Range)
		return http.StatusCreated, map[string]any{"network_segment_range": body.Range}
	case r.Method == http.MethodPut && strings.HasPrefix(r.Path, rangesPath+"/"):
		id := strings.TrimPrefix(r.Path, rangesPath+"/")
		var body struct {
			Range map[string]any `json:"network_segment_range"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			return http.StatusBadRequest, pdktest.NeutronFault(err.Error())
		}
		for k := range body.Range {
			if k != "name" && k != "description" && k != "minimum" && k != "maximum" {
				return http.StatusBadRequest, pdktest.NeutronFault("Cannot update read-only attribute " + k)
			}
		}
		for _, cur := range f.ranges {
			if cur["id"] == id {
				for k, v := range body.Range {
					cur[k] = v
				}
				return http.StatusOK, map[string]any{"network_segment_range": cur}
			}
		}
		return http.StatusNotFound, pdktest.NeutronFault("Network Segment Range " + id + " could not be found.")
	}
	return http.StatusNotFound, pdktest.NeutronFault("no route for " + r.String())
}

func ptr[T any](v T) *T { return &v }

func TestReconcile(t *testing.T) {
	vlan := func(name string, min, max int64) Spec {
		return Spec{Name: name, NetworkType: "vlan", PhysicalNetwork: "physnet1", Minimum: &min, Maximum: &max}
	}
	cases := []struct {
		name   string
		spec   Spec
		writes []string
		bodies []string
		err    string
		check  func(t *testing.T, f *fakeNeutron)
	}{
		{
			name:   "absent range is created with shared defaulting to true",
			spec:   vlan("edge-vlans", 300, 399),
			writes: []string{"POST " + rangesPath},
			bodies: []string{`{"network_segment_range":{"maximum":399,"minimum":300,"name":"edge-vlans","network_type":"vlan","physical_network":"physnet1","shared":true}}`},
			check: func(t *testing.T, f *fakeNeutron) {
				require.Len(t, f.byName("edge-vlans"), 1)
			},
		},
		{
			name: "unshared range is created for its project",
			spec: Spec{Name: "team-b", NetworkType: "vxlan", Minimum: ptr[int64](3100), Maximum: ptr[int64](3199),
				Shared: ptr(false), ProjectID: "bbb"},
			writes: []string{"POST " + rangesPath},
			bodies: []string{`{"network_segment_range":{"maximum":3199,"minimum":3100,"name":"team-b","network_type":"vxlan","project_id":"bbb","shared":false}}`},
		},
		{
			name: "converged range writes nothing",
			spec: vlan("tenant-vlans", 200, 299),
		},
		{
			name:   "changed bounds are updated with only the changed key",
			spec:   vlan("tenant-vlans", 200, 349),
			writes: []string{"PUT " + rangesPath + "/0b7c3f0e-0000-4000-8000-000000000003"},
			bodies: []string{`{"network_segment_range":{"maximum":349}}`},
			check: func(t *testing.T, f *fakeNeutron) {
				assert.EqualValues(t, 349, f.byName("tenant-vlans")[0]["maximum"])
			},
		},
		{
			name: "a different physical network fails naming the field",
			spec: Spec{Name: "tenant-vlans", NetworkType: "vlan", PhysicalNetwork: "physnet2",
				Minimum: ptr[int64](200), Maximum: ptr[int64](299)},
			err: "physical_network: have='physnet1' want='physnet2'",
		},
		{
			name: "a different network type fails naming the field",
			spec: Spec{Name: "tenant-vlans", NetworkType: "vxlan", Minimum: ptr[int64](200), Maximum: ptr[int64](299)},
			err:  "network_type: have='vlan' want='vxlan'",
		},
		{
			name: "an unshared spec for a shared range in another project is a new range, the shared one is not touched",
			spec: Spec{Name: "team-a", NetworkType: "vxlan", Minimum: ptr[int64](3000), Maximum: ptr[int64](3099),
				Shared: ptr(false), ProjectID: "other"},
			writes: []string{"POST " + rangesPath},
			bodies: []string{`{"network_segment_range":{"maximum":3099,"minimum":3000,"name":"team-a","network_type":"vxlan","project_id":"other","shared":false}}`},
		},
		{
			name: "a shared spec for an unshared range fails naming shared",
			spec: Spec{Name: "team-a", NetworkType: "vxlan", Minimum: ptr[int64](3000), Maximum: ptr[int64](3099)},
			err:  "shared: have=false want=true",
		},
		{
			name: "two ranges with the name are ambiguous",
			spec: Spec{Name: "twice", NetworkType: "geneve", Minimum: ptr[int64](5000), Maximum: ptr[int64](5009)},
			err:  "2 segment ranges are named \"twice\"",
		},
		{
			name: "an empty range is refused before any request",
			spec: vlan("edge-vlans", 400, 399),
			err:  "the range is empty",
		},
		{
			name: "vlan needs a physical network",
			spec: Spec{Name: "x", NetworkType: "vlan", Minimum: ptr[int64](1), Maximum: ptr[int64](2)},
			err:  "spec.physical_network is required for network_type vlan",
		},
		{
			name: "vxlan must not name a physical network",
			spec: Spec{Name: "x", NetworkType: "vxlan", PhysicalNetwork: "physnet1", Minimum: ptr[int64](1), Maximum: ptr[int64](2)},
			err:  "spec.physical_network must not be set for network_type vxlan",
		},
		{
			name: "unshared needs a project",
			spec: Spec{Name: "x", NetworkType: "vxlan", Minimum: ptr[int64](1), Maximum: ptr[int64](2), Shared: ptr(false)},
			err:  "spec.project_id is required when spec.shared is false",
		},
		{
			name: "unknown network type",
			spec: Spec{Name: "x", NetworkType: "flat", Minimum: ptr[int64](1), Maximum: ptr[int64](2)},
			err:  "spec.network_type must be one of vlan, vxlan, gre, geneve; got \"flat\"",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := loadFake(t)
			svc, h := f.service(t)
			idx, err := loadIndex(svc)
			require.NoError(t, err)
			err = reconcile(svc, idx, tc.spec)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.Empty(t, h.Writes(), "a failed reconcile must not write")
				return
			}
			require.NoError(t, err)
			writes, bodies := h.WriteLines()
			assert.Equal(t, tc.writes, writes)
			assert.Equal(t, tc.bodies, bodies)
			if tc.check != nil {
				tc.check(t, f)
			}
			// A second pass over the same cloud must find nothing left to do.
			h.Reset()
			require.NoError(t, reconcile(svc, idx, tc.spec))
			assert.Empty(t, h.Calls(), "a converged range costs no request once the group's list is loaded")
		})
	}
}

func TestIndexIsOneListPerGroup(t *testing.T) {
	f := loadFake(t)
	svc, h := f.service(t)
	idx, err := loadIndex(svc)
	require.NoError(t, err)
	for _, s := range []Spec{
		{Name: "tenant-vlans", NetworkType: "vlan", PhysicalNetwork: "physnet1", Minimum: ptr[int64](200), Maximum: ptr[int64](299)},
		{Name: "team-a", NetworkType: "vxlan", Minimum: ptr[int64](3000), Maximum: ptr[int64](3099), Shared: ptr(false),
			ProjectID: "9a1f0000000000000000000000000aaa"},
	} {
		require.NoError(t, reconcile(svc, idx, s))
	}
	assert.Equal(t, []string{"GET " + rangesPath + "?limit=100"}, h.Lines())
}
