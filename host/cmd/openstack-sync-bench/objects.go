package main

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The shapes of CR a scenario creates (--objects).
//
// plain is the benchmark's first workload: the smallest spec each plugin accepts, created by one
// client, no labels or annotations. site is what an operator's API server stores: several steps
// with arguments, traits and extra for a runbook, profiles with their metadata for a flavor;
// labels and a GitOps tracking annotation; created the way `kubectl apply` (and Argo CD's default
// client-side apply) creates them, with the whole applied object again in the
// kubectl.kubernetes.io/last-applied-configuration annotation and field ownership recorded for
// that manager. The hook's finalizer and status writes add their own managers. docs/benchmarks.md
// ("What the site CRs hold") sizes both.
const (
	shapePlain = "plain"
	shapeSite  = "site"
)

// siteManager is the field manager that creates the site CRs: kubectl's client-side apply.
const siteManager = "kubectl-client-side-apply"

// siteMetadata adds the labels and annotations a GitOps-managed CR carries, the last-applied
// configuration last, since kubectl writes it from the object as sent.
func siteMetadata(obj *unstructured.Unstructured) {
	name := obj.GetName()
	obj.SetLabels(map[string]string{
		"app.kubernetes.io/managed-by": "argocd",
		"app.kubernetes.io/part-of":    "understack",
		"app.kubernetes.io/instance":   "site-dfw3-openstack-sync",
		"openstack-sync.io/site":       "dfw3",
	})
	obj.SetAnnotations(map[string]string{
		"argocd.argoproj.io/tracking-id": fmt.Sprintf("site-dfw3-openstack-sync:%s/%s:%s/%s",
			obj.GroupVersionKind().Group, obj.GetKind(), obj.GetNamespace(), name),
	})
	applied, err := json.Marshal(obj.Object)
	if err != nil {
		panic(err) // plain maps, strings and numbers
	}
	ann := obj.GetAnnotations()
	ann["kubectl.kubernetes.io/last-applied-configuration"] = string(applied) + "\n"
	obj.SetAnnotations(ann)
}

// siteRunbook is a firmware-and-BIOS runbook as a bare-metal site writes them: four steps, three
// with arguments (firmware images with their URLs and checksums, BIOS settings, a RAID layout),
// three traits and the team's extra keys.
func siteRunbook(i int) map[string]any {
	name := fmt.Sprintf("CUSTOM_SITE_FW_%05d", i)
	image := func(component, file string) map[string]any {
		return map[string]any{"component": component,
			"url":      fmt.Sprintf("https://firmware.dfw3.example.net/dell/r760/%s/%s", component, file),
			"checksum": fmt.Sprintf("%064x", uint64(i)*0x9e3779b97f4a7c15+uint64(len(file))),
			"wait":     30}
	}
	return map[string]any{
		"runbookName": name,
		"description": fmt.Sprintf("Firmware baseline 2026.11 and BIOS profile for rack %d", i%64),
		"public":      false,
		"traits":      []any{name, "CUSTOM_HW_DELL_R760", "CUSTOM_NIC_BCM57508"},
		"steps": []any{
			map[string]any{"interface": "firmware", "step": "update", "order": 10, "args": map[string]any{
				"settings": []any{
					image("bios", "BIOS_2.3.5.EXE"),
					image("idrac", "iDRAC_7.10.70.00_A00.EXE"),
					image("nic", "Network_Firmware_23.31.18.10.EXE"),
				}}},
			map[string]any{"interface": "bios", "step": "apply_configuration", "order": 20, "args": map[string]any{
				"settings": []any{
					map[string]any{"name": "LogicalProc", "value": "Enabled"},
					map[string]any{"name": "SysProfile", "value": "PerfOptimized"},
					map[string]any{"name": "BootMode", "value": "Uefi"},
					map[string]any{"name": "SriovGlobalEnable", "value": "Enabled"},
				}}},
			map[string]any{"interface": "raid", "step": "apply_configuration", "order": 30, "args": map[string]any{
				"delete_existing": true,
				"raid_config": map[string]any{"logical_disks": []any{
					map[string]any{"size_gb": "MAX", "raid_level": "1", "is_root_volume": true,
						"controller": "RAID.SL.3-1", "physical_disks": []any{"Disk.Bay.0:Enclosure.Internal.0-1:RAID.SL.3-1",
							"Disk.Bay.1:Enclosure.Internal.0-1:RAID.SL.3-1"}},
				}}}},
			map[string]any{"interface": "management", "step": "clear_job_queue", "order": 5},
		},
		"extra": map[string]any{"team": "metal", "site": "dfw3", "change": fmt.Sprintf("CHG%07d", 4200000+i),
			"hardware": "dell-r760"},
	}
}

// siteSegmentRange is a tenant range as a site declares it: shared, with a description in its name.
func siteSegmentRange(i int) map[string]any {
	lo := 100000 + 10*i
	return map[string]any{"name": fmt.Sprintf("dfw3-tenant-vxlan-%05d", i), "network_type": "vxlan",
		"minimum": lo, "maximum": lo + 9, "shared": true, "managementPolicy": "managed"}
}

// siteRouterFlavor is a flavor with its profile's driver metadata, as a site declares it.
func siteRouterFlavor(i int) map[string]any {
	return map[string]any{"name": fmt.Sprintf("dfw3-l3-%05d", i),
		"description":  fmt.Sprintf("Routers on network node class %d of site dfw3", i%16),
		"service_type": "L3_ROUTER_NAT", "is_enabled": true,
		"service_profiles": []any{map[string]any{
			"driver":      "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver",
			"description": fmt.Sprintf("single node L3, class %d", i%16),
			"is_enabled":  true,
			"meta_info":   map[string]any{"resource_class": fmt.Sprintf("network-node-%d", i%16), "vni_alloc": "auto"},
		}}}
}
