package main

import (
	"fmt"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// BenchmarkConvergedGroup reconciles a converged credential group of n runbooks and reports the
// OpenStack requests it cost: one GET per CR, as the original, for the first defaultListAfter CRs,
// then one list page per 100 runbooks for the rest of the group.
func BenchmarkConvergedGroup(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("crs=%d", n), func(b *testing.B) {
			f := &fakeIronic{max: "1.112", inUse: map[string]bool{}, pageSize: 1000}
			var specs []Spec
			for i := range n {
				name := fmt.Sprintf("CUSTOM_RB_%d", i)
				f.runbooks = append(f.runbooks, map[string]any{"uuid": fmt.Sprintf("u%d", i), "name": name, "public": true,
					"disable_ramdisk": false, "owner": nil, "description": "", "traits": []any{name},
					"extra": mine().keys(),
					"steps": []any{map[string]any{"interface": "raid", "step": "x", "order": 1, "args": map[string]any{}}}})
				specs = append(specs, Spec{RunbookName: name, Public: true, Traits: []string{name},
					Steps: []any{map[string]any{"interface": "raid", "step": "x", "order": float64(1)}}})
			}
			c, h := f.client(b, nil)
			f.asked = traitsVersion
			bench.ReportConvergedRequests(b, h, func() error {
				a := api{svc: c.Microversion(traitsVersion.String()), ver: traitsVersion, known: &catalog{listAfter: defaultListAfter, keepBytes: defaultCatalogMiB << 20}, own: mineOf()}
				for _, s := range specs {
					if _, err := reconcile(a, s); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
