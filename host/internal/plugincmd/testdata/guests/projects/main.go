//go:build wasip1

// Command projects is a lifecycle plugin as the plugin command sees it: it reports the shared
// lifecycle status and deletes each CR's resource itself, with no set prune.
package main

import "github.com/openstack-sync/openstack-sync/pdk"

func init() {
	pdk.Register(pdk.Plugin{
		Metadata: pdk.Metadata{
			Name: "keystone-projects", Noun: "project", EnvPrefix: "KEYSTONE_PROJECT", BindingName: "keystone-projects",
			Version: "0.1.0", Lifecycle: true, StatusKeys: []string{"id"},
			Grants: []pdk.Grant{{Service: "identity", Methods: []string{"GET", "POST", "PATCH", "DELETE"},
				Paths: []string{"v3/projects", "v3/projects/*"}}},
		},
		WaitForAPI: func(ctx *pdk.Context) error { return nil },
		Reconcile:  func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) { return &pdk.Result{}, nil },
		Delete:     func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) { return &pdk.Result{}, nil },
	})
}

func main() {}
