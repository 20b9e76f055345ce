package runcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
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
//
// The plan is a world of its own for the rest of the pass (plannedWorld): a later read of a
// planned resource is answered from the plan, a list shows the planned creates that match its
// filters and no longer shows what a planned DELETE removed, so a plugin that lists before it
// creates (adoption) finds what it planned a moment ago rather than planning it twice.
type planner struct {
	inner plugin.Session
	next  *atomic.Int64
	world *plannedWorld
}

// plannedWorld is what the planned writes of a dry run changed, shared by its sessions.
type plannedWorld struct {
	mu sync.Mutex
	// created are the planned objects by collection ("service path"), in order.
	created map[string][]*plannedObject
	// deleted are the ids of real resources planned DELETEs removed, by collection.
	deleted map[string][]string
}

type plannedObject struct {
	id      string
	obj     map[string]any
	wrapper string
}

func newPlannedWorld() *plannedWorld {
	return &plannedWorld{created: map[string][]*plannedObject{}, deleted: map[string][]string{}}
}

// split is a request's collection ("service path") and the id below it, "" for the collection.
func split(req plugin.Request) (collection, id string) {
	path := strings.Trim(req.Path, "/")
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return req.Service + " " + path[:i], path[i+1:]
	}
	return req.Service + " " + path, ""
}

// find returns the planned object of a request's path, if it is one.
func (w *plannedWorld) find(req plugin.Request) *plannedObject {
	col, id := split(req)
	for _, p := range w.created[col] {
		if p.id == id {
			return p
		}
	}
	return nil
}

// planned records what a planned write does to the world.
func (w *plannedWorld) planned(req plugin.Request, resp *plugin.Response) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch req.Method {
	case http.MethodPost:
		obj, wrapper := decodeObject(resp.Body)
		id, ok := obj["id"].(string)
		if !ok {
			return
		}
		col := req.Service + " " + strings.Trim(req.Path, "/")
		w.created[col] = append(w.created[col], &plannedObject{id: id, obj: obj, wrapper: wrapper})
		// A POST below a planned resource (Neutron's flavors/{id}/service_profiles) binds the
		// new id to it: the parent's list of that name shows it, as the real one would.
		parentPath, sub := split(plugin.Request{Service: req.Service, Path: strings.Trim(req.Path, "/")})
		parent := w.find(plugin.Request{Service: req.Service, Path: strings.TrimPrefix(parentPath, req.Service+" ")})
		if list, isList := parentList(parent, sub); isList {
			parent.obj[sub] = append(list, id)
		}
	case http.MethodPut, http.MethodPatch:
		if p := w.find(req); p != nil {
			if obj, _ := decodeObject(resp.Body); obj != nil {
				p.obj = obj
			}
		}
	case http.MethodDelete:
		col, id := split(req)
		if p := w.find(req); p != nil {
			w.created[col] = slices.DeleteFunc(w.created[col], func(q *plannedObject) bool { return q == p })
		} else if id != "" {
			w.deleted[col] = append(w.deleted[col], id)
		}
	}
}

// parentList is the list attribute sub of a planned parent, if it can hold one.
func parentList(parent *plannedObject, sub string) ([]any, bool) {
	if parent == nil {
		return nil, false
	}
	// The planned answer is the object as sent: a list the service adds ([] at first) may be absent.
	switch list := parent.obj[sub].(type) {
	case []any:
		return list, true
	case nil:
		return nil, true
	}
	return nil, false
}

// read answers a read of a planned or planned-away resource; false sends the read.
func (w *plannedWorld) read(req plugin.Request) (*plugin.Response, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.find(req); p != nil {
		return jsonResponse(http.StatusOK, wrap(p.obj, p.wrapper)), true
	}
	col, id := split(req)
	if id != "" && slices.Contains(w.deleted[col], id) {
		return jsonResponse(http.StatusNotFound, map[string]any{"NeutronError": map[string]any{"type": "HTTPNotFound",
			"message": "The resource " + id + " could not be found (deleted by a planned write of this dry run).", "detail": ""}}), true
	}
	return nil, false
}

// listControls are query parameters of a list that are not filters.
var listControls = []string{"fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse", "detail"}

// list shows, in a list's answer, the planned creates of the collection that match its filters,
// and hides what planned DELETEs removed.
func (w *plannedWorld) list(req plugin.Request, resp *plugin.Response) *plugin.Response {
	w.mu.Lock()
	defer w.mu.Unlock()
	col := req.Service + " " + strings.Trim(req.Path, "/")
	if len(w.created[col]) == 0 && len(w.deleted[col]) == 0 || resp.StatusCode/100 != 2 {
		return resp
	}
	var doc map[string]any
	if json.Unmarshal(resp.Body, &doc) != nil {
		return resp
	}
	for key, v := range doc {
		items, ok := v.([]any)
		if !ok || strings.HasSuffix(key, "_links") {
			continue
		}
		items = slices.DeleteFunc(items, func(it any) bool {
			m, _ := it.(map[string]any)
			id, _ := m["id"].(string)
			return slices.Contains(w.deleted[col], id)
		})
		for _, p := range w.created[col] {
			if matches(p.obj, req.Query) {
				items = append(items, p.obj)
			}
		}
		doc[key] = items
		return jsonResponse(resp.StatusCode, doc)
	}
	return resp
}

// matches applies a list's filters to a planned object: every filter names a value it holds.
func matches(obj map[string]any, q map[string][]string) bool {
	for k, vs := range q {
		if slices.Contains(listControls, k) || strings.HasPrefix(k, "tags") || strings.HasPrefix(k, "not-tags") {
			continue
		}
		if !slices.Contains(vs, fmt.Sprint(obj[k])) {
			return false
		}
	}
	return true
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
		if planned, ok := p.world.read(req); ok && planned.StatusCode == http.StatusOK {
			// A write to a planned resource changes the plan, and sends no read.
			current, wrapper := decodeObject(planned.Body)
			if req.Method == http.MethodPatch {
				if patched, ok := applyPatch(current, req.Body); ok {
					return jsonResponse(http.StatusOK, wrap(patched, wrapper)), "a planned resource"
				}
			}
			if update, w := decodeObject(req.Body); update != nil && (w == wrapper || wrapper == "") {
				for k, v := range update {
					current[k] = v
				}
			}
			return jsonResponse(http.StatusOK, wrap(current, wrapper)), "a planned resource"
		}
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
