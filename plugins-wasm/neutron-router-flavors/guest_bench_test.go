package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// convergedGroup builds n converged router flavors (one service profile each) as Neutron lists
// them, and the reconcile inputs the host sends for their CRs.
func convergedGroup(n int) (*bench.Replay, [][]byte) {
	var flavors, profiles []string
	var inputs [][]byte
	for i := range n {
		name := fmt.Sprintf("edge-%d", i)
		flavors = append(flavors, fmt.Sprintf(`{"id":"f0000000-0000-4000-8000-%012d","name":%q,"service_type":"L3_ROUTER_NAT","description":"edge routers %s","enabled":true,"service_profiles":["p0000000-0000-4000-8000-%012d"],"tenant_id":"","project_id":""}`,
			i, name, ours.flavorMarker(), i))
		profiles = append(profiles, fmt.Sprintf(`{"id":"p0000000-0000-4000-8000-%012d","description":"","driver":%q,"enabled":true,"metainfo":"{\"openstack-sync.io/managed-by\": \"neutron-router-flavors\", \"openstack-sync.io/marker-version\": \"v1\", \"openstack-sync.io/source\": \"NeutronRouterFlavor\", \"resource_class\": \"%s\", \"vni_alloc\": \"auto\"}","tenant_id":"","project_id":""}`,
			i, singleNode, name))
		inputs = append(inputs, fmt.Appendf(nil, `{"abi_version":1,"object":{"api_version":"openstack-sync.io/v1alpha1","kind":"NeutronRouterFlavor","namespace":"net","name":%q,"uid":"0a1b2c3d-0000-4000-8000-%012d","generation":2},
"credentials":{"namespace":"pdktest","secret_name":"clouds","cloud_name":"pdktest"},"spec":{"name":%q,"description":"edge routers","service_profiles":[{"driver":%q,"meta_info":{"resource_class":%q,"vni_alloc":"auto"}}]},
"status":{"syncStatus":"Synced","observedGeneration":2,"lastSyncTime":"2026-12-01T01:00:00Z","conditions":[{"type":"Ready","status":"True","reason":"Synced","message":"Successfully reconciled router flavor","observedGeneration":2,"lastTransitionTime":"2026-11-30T10:00:00Z"}]}}`,
			name, i, name, singleNode, name))
	}
	return &bench.Replay{Bodies: map[string][]byte{
		"GET " + flavorsPath:  []byte(`{"flavors":[` + strings.Join(flavors, ",") + `]}`),
		"GET " + profilesPath: []byte(`{"service_profiles":[` + strings.Join(profiles, ",") + `]}`),
	}}, inputs
}

// BenchmarkGuestReconcileConverged runs what the guest does for each converged CR of a group as
// the wasm entry point does (decode the input, Reconcile, encode the result); cpu-µs/CR is the
// marginal cost per CR natively (docs/benchmarks.md).
func BenchmarkGuestReconcileConverged(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("crs=%d", n), func(b *testing.B) {
			h, inputs := convergedGroup(n)
			bench.BenchmarkGroup(b, h, inputs, nil)
		})
	}
}

// A converged group's guest path (input, spec, lists, each profile's metainfo) stays on the PDK's
// decoders.
func TestConvergedGroupNeverDecodesWithEncodingJSON(t *testing.T) {
	h, inputs := convergedGroup(20)
	bench.RequireNoSlowDecodes(t, h, inputs)
}
