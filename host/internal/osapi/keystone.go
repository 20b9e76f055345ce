package osapi

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// keystone is Keystone's API (keystone 27, Flask):
//
//   - POST {"<key>": {...}} is checked against the resource's JSON schema, first error first, as
//     "Invalid input for field/attribute <last path element>. Value: <value>. <jsonschema's
//     message>"; then the writer must be an admin (403 "You are not authorized to perform the
//     requested action: identity:create_<x>."); references must exist; names are unique (409);
//     201 with the object and its links. Keys the schema does not name are kept as extras
//     where the resource allows them.
//   - PATCH updates (PUT is 405); a field fixed at creation has its own refusal.
//   - GET needs an admin (a member reads only its own project); lists filter by the filter
//     fields, page with limit and marker ("truncated" and a next link once a page is full) and
//     come sorted by id; the answer links to itself with the query as sent.
//   - Tags are sorted in every answer but that of the write that set them.
type keystone struct{}

func kerr(status int, title, format string, args ...any) Response {
	return Response{Status: status, Body: map[string]any{"error": map[string]any{
		"code": status, "title": title, "message": fmt.Sprintf(format, args...)}}}
}

// keystone405 is Flask's answer to a method a route does not have.
var keystone405 = Response{Status: http.StatusMethodNotAllowed,
	Body: map[string]any{"message": "The method is not allowed for the requested URL."}}

// keystone404Page is Flask's answer to a path no route serves.
var keystone404Page = Response{Status: http.StatusNotFound, Text: "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n" +
	"<h1>Not Found</h1>\n<p>The requested URL was not found on the server. If you entered the URL manually please check your " +
	"spelling and try again.</p>\n"}

// keystone500 is the WSGI server's page when Keystone fails unexpectedly.
var keystone500 = Response{Status: http.StatusInternalServerError, Text: "A server error occurred.  Please contact the administrator."}

func (keystone) notFound(r *Resource, id string) Response {
	return kerr(http.StatusNotFound, "Not Found", r.NotFound, id)
}

func (keystone) forbidden(action string) Response {
	return kerr(http.StatusForbidden, "Forbidden", "You are not authorized to perform the requested action: identity:%s.", action)
}

// schemaFailure words a schema error as Keystone's request validator does.
func schemaFailure(e schemaError) Response {
	if len(e.path) == 0 {
		return badRequestK(e.message)
	}
	return badRequestK(fmt.Sprintf("Invalid input for field/attribute %s. Value: %s. %s", e.path[len(e.path)-1], pyStr(e.instance), e.message))
}

func (k keystone) serve(s *Store, r *Resource, req Request, rest []string) Response {
	if len(rest) == 0 {
		switch req.Method {
		case http.MethodGet:
			return k.list(s, r, req)
		case http.MethodPost:
			return k.create(s, r, req)
		}
		return keystone405
	}
	obj := s.find(r, rest[0])
	if len(rest) > 1 {
		if rest[1] != "tags" || !r.keystone.tags || len(rest) > 3 {
			return keystone404Page
		}
		if !req.Caller.Admin {
			return k.forbidden("get_" + r.PolicyName + "_tags")
		}
		if obj == nil {
			return k.notFound(r, rest[0])
		}
		return k.tags(s, r, obj, req, rest[2:])
	}
	switch req.Method {
	case http.MethodGet:
		if !req.Caller.Admin && !(r.keystone.readOwn && rest[0] == req.Caller.ProjectID) {
			return k.forbidden("get_" + r.PolicyName)
		}
		if obj == nil {
			return k.notFound(r, rest[0])
		}
		return k.answer(s, r, http.StatusOK, obj, true, false)
	case http.MethodPatch:
		return k.update(s, r, obj, rest[0], req)
	case http.MethodDelete:
		if r.AdminOnly && !req.Caller.Admin {
			return k.forbidden("delete_" + r.PolicyName)
		}
		if obj == nil {
			return k.notFound(r, rest[0])
		}
		if r.DeleteEnabled != "" && obj["enabled"] == true {
			return kerr(http.StatusForbidden, "Forbidden", "%s", r.DeleteEnabled)
		}
		s.remove(r, rest[0])
		return Response{Status: http.StatusNoContent}
	}
	return keystone405
}

