//go:build wasip1

// Command lifecyclemock is a test plugin that reports the shared lifecycle status. Its Reconcile
// and Delete return the lifecycle status the CR's spec.lifecycle holds, verbatim, so the host's
// mapping and its checks of what a guest reports are tested without an OpenStack resource.
package main

import (
	"encoding/json"

	"github.com/openstack-sync/openstack-sync/pdk"
)

type spec struct {
	Lifecycle json.RawMessage `json:"lifecycle"`
	// Plain makes the handler return a result without a lifecycle status.
	Plain bool `json:"plain"`
}

func handle(_ *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	var s spec
	if err := req.DecodeSpec(&s); err != nil {
		return nil, err
	}
	if s.Plain {
		return &pdk.Result{}, nil
	}
	var ls pdk.LifecycleStatus
	if err := json.Unmarshal(s.Lifecycle, &ls); err != nil {
		return nil, err
	}
	// The status the host passed comes back as the observed resource, to prove it arrived.
	if ls.Resource == nil && req.Status != nil {
		ls.Resource = map[string]any{"seen_status_id": req.Status["id"]}
	}
	return &pdk.Result{Lifecycle: &ls}, nil
}

func init() {
	pdk.Register(pdk.Plugin{
		Metadata: pdk.Metadata{Name: "lifecyclemock", Noun: "mock resource", EnvPrefix: "LCMOCK",
			BindingName: "lifecyclemocks", Lifecycle: true},
		WaitForAPI: func(*pdk.Context) error { return nil },
		Reconcile:  handle,
		Delete:     handle,
	})
}

func main() {}
