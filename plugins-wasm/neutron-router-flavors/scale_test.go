package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// siteGroup is n converged site-shaped router flavors (one profile each, metainfo with the
// group's markers) as Neutron lists them, a page per 100, and the input of the first CR.
func siteGroup(n int) (*bench.Replay, []byte) {
	bodies := map[string][]byte{}
	page := func(path, key string, item func(i int) string, id func(i int) string) {
		for start := 0; start < n; start += 100 {
			end := min(start+100, n)
			var items []string
			for i := start; i < end; i++ {
				items = append(items, item(i))
			}
			links := "[]"
			if end < n {
				links = fmt.Sprintf(`[{"rel":"next","href":"http://neutron/%s?limit=100&marker=%s"}]`, path, id(end-1))
			}
			q := "limit=100"
			if start > 0 {
				q += "&marker=" + id(start-1)
			}
			bodies["GET "+path+"?"+q] = []byte(fmt.Sprintf(`{%q:[%s],%q:%s}`, key, strings.Join(items, ","), key+"_links", links))
		}
	}
	fid := func(i int) string { return fmt.Sprintf("f%07d-1111-4000-8000-%012d", i, i) }
	pid := func(i int) string { return fmt.Sprintf("p%07d-2222-4000-8000-%012d", i, i) }
	marker := ours.flavorMarker()
	page(flavorsPath, "flavors", func(i int) string {
		return fmt.Sprintf(`{"id":%q,"name":"dfw3-l3-%05d","service_type":"L3_ROUTER_NAT","description":"Routers on network node class %d of site dfw3 %s","enabled":true,"service_profiles":[%q],"tenant_id":"","project_id":""}`,
			fid(i), i, i%16, marker, pid(i))
	}, fid)
	page(profilesPath, "service_profiles", func(i int) string {
		meta, _ := ours.markedMetainfo(map[string]any{"resource_class": fmt.Sprintf("network-node-%d", i%16), "vni_alloc": "auto"})
		return fmt.Sprintf(`{"id":%q,"description":"single node L3, class %d","driver":%q,"enabled":true,"metainfo":%q,"tenant_id":"","project_id":""}`,
			pid(i), i%16, singleNode, meta)
	}, pid)
	input := fmt.Appendf(nil, `{"abi_version":1,"object":{"api_version":"openstack-sync.io/v1alpha1","kind":"NeutronRouterFlavor","namespace":"net","name":"cr-0","uid":"0a1b2c3d-0000-4000-8000-000000000000","generation":2},
"credentials":{"namespace":"pdktest","secret_name":"clouds","cloud_name":"pdktest"},"spec":{"name":"dfw3-l3-00000","description":"Routers on network node class 0 of site dfw3","service_type":"L3_ROUTER_NAT","is_enabled":true,"service_profiles":[{"driver":%q,"description":"single node L3, class 0","is_enabled":true,"meta_info":{"resource_class":"network-node-0","vni_alloc":"auto"}}]},
"status":{"id":%q}}`, singleNode, fid(0))
	return &bench.Replay{Bodies: bodies}, input
}

// The group's view of 20,000 site-shaped flavors and profiles fits the guest's default 32 MiB
// with room for the pass's own work (and a Go guest's GOGC of 25): each profile keeps what its
// metainfo says instead of the text, the view's strings are shared and its lists exact. Before,
// the view kept 24 MiB and the sandbox ran out of memory. The budget is of live heap after a
// collection, measured natively, where the guest's Go has the same sizes (64-bit).
func TestAViewOf20000FlavorsFitsTheSandbox(t *testing.T) {
	const budget = 14 << 20
	h, input := siteGroup(20000)
	cache := map[string]any{}
	var notes []string
	var err error
	kept := bench.LiveHeapGrowth(func() { notes, err = bench.ReconcileInput(h, cache, input) })
	require.NoError(t, err)
	assert.Empty(t, notes)
	st, _ := cache[cacheKey].(*state)
	require.NotNil(t, st)
	require.Len(t, st.profiles, 20000)
	require.NotNil(t, st.idx.matching, "the CR was reconciled in full: every profile's metainfo is in the view")
	assert.LessOrEqual(t, kept, int64(budget), "the view of 20,000 flavors keeps %.1f MiB", float64(kept)/(1<<20))
	t.Logf("the view of 20,000 flavors keeps %.1f MiB", float64(kept)/(1<<20))
}
