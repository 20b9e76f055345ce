package main

import (
	"fmt"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// BenchmarkConvergedGroup reconciles a converged credential group of n CRs and reports the
// OpenStack requests it cost: one list per group, none per CR.
func BenchmarkConvergedGroup(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("crs=%d", n), func(b *testing.B) {
			f := &fakeNeutron{}
			var specs []Spec
			for i := range n {
				lo, hi := int64(2000+10*i), int64(2009+10*i)
				f.ranges = append(f.ranges, map[string]any{"id": fmt.Sprintf("r%d", i), "name": fmt.Sprintf("r%d", i),
					"network_type": "vxlan", "physical_network": nil, "minimum": lo, "maximum": hi, "shared": true})
				specs = append(specs, Spec{Name: fmt.Sprintf("r%d", i), NetworkType: "vxlan", Minimum: &lo, Maximum: &hi})
			}
			svc, h := f.service(b)
			bench.ReportConvergedRequests(b, h, func() error {
				idx, err := loadIndex(svc)
				if err != nil {
					return err
				}
				for _, s := range specs {
					if err := reconcile(svc, idx, s); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
