//go:build wasip1

// Command initpanic registers an invalid plugin, so pdk.Register panics while the host runs
// _initialize: the host must refuse to load it and show the panic's text.
package main

import "github.com/openstack-sync/openstack-sync/pdk"

func init() {
	pdk.Register(pdk.Plugin{Metadata: pdk.Metadata{Name: "initpanic"}})
}

func main() {}
