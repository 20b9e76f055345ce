//go:build wasip1

// Command pdkmock is a test plugin written with the pdk. Reconcile's behaviour is chosen by the
// CR's spec.action, WaitForAPI's by config WAIT_MODE and Prune's by config PRUNE_MODE, so one
// module covers the well-behaved case and every misbehaviour the host must survive.
package main

import (
	"errors"
	"fmt"
	"net/url"
	"runtime/debug"
	"strconv"
	"sync/atomic"

	extism "github.com/extism/go-pdk"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// spawned is set by the goroutine the "spawn" action starts.
var spawned atomic.Bool

// benchEcho copies its input to its output and does nothing else: the host's benchmark of an
// empty call that still moves input and output through the Extism kernel.
//
//go:wasmexport bench_echo
func benchEcho() int32 {
	extism.Output(extism.Input())
	return 0
}

type spec struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	Count  int    `json:"count"`
	Size   int    `json:"size"`
}

var sink [][]byte

func misbehave(ctx *pdk.Context, action string) error {
	switch action {
	case "panic":
		panic("mock plugin panics on purpose")
	case "loop":
		for i := 0; ; i++ {
			if i < 0 {
				return nil
			}
		}
	case "hog":
		// Touch every page, as a real guest writes what it allocates: untouched pages cost the
		// host nothing and would hide what a guest at its limit costs.
		for {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			sink = append(sink, b)
		}
	case "outside-grant":
		return ctx.OpenStack("network").Delete("v2.0/networks/x", nil, nil)
	case "fail":
		return pdk.WithReason("MockFailure", errors.New("mock failure on purpose"))
	case "permanent":
		return pdk.Permanent(errors.New("mock permanent failure"))
	}
	return nil
}

// touch writes every page of b, as a real guest writes what it allocates.
func touch(b []byte) []byte {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b
}

func waitForAPI(ctx *pdk.Context) error {
	mode, _ := ctx.Config("WAIT_MODE")
	if err := misbehave(ctx, mode); err != nil {
		return err
	}
	return ctx.OpenStack("network").Get("v2.0/things", nil, nil)
}

func reconcile(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	var s spec
	if err := req.DecodeSpec(&s); err != nil {
		return nil, err
	}
	if err := misbehave(ctx, s.Action); err != nil {
		return nil, err
	}
	switch s.Action {
	case "echo":
		return &pdk.Result{Notes: []string{s.Name}}, nil
	case "hostcalls":
		for range s.Count {
			ctx.Config("ABSENT")
		}
		return &pdk.Result{}, nil
	case "requests":
		q := url.Values{"size": {strconv.Itoa(s.Size)}}
		var body struct {
			Data string `json:"data"`
		}
		for range s.Count {
			if err := ctx.OpenStack("network").Get("v2.0/things", q, &body); err != nil {
				return nil, err
			}
		}
		return &pdk.Result{Notes: []string{strconv.Itoa(len(body.Data))}}, nil
	case "swallow":
		// Ignores what the session said, as a careless plugin would.
		_ = ctx.OpenStack("network").Get("v2.0/things", nil, nil)
		return &pdk.Result{}, nil
	case "downgrade":
		// Turns whatever the session said into a retryable error of its own.
		if err := ctx.OpenStack("network").Get("v2.0/things", nil, nil); err != nil {
			return nil, fmt.Errorf("will retry later")
		}
		return &pdk.Result{}, nil
	case "spawn":
		// Starts a goroutine and returns at once; "spawned" tells whether it has run since: the
		// runtime's own goroutines (sweeper, collector workers) are scheduled the same way.
		go func() { spawned.Store(true) }()
		return &pdk.Result{}, nil
	case "gc-settings":
		// What the guest's runtime was started with: its memory limit and its GC percent.
		limit := debug.SetMemoryLimit(-1)
		percent := debug.SetGCPercent(-1)
		debug.SetGCPercent(percent)
		return &pdk.Result{Notes: []string{strconv.FormatInt(limit, 10), strconv.Itoa(percent)}}, nil
	case "spawned":
		return &pdk.Result{Notes: []string{fmt.Sprint(spawned.Load())}}, nil
	case "spawn-then-request":
		// The same within one call: a goroutine started before a request has run after it.
		spawned.Store(false)
		go func() { spawned.Store(true) }()
		_ = ctx.OpenStack("network").Get("v2.0/things", nil, nil)
		return &pdk.Result{Notes: []string{fmt.Sprint(spawned.Load())}}, nil
	case "report-status":
		return &pdk.Result{Notes: []string{fmt.Sprintf("status: %v", req.Status)}}, nil
	case "config":
		v, ok := ctx.Config(s.Name)
		return &pdk.Result{Notes: []string{fmt.Sprintf("%s=%q %v", s.Name, v, ok)}}, nil
	case "credentials":
		c := req.Credentials
		return &pdk.Result{Notes: []string{c.Namespace + "/" + c.SecretName + "/" + c.CloudName}}, nil
	}
	n, _ := ctx.Cache()["count"].(int)
	n++
	ctx.Cache()["count"] = n
	ctx.Logf(pdk.LevelInfo, "reconciling %s", s.Name)
	var thing struct {
		Thing struct {
			ID string `json:"id"`
		} `json:"thing"`
	}
	things := ctx.OpenStack("network").Microversion("2.1")
	err := things.Get("v2.0/things/"+s.Name, nil, &thing)
	if pdk.IsNotFound(err) {
		err = things.Post("v2.0/things", map[string]any{"thing": map[string]string{"name": s.Name}}, &thing)
	}
	if err != nil {
		return nil, err
	}
	return &pdk.Result{Notes: []string{fmt.Sprintf("group call %d", n)},
		ExtraStatus: map[string]any{"thing_id": thing.Thing.ID}}, nil
}

func prune(ctx *pdk.Context, req *pdk.PruneRequest) error {
	mode, _ := ctx.Config("PRUNE_MODE")
	if err := misbehave(ctx, mode); err != nil {
		return err
	}
	var specs []spec
	if err := req.DecodeSpecs(&specs); err != nil {
		return err
	}
	ctx.Logf(pdk.LevelInfo, "prune: %d desired, authoritative_empty=%v", len(specs), req.AuthoritativeEmpty)
	return nil
}

func init() {
	pdk.Register(pdk.Plugin{
		Metadata: pdk.Metadata{
			Name: "mock", Noun: "mock thing", EnvPrefix: "MOCK", BindingName: "mocks",
			Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET", "POST"},
				Paths: []string{"v2.0/things", "v2.0/things/*"}}},
			Cleanup: pdk.Cleanup{WhenNoPrune: pdk.CleanupBestEffortPrune},
			// Per group under the other profile only, so the host's choice of scope by profile,
			// and the credentials it then sends, can be seen.
			Profiles: map[string]pdk.ProfileMetadata{"understack": {PruneScope: pdk.PruneScopeGroup}},
		},
		WaitForAPI: waitForAPI,
		Reconcile:  reconcile,
		Prune:      prune,
	})
}

func main() {}
