package runcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// planner answers the writes of a dry run without sending them. A plugin that saw each write
// fail would stop every CR at its first one, and the plan would show one write per CR; answering
// as OpenStack would lets the plugin carry on, so the plan holds every write of the pass in order.
//
// The answers are what the APIs of this project's plugins send back, by the shape of the request:
//   - POST of {"<resource>": {...}} (Neutron) answers 201 with the object and a new "id";
//     POST of a flat object (Ironic) answers 201 with the object and a new "uuid" and "id".
//   - PUT and PATCH read the resource (a read is sent, as every read of a dry run is) and answer
//     200 with the read object, the update merged in or the JSON patch applied; when the read
//     fails (the resource was itself only planned) the request body is answered back.
//   - DELETE answers 204.
//
// The ids are UUID-shaped and count up from 1, so the plan can say which later write used which
// planned resource.
type planner struct {
	inner plugin.Session
	next  *atomic.Int64
}

// plannedID returns the next made-up id.
func (p planner) plannedID() string {
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", p.next.Add(1))
}

// answer makes up the response to a write and says what it made up.
func (p planner) answer(ctx context.Context, req plugin.Request) (*plugin.Response, string) {
	switch req.Method {
	case http.MethodDelete:
		return &plugin.Response{StatusCode: http.StatusNoContent, Header: http.Header{}}, ""
	case http.MethodPost:
		obj, wrapper := decodeObject(req.Body)
		id := p.plannedID()
		if obj == nil {
			obj = map[string]any{}
		}
		if req.Service == "baremetal" && wrapper == "" {
			obj["uuid"] = id
		}
		if _, has := obj["id"]; !has {
			obj["id"] = id
		}
		return jsonResponse(http.StatusCreated, wrap(obj, wrapper)), "planned id " + id
	case http.MethodPut, http.MethodPatch:
		current, wrapper, ok := p.read(ctx, req)
		if !ok {
			return &plugin.Response{StatusCode: http.StatusOK, Header: jsonHeader(), Body: req.Body}, "answered with the request body"
		}
		if req.Method == http.MethodPatch {
			if patched, ok := applyPatch(current, req.Body); ok {
				return jsonResponse(http.StatusOK, wrap(patched, wrapper)), ""
			}
		}
		if update, w := decodeObject(req.Body); update != nil && (w == wrapper || wrapper == "") {
			for k, v := range update {
				current[k] = v
			}
		}
		return jsonResponse(http.StatusOK, wrap(current, wrapper)), ""
	}
	return jsonResponse(http.StatusOK, map[string]any{}), ""
}

// read GETs what a PUT or PATCH would change; ok is false when it cannot be read.
func (p planner) read(ctx context.Context, req plugin.Request) (map[string]any, string, bool) {
	get := plugin.Request{Service: req.Service, Method: http.MethodGet, Path: req.Path, Microversion: req.Microversion}
	resp, err := p.inner.Do(ctx, get)
	if err != nil || resp.StatusCode/100 != 2 {
		return nil, "", false
	}
	obj, wrapper := decodeObject(resp.Body)
	return obj, wrapper, obj != nil
}

// decodeObject reads a JSON object; a Neutron-style body ({"flavor": {...}}) is unwrapped and
// its key returned.
func decodeObject(body []byte) (map[string]any, string) {
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil || obj == nil {
		return nil, ""
	}
	if len(obj) == 1 {
		for k, v := range obj {
			if inner, ok := v.(map[string]any); ok {
				return inner, k
			}
		}
	}
	return obj, ""
}

func wrap(obj map[string]any, wrapper string) map[string]any {
	if wrapper == "" {
		return obj
	}
	return map[string]any{wrapper: obj}
}

func applyPatch(obj map[string]any, patch []byte) (map[string]any, bool) {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, false
	}
	doc, _ := json.Marshal(obj)
	out, err := p.Apply(doc)
	if err != nil {
		return nil, false
	}
	var patched map[string]any
	if json.Unmarshal(out, &patched) != nil {
		return nil, false
	}
	return patched, true
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }

func jsonResponse(status int, v any) *plugin.Response {
	b, _ := json.Marshal(v)
	return &plugin.Response{StatusCode: status, Header: jsonHeader(), Body: b}
}
