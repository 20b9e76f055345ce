package main

import (
	"fmt"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// BenchmarkConvergedGroup reconciles a converged credential group of n router flavors and reports
// the OpenStack requests it cost: two lists per group, none per CR (the original: about 3 per CR).
func BenchmarkConvergedGroup(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("crs=%d", n), func(b *testing.B) {
			f := &fakeNeutron{}
			var specs []Spec
			for i := range n {
				name := fmt.Sprintf("f%d", i)
				meta := fmt.Sprintf(`{"openstack-sync.io/managed-by":"neutron-router-flavors","resource_class":"%s"}`, name)
				f.Profiles = append(f.Profiles, map[string]any{"id": "p" + name, "driver": singleNode, "enabled": true, "description": "", "metainfo": meta})
				f.Flavors = append(f.Flavors, map[string]any{"id": name, "name": name, "service_type": l3Service, "enabled": true,
					"description": ours.flavorMarker(), "service_profiles": []any{"p" + name}})
				specs = append(specs, Spec{Name: name, ServiceProfiles: []ProfileSpec{{Driver: singleNode, MetaInfo: map[string]any{"resource_class": name}}}})
			}
			svc, h := f.service(b)
			rec := &recorder{}
			bench.ReportConvergedRequests(b, h, func() error {
				st := newState(svc, defaultOwnership())
				for _, s := range specs {
					if _, err := reconcile(st, s, rec.log); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
