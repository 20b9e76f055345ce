//go:build wasip1

// Command initloop is a valid plugin whose runtime never finishes starting: its init spins
// without calling the host, so the host's _initialize of every instance overruns its deadline.
package main

import "github.com/openstack-sync/openstack-sync/pdk"

var spins int

func init() {
	pdk.Register(pdk.Plugin{
		Metadata:   pdk.Metadata{Name: "initloop", EnvPrefix: "MOCK", BindingName: "mocks"},
		WaitForAPI: func(*pdk.Context) error { return nil },
		Reconcile:  func(*pdk.Context, *pdk.ReconcileRequest) (*pdk.Result, error) { return &pdk.Result{}, nil },
	})
	for i := 0; ; i++ {
		if i < 0 {
			break
		}
		spins = i
	}
}

func main() {}
