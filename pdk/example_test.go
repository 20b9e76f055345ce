package pdk_test

import (
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
)

// A plugin registers its metadata and handlers from init; bench.ReconcileInput runs Reconcile
// the way the wasm entry point does, here against a cloud replayed from fixed bodies.
func ExampleRegister() {
	// A plugin calls Register once, from init; the Once only lets this example run twice.
	registerOnce.Do(registerWidgets)
	cloud := &bench.Replay{Bodies: map[string][]byte{"GET v2.0/widgets/w1": []byte(`{"widget": {"size": 3}}`)}}
	notes, err := bench.ReconcileInput(cloud, nil,
		[]byte(`{"abi_version":1,"object":{"kind":"Widget","namespace":"ns","name":"a"},"spec":{"name":"w1"}}`))
	fmt.Println(notes, err, cloud.Requests)
	// Output: [widget w1 has size 3] <nil> 1
}

var registerOnce sync.Once

type widgetSpec struct {
	Name string `json:"name"`
}

func registerWidgets() {
	pdk.Register(pdk.Plugin{
		Metadata: pdk.Metadata{Name: "neutron-widgets", Noun: "widget", EnvPrefix: "NEUTRON_WIDGET",
			Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/widgets/*"}}}},
		WaitForAPI: func(ctx *pdk.Context) error { return nil },
		Reconcile: func(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
			var s widgetSpec
			if err := req.DecodeSpec(&s); err != nil {
				return nil, err
			}
			var w struct {
				Widget struct {
					Size int `json:"size"`
				} `json:"widget"`
			}
			if err := ctx.OpenStack("network").Get("v2.0/widgets/"+url.PathEscape(s.Name), nil, &w); err != nil {
				return nil, err
			}
			return &pdk.Result{Notes: []string{fmt.Sprintf("widget %s has size %d", s.Name, w.Widget.Size)}}, nil
		},
	})
}

func ExampleCheckPath() {
	for _, p := range []string{"v2.0/flavors/" + url.PathEscape("my flavor"), "v2.0/flavors/a%2Fb", "v2.0/flavors/", "/"} {
		fmt.Printf("%q: %v\n", p, pdk.CheckPath(p))
	}
	// Output:
	// "v2.0/flavors/my%20flavor": <nil>
	// "v2.0/flavors/a%2Fb": segment "a%2Fb" holds an encoded slash or backslash, which a server may decode into a separator
	// "v2.0/flavors/": the path has an empty segment (a doubled, leading or trailing slash)
	// "/": <nil>
}

func ExampleExplainRefusal() {
	grants := []pdk.Grant{{Service: "network", Methods: []string{"GET", "POST"}, Paths: []string{"v2.0/flavors", "v2.0/flavors/*"}}}
	fmt.Println(pdk.ExplainRefusal(grants, "the plugin declares", "network", "DELETE", "v2.0/flavors/f1"))
	fmt.Println(pdk.ExplainRefusal(grants, "the plugin declares", "network", "GET", "v2.0/routers"))
	fmt.Printf("%q\n", pdk.ExplainRefusal(grants, "the plugin declares", "network", "GET", "v2.0/flavors/f1"))
	// Output:
	// DELETE network v2.0/flavors/f1: method DELETE is not one the plugin declares for this path (GET, POST)
	// GET network v2.0/routers: no path pattern the plugin declares for service network matches (v2.0/flavors, v2.0/flavors/*)
	// ""
}

func ExampleErrorMessage() {
	fmt.Println(pdk.ErrorMessage([]byte(`{"NeutronError": {"type": "FlavorInUse", "message": "Flavor f1 is in use.", "detail": ""}}`)))
	fmt.Println(pdk.ErrorMessage([]byte(`{"error_message": "{\"faultstring\": \"Runbook CUSTOM_X could not be found.\", \"debuginfo\": null}"}`)))
	// Output:
	// Flavor f1 is in use.
	// Runbook CUSTOM_X could not be found.
}

func ExampleIsConflict() {
	err := fmt.Errorf("delete flavor f1: %w",
		pdk.NewHTTPError("network", "DELETE", "v2.0/flavors/f1", 409, []byte(`{"NeutronError": {"message": "Flavor f1 is in use."}}`)))
	fmt.Println(pdk.IsConflict(err), pdk.IsNotFound(err), pdk.StatusCode(err))
	fmt.Println(err)
	// Output:
	// true false 409
	// delete flavor f1: DELETE v2.0/flavors/f1: HTTP 409 Conflict: Flavor f1 is in use.
}

func ExamplePermanent() {
	err := pdk.Permanent(pdk.WithReason("IronicTooOld", errors.New("Ironic supports API microversion 1.82 but this plugin requires 1.92")))
	fmt.Println(pdk.IsPermanent(err), pdk.Reason(err))
	// Output: true IronicTooOld
}

func ExampleParseAPIVersion() {
	v, _ := pdk.ParseAPIVersion("1.96")
	fmt.Println(v, v.Less(pdk.APIVersion{Major: 1, Minor: 112}))
	// Output: 1.96 true
}