// show is an object as Keystone answers it, with its links; sorted puts its tags in order.
func (keystone) show(s *Store, r *Resource, obj map[string]any, sorted bool) map[string]any {
	out := cloneJSON(obj)
	if tags, ok := out["tags"].([]any); ok && sorted {
		out["tags"] = sortedStrings(tags)
	}
	out["links"] = map[string]any{"self": s.opts.URL(Identity) + "/" + r.Path + "/" + fmt.Sprint(obj["id"])}
	return out
}

// answer is the answer showing one object, or the failure of Keystone's check of its answer.
func (k keystone) answer(s *Store, r *Resource, status int, obj map[string]any, sorted, update bool) Response {
	out := k.show(s, r, obj, sorted)
	if bad := k.strict(r, out, r.Key); bad != nil {
		return *bad
	}
	if update && r.keystone.extraInUpdate {
		extra := map[string]any{}
		for key, v := range obj {
			if _, known := r.Field(key); !known {
				extra[key] = v
			}
		}
		out["extra"] = extra
	}
	return Response{Status: status, Body: map[string]any{r.Key: out}}
}

// strict is Keystone 27's check of a domain answer against a schema without extras: an object
// that holds one fails it, shown at where (the body key, or the item's index in a list).
func (keystone) strict(r *Resource, shown map[string]any, where string) *Response {
	order := r.keystone.strictAnswer
	if order == nil {
		return nil
	}
	var extra []string
	for key := range shown {
		if !slices.Contains(order, key) {
			extra = append(extra, key)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	var parts []string
	for _, key := range append(slices.Clone(extra), order...) {
		if v, ok := shown[key]; ok {
			parts = append(parts, pyQuote(key)+": "+pyRepr(v))
		}
	}
	resp := badRequestK(fmt.Sprintf("Invalid input for field/attribute %s. Value: {%s}. %s", where, strings.Join(parts, ", "),
		additionalProperties(extra)))
	return &resp
}

// schemaFields are the properties of the resource's create or update schema, in its order.
func schemaFields(r *Resource, create bool) []Field {
	var out []Field
	for _, f := range r.Fields {
		if create && f.Create != No || !create && f.Update != No {
			out = append(out, f)
		}
	}
	return out
}

// validate checks a body against the resource's schema, as Keystone's validator reports it.
func (keystone) validate(r *Resource, raw []byte, create bool) (map[string]any, *Response) {
	fail := func(e schemaError) *Response {
		resp := schemaFailure(e)
		return &resp
	}
	v, err := decodeJSON(raw)
	if err != nil {
		resp := badRequestK("Malformed request body")
		return nil, &resp
	}
	env, ok := v.(map[string]any)
	if !ok {
		return nil, fail(schemaError{instance: v, message: fmt.Sprintf("%s is not of type 'object'", pyRepr(v))})
	}
	inner, ok := env[r.Key]
	if !ok {
		return nil, fail(schemaError{instance: v, message: fmt.Sprintf("%s is a required property", pyQuote(r.Key))})
	}
	body, ok := inner.(map[string]any)
	path := []string{r.Key}
	if !ok {
		return nil, fail(schemaError{path: path, instance: inner, message: fmt.Sprintf("%s is not of type 'object'", pyRepr(inner))})
	}
	fields := schemaFields(r, create)
	for _, f := range fields {
		if fv, ok := body[f.Name]; ok {
			if e := f.check(fv, append(slices.Clone(path), f.Name)); e != nil {
				return nil, fail(*e)
			}
		}
	}
	for _, f := range fields {
		if _, ok := body[f.Name]; create && f.Create == Required && !ok {
			return nil, fail(schemaError{path: path, instance: body, message: fmt.Sprintf("%s is a required property", pyQuote(f.Name))})
		}
	}
	if !create && len(body) == 0 && !r.keystone.emptyUpdate {
		return nil, fail(schemaError{path: path, instance: body, message: "{} does not have enough properties"})
	}
	if !r.Extra {
		var extra []string
		for key := range body {
			if !slices.ContainsFunc(fields, func(f Field) bool { return f.Name == key }) {
				extra = append(extra, key)
			}
		}
		if len(extra) > 0 {
			return nil, fail(schemaError{path: path, instance: body, message: additionalProperties(extra)})
		}
	}
	return body, nil
}

func (k keystone) create(s *Store, r *Resource, req Request) Response {
	body, bad := k.validate(r, req.Body, true)
	if bad != nil {
		return *bad
	}
	if r.AdminOnly && !req.Caller.Admin {
		return k.forbidden("create_" + r.PolicyName)
	}
	obj := cloneJSON(body)
	delete(obj, "id")
	if resp := k.booleans(r, obj); resp != nil {
		return *resp
	}
	k.fill(s, r, obj, req.Caller)
	if resp := k.references(s, r, obj); resp != nil {
		return *resp
	}
	if s.taken(r, obj) {
		return kerr(http.StatusConflict, "Conflict", "%s", r.keystone.conflict(obj, true))
	}
	s.insert(r, obj)
	return k.answer(s, r, http.StatusCreated, obj, false, false)
}

// booleans stores Keystone's string booleans as its database layer can: only real booleans
// (and null for a nullable field); anything else the schema let through fails in the server.
func (keystone) booleans(r *Resource, obj map[string]any) *Response {
	for _, f := range r.Fields {
		if v, ok := obj[f.Name]; ok && f.Type == Boolean {
			if _, isBool := v.(bool); !isBool && v != nil {
				return &keystone500
			}
		}
	}
	return nil
}

// fill adds the defaults Keystone stores for what a create did not send.
func (keystone) fill(s *Store, r *Resource, obj map[string]any, c Caller) {
	if _, ok := obj["id"]; !ok {
		obj["id"] = hexID()
	}
	for _, f := range r.Fields {
		v, ok := obj[f.Name]
		switch {
		case f.Name == "id" || f.Omit:
		case !ok:
			obj[f.Name] = cloneJSON(f.Default)
		case v == nil && f.Name == "domain_id" && f.Default != nil:
			// A null domain is the token's domain.
			obj[f.Name] = f.Default
		}
	}
	if r.Name == "projects" && obj["parent_id"] == nil {
		// A project without a parent hangs under its domain.
		obj["parent_id"] = obj["domain_id"]
	}
}

// references checks that the ids a create names exist.
func (keystone) references(s *Store, r *Resource, obj map[string]any) *Response {
	if r.keystone.refStatus == 0 {
		return nil
	}
	for _, f := range r.Fields {
		id, ok := obj[f.Name].(string)
		if f.Ref == "" || !ok {
			continue
		}
		target := registry[f.Ref]
		if r.Name == "projects" && f.Name == "parent_id" && id == obj["domain_id"] {
			continue
		}
		if s.find(target, id) == nil {
			resp := kerr(r.keystone.refStatus, http.StatusText(r.keystone.refStatus), "Could not find %s: %s.", target.Key, id)
			return &resp
		}
	}
	return nil
}

// taken reports whether another object has obj's name within the scope of UniqueName.
func (s *Store) taken(r *Resource, obj map[string]any) bool {
	if r.UniqueName == nil {
		return false
	}
	for _, o := range s.list(r) {
		if o["id"] == obj["id"] || o["name"] != obj["name"] {
			continue
		}
		same := true
		for _, k := range r.UniqueName {
			same = same && pyStr(o[k]) == pyStr(obj[k])
		}
		if same {
			return true
		}
	}
	return false
}

func (k keystone) update(s *Store, r *Resource, obj map[string]any, id string, req Request) Response {
	body, bad := k.validate(r, req.Body, false)
	if bad != nil {
		return *bad
	}
	if r.AdminOnly && !req.Caller.Admin {
		return k.forbidden("update_" + r.PolicyName)
	}
	if obj == nil {
		return k.notFound(r, id)
	}
	for _, f := range r.Fields {
		if v, ok := body[f.Name]; ok && f.Update == No && f.Name != "id" && pyStr(v) != pyStr(obj[f.Name]) {
			if resp, ok := r.keystone.immutable[f.Name]; ok {
				return resp
			}
			return badRequestK(fmt.Sprintf("Update of `%s` is not allowed.", f.Name))
		}
	}
	next := cloneJSON(obj)
	for key, v := range body {
		if key != "id" {
			next[key] = v
		}
	}
	if resp := k.booleans(r, next); resp != nil {
		return *resp
	}
	if s.taken(r, next) {
		if r.keystone.renameFails {
			return keystone500
		}
		return kerr(http.StatusConflict, "Conflict", "%s", r.keystone.conflict(next, false))
	}
	maps.Copy(obj, next)
	return k.answer(s, r, http.StatusOK, obj, false, true)
}

// listFilters are the query parameters Keystone filters lists by.
func listFilters(r *Resource) []string {
	var out []string
	for _, f := range r.Fields {
		if f.Filter {
			out = append(out, f.Name)
		}
	}
	return out
}

func (k keystone) list(s *Store, r *Resource, req Request) Response {
	rules := r.keystone
	if !req.Caller.Admin {
		return k.forbidden("list_" + r.Plural)
	}
	if rules.query != nil {
		var extra []string
		for key := range req.Query {
			if !slices.Contains(rules.query, key) {
				extra = append(extra, key)
			}
		}
		if len(extra) > 0 {
			return badRequestK(additionalProperties(extra))
		}
	}
	for _, key := range rules.queryUUID {
		if vs, ok := req.Query[key]; ok && !isUUID(vs[len(vs)-1]) {
			v := vs[len(vs)-1]
			return badRequestK(fmt.Sprintf("Invalid input for field/attribute %s. Value: %s. %s is not a 'uuid'", key, v, pyQuote(v)))
		}
	}
	// Keystone's SQL lists come in primary-key order: by id.
	all := slices.SortedFunc(slices.Values(s.list(r)), func(a, b map[string]any) int {
		return strings.Compare(pyStr(a["id"]), pyStr(b["id"]))
	})
	if m := req.Query.Get("marker"); m != "" {
		all = slices.DeleteFunc(all, func(o map[string]any) bool { return pyStr(o["id"]) <= m })
	}
	items := []any{}
	for _, o := range all {
		if k.matches(r, o, req.Query) {
			items = append(items, o)
		}
	}
	self := s.opts.URL(Identity) + "/" + r.Path
	if raw := encodeQuery(req); raw != "" {
		self += "?" + raw
	}
	links := map[string]any{"next": nil, "self": self, "previous": nil}
	body := map[string]any{"links": links}
	var limit int
	if _, err := fmt.Sscan(req.Query.Get("limit"), &limit); err == nil && limit > 0 && len(items) >= limit {
		items = items[:limit]
		body["truncated"] = true
		last := items[len(items)-1].(map[string]any)["id"]
		next := self
		if !strings.Contains(next, "?") {
			next += "?"
		} else {
			next += "&"
		}
		links["next"] = next + "marker=" + fmt.Sprint(last)
	}
	shown := make([]any, len(items))
	for i, it := range items {
		o := k.show(s, r, it.(map[string]any), true)
		if bad := k.strict(r, o, fmt.Sprint(i)); bad != nil {
			return *bad
		}
		shown[i] = o
	}
	body[r.Plural] = shown
	return Response{Status: http.StatusOK, Body: body}
}

// matches applies a list's filters: the last value of each filter field, and the tag filters.
func (keystone) matches(r *Resource, o map[string]any, q map[string][]string) bool {
	for _, name := range listFilters(r) {
		vs, ok := q[name]
		if !ok {
			continue
		}
		f, _ := r.Field(name)
		want := vs[len(vs)-1]
		if f.Type == Boolean {
			b, _ := pyBool(want)
			if o[name] != b {
				return false
			}
		} else if pyStr(o[name]) != want {
			return false
		}
	}
	if _, ok := q["domain_id"]; !ok && r.keystone.globalByDefault && o["domain_id"] != nil {
		return false
	}
	if r.keystone.tagFilters {
		for _, t := range tagFilters {
			if vs, ok := q[t]; ok && !matchTags(o, t, vs) {
				return false
			}
		}
	}
	return true
}

// encodeQuery is the request's query as sent.
func encodeQuery(req Request) string {
	if req.RawQuery != "" {
		return req.RawQuery
	}
	return req.Query.Encode()
}

// Keystone checks the tags sub-resource's bodies with its older validator, whose message for an
// error at the top of the body is jsonschema's whole report: the schema and the value printed as
// Python's pprint does.
const (
	tagSchemaText  = "{'maxLength': 255,\n     'minLength': 1,\n     'pattern': '^[^,/]*$',\n     'type': 'string'}"
	tagsSchemaText = "{'items': {'maxLength': 255,\n               'minLength': 1,\n               'pattern': '^[^,/]*$',\n" +
		"               'type': 'string'},\n     'maxItems': 80,\n     'required': [],\n     'type': 'array',\n     'uniqueItems': True}"
)

// tagFailure words an error of the tags sub-resource.
func tagFailure(e schemaError, validator, schema string) Response {
	if len(e.path) > 0 {
		return schemaFailure(e)
	}
	return badRequestK(fmt.Sprintf("%s\n\nFailed validating %s in schema:\n    %s\n\nOn instance:\n    %s",
		e.message, pyQuote(validator), schema, pprint(e.instance, 4)))
}

// pprint is Python's pprint.pformat(v, width=72) for strings and lists of strings, with every
// line after the first indented by indent spaces.
func pprint(v any, indent int) string {
	rep := pyRepr(v)
	list, ok := v.([]any)
	if !ok || len(rep) <= 72 {
		return rep
	}
	parts := make([]string, len(list))
	for i, it := range list {
		parts[i] = pyRepr(it)
	}
	return "[" + strings.Join(parts, ",\n"+strings.Repeat(" ", indent+1)) + "]"
}

// tagValidator names the jsonschema keyword a tags error came from, for the report.
func tagValidator(msg string) string {
	switch {
	case strings.HasSuffix(msg, "has non-unique elements"):
		return "uniqueItems"
	case strings.HasSuffix(msg, "is too long"):
		return "maxItems"
	case strings.Contains(msg, "does not match"):
		return "pattern"
	case strings.Contains(msg, "is not of type"):
		return "type"
	}
	return "minLength"
}

// tags serves /{id}/tags and /{id}/tags/{tag}.
func (k keystone) tags(s *Store, r *Resource, obj map[string]any, req Request, rest []string) Response {
	have, _ := obj["tags"].([]any)
	tagsField, _ := r.Field("tags")
	links := map[string]any{"self": s.opts.URL(Identity) + "/v3"}
	if len(rest) == 0 {
		switch req.Method {
		case http.MethodGet:
			return Response{Status: http.StatusOK, Body: map[string]any{"tags": sortedStrings(have), "links": links}}
		case http.MethodPut:
			v, _ := decodeJSON(req.Body)
			env, _ := v.(map[string]any)
			list, ok := env["tags"]
			if !ok {
				return badRequestK("'tags' is a required property")
			}
			if e := tagsField.check(list, nil); e != nil {
				return tagFailure(*e, tagValidator(e.message), tagsSchemaText)
			}
			obj["tags"] = list
			return Response{Status: http.StatusOK, Body: map[string]any{"tags": list, "links": links}}
		case http.MethodDelete:
			obj["tags"] = []any{}
			return Response{Status: http.StatusNoContent}
		}
		return keystone405
	}
	tag := rest[0]
	missing := kerr(http.StatusNotFound, "Not Found", "Could not find %s tag: %s.", r.Key, tag)
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		if !slices.Contains(have, any(tag)) {
			return missing
		}
		return Response{Status: http.StatusNoContent}
	case http.MethodPut:
		if e := tagsField.Items.check(tag, nil); e != nil {
			return tagFailure(*e, tagValidator(e.message), tagSchemaText)
		}
		if !slices.Contains(have, any(tag)) {
			if len(have) >= keystoneMaxTags {
				return badRequestK(fmt.Sprintf("The number of tags is over the limit %d", keystoneMaxTags))
			}
			obj["tags"] = append(slices.Clone(have), tag)
		}
		return Response{Status: http.StatusCreated, Null: true}
	case http.MethodDelete:
		if !slices.Contains(have, any(tag)) {
			return missing
		}
		obj["tags"] = slices.DeleteFunc(slices.Clone(have), func(t any) bool { return t == tag })
		return Response{Status: http.StatusNoContent}
	}
	return keystone405
}

// seedKeystone stores what Keystone's bootstrap leaves: the default domain, the cloud's projects
// and the global roles.
func (s *Store) seedKeystone() {
	domains, projects, roles := registry["identity:domains"], registry["identity:projects"], registry["identity:roles"]
	s.insert(domains, map[string]any{"id": "default", "name": "Default", "description": "The default domain",
		"enabled": true, "tags": []any{}, "options": map[string]any{}})
	for _, p := range s.opts.Projects {
		s.insert(projects, map[string]any{"id": p.ID, "name": p.Name, "domain_id": "default", "description": p.Description,
			"enabled": true, "parent_id": "default", "is_domain": false, "tags": []any{}, "options": map[string]any{}})
	}
	for _, name := range []string{"admin", "member", "reader", "service"} {
		id := s.opts.Roles[name]
		if id == "" {
			id = hexID()
		}
		s.insert(roles, map[string]any{"id": id, "name": name, "domain_id": nil, "description": nil,
			"options": map[string]any{"immutable": true}})
	}
}
