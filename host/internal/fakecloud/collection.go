package fakecloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
)

// Collection is a resource collection a plugin author registers so that a resource type the fake
// does not know at all can be tested locally: generic JSON CRUD with Neutron's shapes, on the
// Neutron endpoint. Unlike the collections the cloud knows (osapi: Keystone projects, Neutron
// address scopes, networks, ...), which it always serves with the real service's rules, a generic
// one predicts little of what the real service refuses. What it does is what every Neutron
// resource does, nothing more:
//
//   - POST {"<key>": {...}} creates (201): the object as sent plus id, project_id, tenant_id,
//     created_at, updated_at and revision_number (and tags: [] when Tags is on). An attribute
//     not in Attributes (when Attributes is set) is 400, as is "tags" when Tags is off: a
//     resource without Neutron's standard-attr tags (address scopes, for one) refuses them.
//   - GET lists {"<plural>": [...]} filtered by any attribute (exact match, repeated values OR-ed;
//     tags, tags-any, not-tags and not-tags-any when Tags is on, 400 when off) and projected by
//     fields; names need not be unique. GET/PUT/DELETE /{id} read, update (id, project_id and
//     tenant_id are read-only: 400) and delete (204).
//   - With Tags on, /{id}/tags answers GET, PUT (replace all), DELETE (remove all) and
//     /{id}/tags/{tag} PUT (add) and DELETE (404 when absent), as Neutron's tag extension does.
//   - A project sees its own objects; an admin sees all.
type Collection struct {
	// Path is the collection's path under the Neutron endpoint, e.g. "v2.0/address-scopes".
	Path string `json:"path"`
	// Key is the singular body key, e.g. "address_scope"; lists use Plural (default Key+"s").
	Key    string `json:"key"`
	Plural string `json:"plural,omitempty"`
	// Attributes, when set, are the only attributes a create or update may send (besides
	// project_id/tenant_id on create); unset accepts any.
	Attributes []string `json:"attributes,omitempty"`
	// Tags turns Neutron's tag support on for this collection.
	Tags bool `json:"tags,omitempty"`
}

var collectionPath = regexp.MustCompile(`^v2\.0/[a-z0-9_-]+$`)

func (col Collection) check() error {
	switch {
	case !collectionPath.MatchString(col.Path):
		return fmt.Errorf("collection path %q: want v2.0/<name> (a Neutron collection)", col.Path)
	case col.Key == "":
		return fmt.Errorf("collection %s: Key (the singular body key) is empty", col.Path)
	}
	return nil
}

// collection is a registered Collection and its objects, oldest first.
type collection struct {
	Collection
	objects []map[string]any
}

// ErrKnown is AddCollection's error for a collection the cloud already serves with the real
// service's rules.
var ErrKnown = errors.New("the embedded cloud already serves it with the real service's rules; declare nothing for it")

// AddCollection serves a collection of the author's own; it fails for a bad description or a
// path the fake already serves (ErrKnown for one osapi knows).
func (c *Cloud) AddCollection(col Collection) error {
	if err := col.check(); err != nil {
		return err
	}
	if r, ok := osapi.Lookup(Network, col.Path); ok {
		return fmt.Errorf("collection %s (%s): %w", col.Path, r.Ref(), ErrKnown)
	}
	if col.Plural == "" {
		col.Plural = col.Key + "s"
	}
	name := strings.TrimPrefix(col.Path, "v2.0/")
	if slices.Contains([]string{"flavors", "service_profiles", "routers", "network_segment_ranges", "extensions", "subnetpools"}, name) {
		return fmt.Errorf("collection %s: the fake already serves it", col.Path)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, have := range c.collections {
		if have.Path == col.Path {
			return fmt.Errorf("collection %s is already registered", col.Path)
		}
	}
	c.collections = append(c.collections, &collection{Collection: col})
	return nil
}

// ParseCollection reads the command-line form of a collection. SERVICE:NAME names one the cloud
// knows (identity:projects, network:address-scopes; osapi.Names lists them), which it always
// serves: known is true and there is nothing to add. SERVICE:PATH:KEY[:notags|:tags] describes a
// generic one, e.g. "network:v2.0/widgets:widget:notags"; tags are on unless notags is given.
func ParseCollection(s string) (col Collection, known bool, err error) {
	parts := strings.Split(s, ":")
	if len(parts) == 2 {
		if _, ok := osapi.Lookup(parts[0], parts[1]); ok {
			return Collection{}, true, nil
		}
		return Collection{}, false, fmt.Errorf("collection %q is not one the embedded cloud knows (%s); describe another as "+
			"SERVICE:PATH:KEY[:notags], which is served generically and predicts little", s, strings.Join(osapi.Names(), ", "))
	}
	if len(parts) < 3 || len(parts) > 4 {
		return Collection{}, false, fmt.Errorf("collection %q: want SERVICE:NAME (a known collection) or SERVICE:PATH:KEY[:notags]", s)
	}
	if _, ok := osapi.Lookup(parts[0], strings.Trim(parts[1], "/")); ok {
		return Collection{}, true, nil
	}
	if parts[0] != Network {
		return Collection{}, false, fmt.Errorf("collection %q: only the %s service serves generic collections; the embedded cloud knows %s",
			s, Network, strings.Join(osapi.Names(), ", "))
	}
	col = Collection{Path: strings.Trim(parts[1], "/"), Key: parts[2], Tags: true}
	if len(parts) == 4 {
		switch parts[3] {
		case "notags":
			col.Tags = false
		case "tags":
		default:
			return Collection{}, false, fmt.Errorf("collection %q: the fourth field is tags or notags, not %q", s, parts[3])
		}
	}
	return col, false, col.check()
}

// Objects returns the objects of a registered collection (by its Path), oldest first.
func (c *Cloud) Objects(path string) []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []map[string]any
	if col := c.findCollection(path); col != nil {
		for _, o := range col.objects {
			out = append(out, cloneJSON(o))
		}
	}
	return out
}

