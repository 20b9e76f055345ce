package main

import (
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// siteRunbook is the i-th runbook of a bare-metal site as Ironic lists it (the whole-hook
// benchmark's --objects site): four steps, three with arguments (firmware images with URLs and
// checksums, BIOS settings, a RAID layout), three traits, the team's extra and the markers;
// about 2 KB of JSON.
func siteRunbook(i int) string {
	name := fmt.Sprintf("CUSTOM_SITE_FW_%05d", i)
	uuid := fmt.Sprintf("b0000000-0000-4000-8000-%012d", i)
	image := func(component, file string) string {
		return fmt.Sprintf(`{"checksum":"%064x","component":%q,"url":"https://firmware.dfw3.example.net/dell/r760/%s/%s","wait":30}`,
			uint64(i)*0x9e3779b97f4a7c15+uint64(len(file)), component, component, file)
	}
	return fmt.Sprintf(`{"uuid":%q,"name":%q,"public":false,"owner":"6c3f0d1e9b2a4c5d8e7f6a5b4c3d2e1f","disable_ramdisk":false,"description":"Firmware baseline 2026.11 and BIOS profile for rack %d",
"traits":[%q,"CUSTOM_HW_DELL_R760","CUSTOM_NIC_BCM57508"],
"extra":{"change":"CHG%07d","hardware":"dell-r760","openstack-sync.io/credential-group":"metal/clouds/prod","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook","site":"dfw3","team":"metal"},
"steps":[{"interface":"firmware","step":"update","args":{"settings":[%s,%s,%s]},"order":10},
{"interface":"bios","step":"apply_configuration","args":{"settings":[{"name":"LogicalProc","value":"Enabled"},{"name":"SysProfile","value":"PerfOptimized"},{"name":"BootMode","value":"Uefi"},{"name":"SriovGlobalEnable","value":"Enabled"}]},"order":20},
{"interface":"raid","step":"apply_configuration","args":{"delete_existing":true,"raid_config":{"logical_disks":[{"controller":"RAID.SL.3-1","is_root_volume":true,"physical_disks":["Disk.Bay.0:Enclosure.Internal.0-1:RAID.SL.3-1","Disk.Bay.1:Enclosure.Internal.0-1:RAID.SL.3-1"],"raid_level":"1","size_gb":"MAX"}]}},"order":30},
{"interface":"management","step":"clear_job_queue","args":{},"order":5}],
"created_at":"2026-11-30T10:00:00+00:00","updated_at":"2026-12-01T10:00:00+00:00","links":[{"href":"http://ironic/v1/runbooks/%s","rel":"self"},{"href":"http://ironic/runbooks/%s","rel":"bookmark"}]}`,
		uuid, name, i%64, name, 4200000+i, image("bios", "BIOS_2.3.5.EXE"), image("idrac", "iDRAC_7.10.70.00_A00.EXE"),
		image("nic", "Network_Firmware_23.31.18.10.EXE"), uuid, uuid)
}

// siteListing answers the list of n site runbooks in pages of pdk.PageSize, as Ironic does.
func siteListing(n int) *bench.Replay {
	h := &bench.Replay{Bodies: map[string][]byte{"GET /": []byte(`{"versions":[{"id":"v1","status":"CURRENT","version":"1.112","min_version":"1.1"}]}`)}}
	for start := 0; start < n; start += pdk.PageSize {
		end := min(start+pdk.PageSize, n)
		body := []byte(`{"runbooks":[`)
		for i := start; i < end; i++ {
			if i > start {
				body = append(body, ',')
			}
			body = append(body, siteRunbook(i)...)
		}
		body = append(body, ']')
		if end < n {
			body = fmt.Appendf(body, `,"next":"http://ironic/v1/runbooks?detail=True\u0026limit=%d\u0026marker=b0000000-0000-4000-8000-%012d"`, pdk.PageSize, end-1)
		}
		body = append(body, '}')
		q := url.Values{"detail": {"true"}, "limit": {strconv.Itoa(pdk.PageSize)}}
		if start > 0 {
			q.Set("marker", fmt.Sprintf("b0000000-0000-4000-8000-%012d", start-1))
		}
		h.Bodies["GET v1/runbooks?"+q.Encode()] = body
	}
	return h
}

// The group's catalog of 20,000 site-shaped runbooks (about 40 MB of JSON) fits the guest's
// default 32 MiB: it keeps the JSON of the first runbooks up to its budget and a digest of each
// other one. Before, it kept every runbook's JSON and the sandbox ran out of memory. The budget
// is of live heap after a collection, measured natively, where the guest's Go has the same sizes.
func TestACatalogOf20000RunbooksFitsTheSandbox(t *testing.T) {
	const budget = defaultCatalogMiB<<20 + 4<<20
	h := siteListing(20000)
	input := fmt.Appendf(nil, `{"abi_version":1,"object":{"api_version":"openstack-sync.io/v1alpha1","kind":"IronicRunbook","namespace":"metal","name":"rb-0","uid":"0a1b2c3d-0000-4000-8000-000000000000","generation":3},
"credentials":{"namespace":"metal","secret_name":"clouds","cloud_name":"prod"},"spec":{"runbookName":"CUSTOM_SITE_FW_00000","description":"Firmware baseline 2026.11 and BIOS profile for rack 0","public":false,
"traits":["CUSTOM_SITE_FW_00000","CUSTOM_HW_DELL_R760","CUSTOM_NIC_BCM57508"],"extra":{"team":"metal","site":"dfw3","change":"CHG4200000","hardware":"dell-r760"},
"steps":[{"interface":"firmware","step":"update","order":10,"args":{"settings":[%s,%s,%s]}},
{"interface":"bios","step":"apply_configuration","order":20,"args":{"settings":[{"name":"LogicalProc","value":"Enabled"},{"name":"SysProfile","value":"PerfOptimized"},{"name":"BootMode","value":"Uefi"},{"name":"SriovGlobalEnable","value":"Enabled"}]}},
{"interface":"raid","step":"apply_configuration","order":30,"args":{"delete_existing":true,"raid_config":{"logical_disks":[{"size_gb":"MAX","raid_level":"1","is_root_volume":true,"controller":"RAID.SL.3-1","physical_disks":["Disk.Bay.0:Enclosure.Internal.0-1:RAID.SL.3-1","Disk.Bay.1:Enclosure.Internal.0-1:RAID.SL.3-1"]}]}}},
{"interface":"management","step":"clear_job_queue","order":5}]}}`,
		`{"component":"bios","url":"https://firmware.dfw3.example.net/dell/r760/bios/BIOS_2.3.5.EXE","checksum":"000000000000000000000000000000000000000000000000000000000000000e","wait":30}`,
		`{"component":"idrac","url":"https://firmware.dfw3.example.net/dell/r760/idrac/iDRAC_7.10.70.00_A00.EXE","checksum":"0000000000000000000000000000000000000000000000000000000000000018","wait":30}`,
		`{"component":"nic","url":"https://firmware.dfw3.example.net/dell/r760/nic/Network_Firmware_23.31.18.10.EXE","checksum":"0000000000000000000000000000000000000000000000000000000000000020","wait":30}`)
	cache := map[string]any{catalogKey: &catalog{listAfter: 0, keepBytes: defaultCatalogMiB << 20}}
	var notes []string
	var err error
	kept := bench.LiveHeapGrowth(func() { notes, err = bench.ReconcileInput(h, cache, input) })
	require.NoError(t, err)
	assert.Empty(t, notes, "the first runbook is converged, read from the catalog")
	c := cache[catalogKey].(*catalog)
	require.Len(t, c.listed, 20000)
	assert.LessOrEqual(t, kept, int64(budget), "the catalog of 20,000 runbooks keeps %.1f MiB", float64(kept)/(1<<20))
	t.Logf("the catalog of 20,000 runbooks keeps %.1f MiB (%d requests)", float64(kept)/(1<<20), h.Requests)
}
