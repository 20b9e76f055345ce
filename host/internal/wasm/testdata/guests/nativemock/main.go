// Command nativemock is a pdk plugin with no wasm-only code, so it builds both as a module and
// natively (pdk.ServeNative): the test of the benchmark's native limit runs it both ways.
package main

import (
	"errors"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
)

type spec struct {
	Action string `json:"action"`
	Name   string `json:"name"`
}

func reconcile(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	var s spec
	if err := req.DecodeSpec(&s); err != nil {
		return nil, err
	}
	n, _ := ctx.Cache()["count"].(int)
	n++
	ctx.Cache()["count"] = n
	switch s.Action {
	case "config":
		v, ok := ctx.Config(s.Name)
		if !ok {
			return nil, errors.New("no " + s.Name)
		}
		return &pdk.Result{Notes: []string{v}}, nil
	case "outside-grant":
		return nil, ctx.OpenStack("network").Delete("v2.0/networks/x", nil, nil)
	case "fail":
		return nil, pdk.WithReason("MockFailure", errors.New("mock failure on purpose"))
	case "memo":
		return memo(ctx, s)
	case "memo-lie":
		// Asks for the recorded result without asking the memo first.
		return experimental.Recorded(), nil
	case "memo-huge":
		experimental.Unchanged(ctx, make([]byte, 5<<20))
		return &pdk.Result{}, nil
	case "source":
		// Reads a thing from the source at the URL named by Name, with the Secret mock/token.
		var thing struct {
			Name string `json:"name"`
		}
		if err := ctx.Source("inventory", s.Name).WithSecret("mock", "token").Get("api/things/a/", nil, &thing); err != nil {
			return nil, err
		}
		return &pdk.Result{Notes: []string{"source says " + thing.Name}}, nil
	}
	ctx.Logf(pdk.LevelInfo, "reconciling %s", s.Name)
	var thing struct {
		Thing struct {
			ID string `json:"id"`
		} `json:"thing"`
	}
	if err := ctx.OpenStack("network").Get("v2.0/things/"+s.Name, nil, &thing); err != nil && !pdk.IsNotFound(err) {
		return nil, err
	}
	return &pdk.Result{Notes: []string{s.Name}, ExtraStatus: map[string]any{"group_call": n}}, nil
}

// memo converges one thing through the convergence memo: the thing's JSON as the GET returned it
// is the evidence; a miss logs "full reconcile", creates a missing thing and notes its size.
func memo(ctx *pdk.Context, s spec) (*pdk.Result, error) {
	things := ctx.OpenStack("network")
	resp, err := things.Do(pdk.Request{Method: "GET", Path: "v2.0/things/" + s.Name})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == 200 && experimental.Unchanged(ctx, resp.Body, []byte(s.Name)) {
		return experimental.Recorded(), nil
	}
	ctx.Logf(pdk.LevelInfo, "full reconcile %s", s.Name)
	if resp.StatusCode == 404 {
		if err := things.Post("v2.0/things", map[string]any{"thing": map[string]string{"name": s.Name}}, nil); err != nil {
			return nil, err
		}
	}
	return &pdk.Result{Notes: []string{"thing is " + string(resp.Body)}, ExtraStatus: map[string]any{"thing_status": resp.StatusCode}}, nil
}

func init() {
	pdk.Register(pdk.Plugin{
		Metadata: pdk.Metadata{
			Name: "nativemock", Noun: "native mock", EnvPrefix: "MOCK", BindingName: "mocks",
			Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/things/*"}},
				{Service: "network", Methods: []string{"POST"}, Paths: []string{"v2.0/things"}}},
			Sources: []pdk.SourceGrant{{Name: "inventory", Methods: []string{"GET"}, Paths: []string{"api/things/*/"}}},
		},
		WaitForAPI: func(*pdk.Context) error { return nil },
		Reconcile:  reconcile,
	})
}

func main() {}