// AddObject seeds an object into a registered collection without the API's checks (e.g. one no
// operator owns) and returns it with its id.
func (c *Cloud) AddObject(path string, obj map[string]any) map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	col := c.findCollection(path)
	if col == nil {
		panic(fmt.Sprintf("fakecloud: AddObject: no collection %q", path))
	}
	o := cloneJSON(obj)
	col.stamp(o, c.projects["admin"])
	col.objects = append(col.objects, o)
	return cloneJSON(o)
}

func (c *Cloud) findCollection(path string) *collection {
	for _, col := range c.collections {
		if col.Path == path {
			return col
		}
	}
	return nil
}

// stamp adds what Neutron adds to a created object.
func (col *collection) stamp(o map[string]any, project string) {
	if o["id"] == nil {
		o["id"] = newUUID()
	}
	if o["project_id"] == nil {
		o["project_id"] = project
	}
	o["tenant_id"] = o["project_id"]
	now := time.Now().UTC().Format(time.RFC3339)
	o["created_at"], o["updated_at"], o["revision_number"] = now, now, 0
	if col.Tags && o["tags"] == nil {
		o["tags"] = []any{}
	}
}

// serveCollection answers a request under a registered collection; it returns false when the
// path is not one.
func (c *Cloud) serveCollection(w http.ResponseWriter, r *http.Request, t *token, seg []string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	col := c.findCollection("v2.0/" + seg[0])
	if col == nil {
		return false
	}
	if t.system {
		// As for Neutron's own resources: a system-scoped token sees nothing and writes nothing.
		if r.Method == http.MethodGet && len(seg) == 1 {
			writeJSON(w, http.StatusOK, map[string]any{col.Plural: []any{}})
		} else {
			neutronError(w, http.StatusForbidden, "InvalidScope", "%s requires a scope of ['project'], request was made with system scope.", col.Key)
		}
		return true
	}
	visible := func(o map[string]any) bool { return t.isAdmin() || o["project_id"] == t.projectID }
	if len(seg) == 1 {
		switch r.Method {
		case http.MethodGet:
			col.list(w, r, visible)
		case http.MethodPost:
			body, ok := col.body(w, r, true)
			if !ok {
				return true
			}
			project := t.projectID
			if p, _ := body["project_id"].(string); p != "" && t.isAdmin() {
				project = p
			}
			delete(body, "project_id")
			delete(body, "tenant_id")
			col.stamp(body, project)
			col.objects = append(col.objects, body)
			writeJSON(w, http.StatusCreated, map[string]any{col.Key: body})
		default:
			methodNotAllowed(w)
		}
		return true
	}
	var obj map[string]any
	for _, o := range col.objects {
		if o["id"] == seg[1] && visible(o) {
			obj = o
		}
	}
	if obj == nil {
		neutronError(w, http.StatusNotFound, "HTTPNotFound", "%s %s could not be found.", col.Key, seg[1])
		return true
	}
	if len(seg) > 2 {
		if !col.Tags || seg[2] != "tags" || len(seg) > 4 {
			neutronError(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
			return true
		}
		col.tags(w, r, obj, seg[3:])
		return true
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{col.Key: project(obj, r.URL.Query()["fields"])})
	case http.MethodPut:
		body, ok := col.body(w, r, false)
		if !ok || !readOnly(w, body, "id", "project_id", "tenant_id") {
			return true
		}
		maps.Copy(obj, body)
		obj["updated_at"] = time.Now().UTC().Format(time.RFC3339)
		obj["revision_number"] = revision(obj) + 1
		writeJSON(w, http.StatusOK, map[string]any{col.Key: obj})
	case http.MethodDelete:
		col.objects = slices.DeleteFunc(col.objects, func(o map[string]any) bool { return o["id"] == obj["id"] })
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w)
	}
	return true
}

