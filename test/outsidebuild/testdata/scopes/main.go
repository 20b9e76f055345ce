//go:build wasip1

// Command scopes is a third party's plugin as the plugin command sees it: every metadata field
// set, including version, description and source.
package main

import "github.com/openstack-sync/openstack-sync/pdk"

func init() {
	pdk.Register(pdk.Plugin{
		Metadata: pdk.Metadata{
			Name: "neutron-address-scopes", Noun: "address scope", EnvPrefix: "NEUTRON_ADDRESS_SCOPE",
			BindingName: "neutron-address-scopes", Version: "0.3.1",
			Description: "Neutron address scopes from AddressScope CRs",
			Source:      "https://example.org/scopes-plugin",
			Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET", "POST", "DELETE"},
				Paths: []string{"v2.0/address-scopes", "v2.0/address-scopes/*"}}},
			Cleanup: pdk.Cleanup{WhenNoPrune: pdk.CleanupBestEffortPrune},
		},
		WaitForAPI: func(ctx *pdk.Context) error { return nil },
		Reconcile:  func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) { return &pdk.Result{}, nil },
		Prune:      func(ctx *pdk.Context, req *pdk.PruneRequest) error { return nil },
	})
}

func main() {}
