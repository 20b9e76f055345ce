package pdktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest/internal/osapi"
)

// OpenStack is a stateful fake OpenStack for unit tests: every collection the embedded cloud of
// `openstack-sync run --embedded-cloud` and the conformance kit knows (Keystone projects,
// domains, groups and roles; Neutron address scopes, address groups, security groups and
// networks; Ironic runbooks and deploy templates, with microversions and JSON Patch), with the
// same rules, read from the real services and held to them by the host's
// contract suite: which fields a create and an update accept or require, which are read-only or
// fixed at creation, the update verb, tags, name limits, uniqueness, the order of lists and tags,
// and the services' error codes and texts. Use its Handle as Options.Handler:
//
//	cloud := pdktest.NewOpenStack(pdktest.Admin)
//	ctx := pdktest.New(t, pdktest.Options{Handler: cloud.Handle})
//
// A request to a collection it does not know fails the test's request with a 404 naming the
// collections it knows.
type OpenStack struct {
	store  *osapi.Store
	caller osapi.Caller
}

// Role is who the fake OpenStack's caller is.
type Role int

const (
	// Admin is an admin of the admin project, as the conformance kit's default cloud.
	Admin Role = iota
	// Member is a member of the demo project.
	Member
	// System is the admin with a system-scoped token, which Ironic's deploy templates and public
	// runbooks need.
	System
)

// The ids of the projects a fake OpenStack starts with (admin, service and demo, as the real
// test cloud's bootstrap leaves them).
const (
	AdminProjectID   = "0a1d2b3c4d5e4f60819aa1b2c3d4e5f6"
	ServiceProjectID = "1b2c3d4e5f60718293a4b5c6d7e8f901"
	DemoProjectID    = "2c3d4e5f60718293a4b5c6d7e8f90123"
)

// NewOpenStack returns a fake OpenStack that answers as role would be answered.
func NewOpenStack(role Role) *OpenStack {
	s := osapi.New(osapi.Options{
		URL: func(service string) string { return "http://" + service + ".openstack.test" },
		Projects: []osapi.Project{
			{ID: AdminProjectID, Name: "admin", Description: "Bootstrap project for initializing the cloud."},
			{ID: ServiceProjectID, Name: "service"}, {ID: DemoProjectID, Name: "demo"},
		},
	})
	c := osapi.Caller{ProjectID: AdminProjectID, Admin: true}
	switch role {
	case Member:
		c = osapi.Caller{ProjectID: DemoProjectID}
	case System:
		c = osapi.Caller{Admin: true, System: true}
	}
	return &OpenStack{store: s, caller: c}
}

// Handle answers a plugin's request (Options.Handler).
func (o *OpenStack) Handle(req *pdk.Request) (*pdk.Response, error) {
	body, err := bodyBytes(req.Body)
	if err != nil {
		return nil, err
	}
	q := req.Query
	if q == nil {
		q = url.Values{}
	}
	mv := req.Microversion
	if req.Service == osapi.Baremetal {
		// Ironic's negotiation: none is 1.1, latest the newest, beyond it 406.
		if mv == "latest" {
			mv = osapi.IronicVersion
		}
		if !osapi.IronicAccepts(mv) {
			inner, _ := json.Marshal(map[string]any{"code": 406, "title": "Not Acceptable", "description": fmt.Sprintf(
				"Version %s was requested but the minor version is not supported by this service. The supported version range is: [1.1, %s].",
				mv, osapi.IronicVersion)})
			return JSON(406, map[string]any{"error_message": string(inner)}), nil
		}
	}
	resp, ok := o.store.Serve(osapi.Request{Service: req.Service, Method: req.Method, Path: req.Path, Query: q,
		Body: body, Microversion: mv, Caller: o.caller})
	if !ok {
		return JSON(404, map[string]any{"error": map[string]any{"code": 404, "title": "Not Found",
			"message": fmt.Sprintf("pdktest.OpenStack knows no collection at %s %s; it knows %s", req.Service, req.Path,
				strings.Join(osapi.Names(), ", "))}}), nil
	}
	switch {
	case resp.Text != "":
		return &pdk.Response{StatusCode: resp.Status, Header: map[string][]string{"Content-Type": {"text/plain"}}, Body: []byte(resp.Text)}, nil
	case resp.Body == nil && !resp.Null && resp.Encoded == nil:
		return &pdk.Response{StatusCode: resp.Status, Header: map[string][]string{}}, nil
	}
	b, err := resp.JSON()
	if err != nil {
		return nil, err
	}
	return JSON(resp.Status, json.RawMessage(b)), nil
}

// Objects returns the objects of a collection ("identity:projects", "network:address-scopes"),
// oldest first, as stored (what a read shows, without links).
func (o *OpenStack) Objects(collection string) []map[string]any {
	return o.store.Objects(collection)
}

// Add stores an object without the API's checks, as one made by hand, filling what the service
// fills (its id among them), and returns it.
func (o *OpenStack) Add(collection string, obj map[string]any) map[string]any {
	out, err := o.store.Add(collection, obj)
	if err != nil {
		panic("pdktest.OpenStack.Add: " + err.Error())
	}
	return out
}

// Declare serves a Neutron collection the fake knows no rules for (path "v2.0/widgets", body key
// "widget") generically: Neutron's rules for a resource with a name, a description and an owner.
// It predicts little of what the real resource refuses; its objects are "network:<name>".
func (o *OpenStack) Declare(path, key string) {
	if _, err := o.store.Declare(path, key); err != nil {
		panic("pdktest.OpenStack.Declare: " + err.Error())
	}
}

// Collections lists the collections the fake knows, as "service:name".
func (o *OpenStack) Collections() []string { return slices.Clone(osapi.Names()) }