func revision(o map[string]any) int {
	switch n := o["revision_number"].(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

// body reads {"<key>": {...}} and checks its attributes.
func (col *collection) body(w http.ResponseWriter, r *http.Request, create bool) (map[string]any, bool) {
	var env map[string]any
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Malformed request body")
		return nil, false
	}
	body, ok := env[col.Key].(map[string]any)
	if !ok || len(env) != 1 {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Resource body required: want {%q: {...}}", col.Key)
		return nil, false
	}
	var unknown []string
	for k := range body {
		switch {
		case k == "tags" && !col.Tags:
			unknown = append(unknown, k)
		case k == "tags", len(col.Attributes) == 0, slices.Contains(col.Attributes, k):
		case create && (k == "project_id" || k == "tenant_id"):
		case !create && (k == "id" || k == "project_id" || k == "tenant_id"):
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Unrecognized attribute(s) '%s'", strings.Join(unknown, ", "))
		return nil, false
	}
	if tags, ok := body["tags"]; ok {
		if _, isList := tags.([]any); !isList {
			invalidInput(w, col.Key)
			return nil, false
		}
	}
	return body, true
}

// list answers GET on the collection with Neutron's filters.
func (col *collection) list(w http.ResponseWriter, r *http.Request, visible func(map[string]any) bool) {
	q := normaliseBoolQuery(r.URL.Query())
	tagFilters := map[string][]string{}
	for _, k := range []string{"tags", "tags-any", "not-tags", "not-tags-any"} {
		if vs, ok := q[k]; ok {
			if !col.Tags {
				neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "['%s'] is invalid attribute for filtering", k)
				return
			}
			for _, v := range vs {
				tagFilters[k] = append(tagFilters[k], strings.Split(v, ",")...)
			}
			delete(q, k)
		}
	}
	out := []map[string]any{}
	for _, o := range col.objects {
		if !visible(o) || !matchTags(o, tagFilters) {
			continue
		}
		keep := true
		for k, vs := range q {
			switch k {
			case "fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse":
				continue
			}
			if !slices.Contains(vs, scalarString(o[k])) {
				keep = false
			}
		}
		if keep {
			out = append(out, project(o, q["fields"]))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{col.Plural: out})
}

func tagsOf(o map[string]any) []string {
	var out []string
	list, _ := o["tags"].([]any)
	for _, t := range list {
		if s, ok := t.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// matchTags applies Neutron's tag filters: tags (all of), tags-any (one of), not-tags (not all
// of), not-tags-any (none of).
func matchTags(o map[string]any, f map[string][]string) bool {
	have := tagsOf(o)
	count := func(want []string) int {
		n := 0
		for _, t := range want {
			if slices.Contains(have, t) {
				n++
			}
		}
		return n
	}
	if want, ok := f["tags"]; ok && count(want) != len(want) {
		return false
	}
	if want, ok := f["tags-any"]; ok && count(want) == 0 {
		return false
	}
	if want, ok := f["not-tags"]; ok && count(want) == len(want) {
		return false
	}
	if want, ok := f["not-tags-any"]; ok && count(want) > 0 {
		return false
	}
	return true
}

// tags serves /{id}/tags and /{id}/tags/{tag}.
func (col *collection) tags(w http.ResponseWriter, r *http.Request, obj map[string]any, rest []string) {
	set := func(tags []string) {
		list := []any{}
		for _, t := range tags {
			list = append(list, t)
		}
		obj["tags"] = list
		obj["revision_number"] = revision(obj) + 1
	}
	have := tagsOf(obj)
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, map[string]any{"tags": have})
		case http.MethodPut:
			var body struct {
				Tags []string `json:"tags"`
			}
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Tags == nil {
				neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid tags body")
				return
			}
			set(body.Tags)
			writeJSON(w, http.StatusOK, map[string]any{"tags": body.Tags})
		case http.MethodDelete:
			set(nil)
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w)
		}
		return
	}
	tag := rest[0]
	switch r.Method {
	case http.MethodGet:
		if !slices.Contains(have, tag) {
			neutronError(w, http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", tag)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPut:
		if !slices.Contains(have, tag) {
			set(append(have, tag))
		}
		w.WriteHeader(http.StatusCreated)
	case http.MethodDelete:
		if !slices.Contains(have, tag) {
			neutronError(w, http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", tag)
			return
		}
		set(slices.DeleteFunc(have, func(t string) bool { return t == tag }))
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w)
	}
}

// cloneJSON deep-copies a JSON object, so the caller's copy and the stored one stay apart.
func cloneJSON(o map[string]any) map[string]any {
	b, err := json.Marshal(o)
	if err != nil {
		panic(errors.Join(errors.New("fakecloud: object is not JSON"), err))
	}
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
