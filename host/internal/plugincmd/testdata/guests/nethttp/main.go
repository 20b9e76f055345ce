//go:build wasip1

// Command nethttp reaches for net/http, as a first plugin often does; the host must refuse it
// and name net/http as the likely cause.
package main

import (
	"net/http"

	"github.com/openstack-sync/openstack-sync/pdk"
)

func init() {
	pdk.Register(pdk.Plugin{
		Metadata:   pdk.Metadata{Name: "nethttp", EnvPrefix: "NETHTTP"},
		WaitForAPI: func(ctx *pdk.Context) error { _, err := http.Get("http://keystone:5000/"); return err },
		Reconcile:  func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) { return nil, nil },
	})
}

func main() {}
