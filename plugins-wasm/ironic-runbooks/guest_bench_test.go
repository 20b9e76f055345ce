package main

import (
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// convergedGroup builds n converged runbooks as a real Ironic answers them (timestamps, links,
// three steps with arguments) and the reconcile inputs the host sends for their CRs (spec and the
// status the previous run wrote). The list is answered in pages of pdk.PageSize, each full page
// with a "next" link as the whole-hook benchmark's cloud writes it (Go's encoder escapes its "&").
func convergedGroup(n int) (*bench.Replay, [][]byte) {
	h := &bench.Replay{Bodies: map[string][]byte{"GET /": []byte(`{"name":"OpenStack Ironic API","versions":[{"id":"v1","status":"CURRENT","version":"1.112","min_version":"1.1","links":[{"href":"http://ironic/v1/","rel":"self"}]}],"default_version":{"id":"v1","version":"1.112","min_version":"1.1","status":"CURRENT"}}`)}}
	var inputs [][]byte
	var items [][]byte
	for i := range n {
		name := fmt.Sprintf("CUSTOM_RB_%d", i)
		uuid := fmt.Sprintf("a0000000-0000-4000-8000-%012d", i)
		h.Bodies["GET v1/runbooks/"+name] = fmt.Appendf(nil, `{"uuid":%q,"name":%q,"public":true,"owner":null,"disable_ramdisk":false,"description":"firmware and BIOS defaults","traits":[%q],
"extra":{"openstack-sync.io/credential-group":"metal/clouds/prod","openstack-sync.io/managed-by":"ironic-runbooks","openstack-sync.io/marker-version":"v1","openstack-sync.io/source":"IronicRunbook","team":"metal"},
"steps":[{"interface":"bios","step":"apply_configuration","args":{"settings":[{"name":"LogicalProc","value":"Enabled"},{"name":"ProcVirtualization","value":"Enabled"}]},"order":20},
{"interface":"management","step":"clear_job_queue","args":{},"order":10},{"interface":"raid","step":"create_configuration","args":{"create_root_volume":true,"create_nonroot_volumes":false},"order":30}],
"created_at":"2026-11-30T10:00:00+00:00","updated_at":null,"links":[{"href":"http://ironic/v1/runbooks/%s","rel":"self"},{"href":"http://ironic/runbooks/%s","rel":"bookmark"}]}`,
			uuid, name, name, uuid, uuid)
		items = append(items, h.Bodies["GET v1/runbooks/"+name])
		inputs = append(inputs, fmt.Appendf(nil, `{"abi_version":1,"object":{"api_version":"openstack-sync.io/v1alpha1","kind":"IronicRunbook","namespace":"metal","name":"rb-%d","uid":"0a1b2c3d-0000-4000-8000-%012d","generation":3},
"credentials":{"namespace":"metal","secret_name":"clouds","cloud_name":"prod"},"spec":{"runbookName":%q,"description":"firmware and BIOS defaults","public":true,"traits":[%q],"extra":{"team":"metal"},
"steps":[{"interface":"management","step":"clear_job_queue","order":10},{"interface":"bios","step":"apply_configuration","order":"20","args":{"settings":[{"name":"LogicalProc","value":"Enabled"},{"name":"ProcVirtualization","value":"Enabled"}]}},
{"interface":"raid","step":"create_configuration","order":30,"args":{"create_root_volume":true,"create_nonroot_volumes":false}}]},
"status":{"syncStatus":"Synced","observedGeneration":3,"lastSyncTime":"2026-12-01T01:00:00Z","conditions":[{"type":"Ready","status":"True","reason":"Synced","message":"Successfully reconciled ironic runbook","observedGeneration":3,"lastTransitionTime":"2026-11-30T10:00:00Z"}]}}`,
			i, i, name, name))
	}
	marker := ""
	for start := 0; ; start += pdk.PageSize {
		page := items[min(start, len(items)):min(start+pdk.PageSize, len(items))]
		body := []byte(`{"runbooks":[`)
		for j, it := range page {
			if j > 0 {
				body = append(body, ',')
			}
			body = append(body, it...)
		}
		body = append(body, ']')
		last := ""
		if len(page) == pdk.PageSize {
			last = fmt.Sprintf("a0000000-0000-4000-8000-%012d", start+len(page)-1)
			body = fmt.Appendf(body, `,"next":"http://ironic/v1/runbooks?sort_key=id\u0026sort_dir=asc\u0026detail=True\u0026limit=%d\u0026marker=%s"`, pdk.PageSize, last)
		}
		body = append(body, '}')
		q := url.Values{"detail": {"true"}, "limit": {strconv.Itoa(pdk.PageSize)}}
		if marker != "" {
			q.Set("marker", marker)
		}
		h.Bodies["GET v1/runbooks?"+q.Encode()] = body
		if last == "" {
			break
		}
		marker = last
	}
	return h, inputs
}

// BenchmarkGuestReconcileConverged runs what the guest does for each converged CR of a group, in
// the order the wasm entry point does it: decode the host's input, run Reconcile, encode the
// result. ns/op divided by crs is the marginal cost per CR natively (docs/benchmarks.md).
func BenchmarkGuestReconcileConverged(b *testing.B) {
	for _, bc := range []struct {
		n    int
		mode string
	}{{1, "get"}, {100, "get"}, {100, "list"}, {1000, "list"}, {1000, "memo"}} {
		n := bc.n
		b.Run(fmt.Sprintf("crs=%d/%s", n, bc.mode), func(b *testing.B) {
			h, inputs := convergedGroup(n)
			if bc.mode == "memo" {
				// The steady state: a pass has recorded every CR, each later one is answered
				// from the host's convergence memo after reading what it compares.
				h.Memo = true
				cache := map[string]any{}
				for _, in := range inputs {
					if _, err := bench.ReconcileInput(h, cache, in); err != nil {
						b.Fatal(err)
					}
				}
			}
			bench.BenchmarkGroup(b, h, inputs, func() map[string]any {
				if bc.mode == "get" {
					return map[string]any{catalogKey: &catalog{listAfter: -1}}
				}
				return nil
			})
		})
	}
}

// A converged group's whole guest path (the host's input, the spec, the version document, the
// list pages with their escaped next links, each listed runbook) stays on the PDK's decoders.
func TestConvergedGroupNeverDecodesWithEncodingJSON(t *testing.T) {
	h, inputs := convergedGroup(250)
	bench.RequireNoSlowDecodes(t, h, inputs)
}
