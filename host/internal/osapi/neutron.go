package osapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// neutron is Neutron's API (neutron.api.v2.base with neutron_lib.api.attributes):
//
//   - POST {"<key>": {...}}: an attribute the resource does not have is "Unrecognized
//     attribute(s)"; a read-only one is "Attribute 'x' not allowed in POST"; a missing required
//     one "Failed to parse request. Required attribute 'x' not specified"; then each value is
//     converted (booleans and integers, as Python converts them: InvalidInput) and validated
//     (HTTPBadRequest "Invalid input for x. Reason: ..."). 201 with the object.
//   - PUT {"<key>": {...}}: unknown attributes as above, then "Cannot update read-only
//     attribute x" for what cannot change; the revision number counts up.
//   - GET lists filter by the filterable attributes only (anything else is "['x'] is invalid
//     attribute for filtering"), project with fields, page with limit and marker (with a
//     <plural>_links next link) and sort by id unless sort_key says otherwise.
//   - A project sees its own objects and shared ones; an admin sees all; a system-scoped token
//     sees none and may not write.
//   - Tags (standard-attr tags) are read-only in bodies, set through /{id}/tags and
//     /{id}/tags/{tag}, returned sorted, and filter lists with tags, tags-any, not-tags and
//     not-tags-any.
type neutron struct{}

// neutronTagMax and neutronMaxTags are the tag extension's limits.
const (
	neutronTagMax  = 255
	neutronMaxTags = 50
)

// neutronTime is how Neutron prints timestamps.
const neutronTime = "2006-01-02T15:04:05Z"

func nerr(status int, typ, format string, args ...any) Response {
	return Response{Status: status, Body: map[string]any{"NeutronError": map[string]any{
		"type": typ, "message": fmt.Sprintf(format, args...), "detail": ""}}}
}

func badRequest(format string, args ...any) Response {
	return nerr(http.StatusBadRequest, "HTTPBadRequest", format, args...)
}

func invalidInput(msg string) Response {
	return nerr(http.StatusBadRequest, "InvalidInput", "Invalid input for operation: %s.", msg)
}

func (neutron) notFound(r *Resource, id string) Response {
	return nerr(http.StatusNotFound, r.NotFoundType, r.NotFound, id)
}

func (n neutron) serve(s *Store, r *Resource, req Request, rest []string) Response {
	if req.Caller.System {
		// Neutron 2025.1 answers a system-scoped token with nothing to see and no right to write.
		switch {
		case req.Method == http.MethodGet && len(rest) == 0:
			return Response{Status: http.StatusOK, Body: map[string]any{r.Plural: []any{}}}
		case req.Method == http.MethodGet:
			return nerr(http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
		}
		verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodDelete: "delete"}[req.Method]
		return nerr(http.StatusForbidden, "InvalidScope", "rule:%s_%s requires a scope of ['project'], request was made with system scope.", verb, r.Key)
	}
	if len(rest) == 0 {
		switch req.Method {
		case http.MethodGet:
			return n.list(s, r, req)
		case http.MethodPost:
			return n.create(s, r, req)
		}
		return n.notAllowed()
	}
	obj := s.find(r, rest[0])
	if obj == nil || !n.visible(obj, req.Caller) {
		return n.notFound(r, rest[0])
	}
	if len(rest) > 1 {
		if rest[1] != "tags" || r.Tags != TagsNeutron || len(rest) > 3 {
			return nerr(http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
		}
		return n.tags(s, r, obj, req, rest[2:])
	}
	switch req.Method {
	case http.MethodGet:
		return Response{Status: http.StatusOK, Body: map[string]any{r.Key: n.show(r, obj, req.Query["fields"], req.Caller)}}
	case http.MethodPut:
		return n.update(s, r, obj, req)
	case http.MethodDelete:
		if !req.Caller.Admin && obj["project_id"] != req.Caller.ProjectID {
			return n.notFound(r, rest[0])
		}
		s.remove(r, rest[0])
		return Response{Status: http.StatusNoContent}
	}
	return n.notAllowed()
}

// notAllowed is Neutron's answer to a method a path does not route.
func (neutron) notAllowed() Response {
	return nerr(http.StatusMethodNotAllowed, "HTTPMethodNotAllowed",
		"The server could not comply with the request since it is either malformed or otherwise incorrect.")
}

func (neutron) visible(obj map[string]any, c Caller) bool {
	return c.Admin || obj["project_id"] == c.ProjectID || obj["shared"] == true
}

// show is what Neutron answers for an object, projected on fields when any are asked for.
func (neutron) show(r *Resource, obj map[string]any, fields []string, c Caller) map[string]any {
	out := map[string]any{}
	for _, f := range r.Fields {
		if f.AdminOnly && !c.Admin {
			continue
		}
		if v, ok := obj[f.Name]; ok && (len(fields) == 0 || slices.Contains(fields, f.Name)) {
			out[f.Name] = v
		}
	}
	if tags, ok := out["tags"].([]any); ok {
		out["tags"] = sortedStrings(tags)
	}
	if len(fields) > 0 && r.ProjectKey == "project_id" {
		// The owner is fetched for the policy check whatever fields asks for, and the name the
		// map does not use is not dropped again.
		out["tenant_id"] = obj["tenant_id"]
	}
	return out
}

func sortedStrings(list []any) []any {
	out := slices.Clone(list)
	slices.SortFunc(out, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
	return out
}

// body reads {"<key>": {...}}.
func (neutron) body(r *Resource, raw []byte) (map[string]any, *Response) {
	v, err := decodeJSON(raw)
	if err != nil {
		resp := badRequest("Malformed request body")
		return nil, &resp
	}
	env, _ := v.(map[string]any)
	inner, ok := env[r.Key]
	if !ok {
		resp := badRequest("Unable to find '%s' in request body", r.Key)
		return nil, &resp
	}
	body, ok := inner.(map[string]any)
	if !ok {
		resp := badRequest("Resource body required")
		return nil, &resp
	}
	return body, nil
}

// unknown lists, sorted, the attributes of body the resource does not have.
func unknown(r *Resource, body map[string]any) []string {
	var out []string
	for k := range body {
		if _, ok := r.Field(k); !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// owner gives a body both owner attributes when it names one, as populate_project_info does.
func owner(body map[string]any) {
	p, hasP := body["project_id"]
	t, hasT := body["tenant_id"]
	switch {
	case hasP && !hasT:
		body["tenant_id"] = p
	case hasT && !hasP:
		body["project_id"] = t
	}
}

func (n neutron) create(s *Store, r *Resource, req Request) Response {
	body, bad := n.body(r, req.Body)
	if bad != nil {
		return *bad
	}
	owner(body)
	if u := unknown(r, body); len(u) > 0 {
		return badRequest("Unrecognized attribute(s) '%s'", strings.Join(u, ", "))
	}
	for _, f := range r.Fields {
		_, given := body[f.Name]
		switch {
		case given && f.Create == No:
			return badRequest("Attribute '%s' not allowed in POST", f.Name)
		case !given && f.Create == Required:
			return badRequest("Failed to parse request. Required attribute '%s' not specified", f.Name)
		}
	}
	obj := map[string]any{}
	for _, f := range r.Fields {
		v, given := body[f.Name]
		if !given {
			continue
		}
		v, resp := n.convert(f, v)
		if resp != nil {
			return *resp
		}
		obj[f.Name] = v
	}
	if r.checkCreate != nil {
		if resp := r.checkCreate(obj, req.Caller); resp != nil {
			return *resp
		}
	}
	n.fill(s, r, obj, req.Caller)
	// Neutron may bump the revision while it finishes the object within the create (a security
	// group's default rules, a network's segment).
	obj["revision_number"] = 0
	if r.createdRevision != nil {
		obj["revision_number"] = r.createdRevision(obj)
	}
	s.insert(r, obj)
	out := n.show(r, obj, nil, req.Caller)
	for k, v := range r.CreatedOnly {
		out[k] = v
	}
	return Response{Status: http.StatusCreated, Body: map[string]any{r.Key: out}}
}

// fill adds what Neutron adds to a created object: defaults, the owner and the standard
// attributes.
func (n neutron) fill(s *Store, r *Resource, obj map[string]any, c Caller) {
	project := c.ProjectID
	for _, k := range []string{"project_id", "tenant_id"} {
		if p, ok := obj[k].(string); ok && p != "" && c.Admin {
			project = p
		}
	}
	now := s.opts.Now().UTC().Format(neutronTime)
	for _, f := range r.Fields {
		if _, ok := obj[f.Name]; ok {
			continue
		}
		switch f.Name {
		case "id":
			obj["id"] = uuid4()
		case "project_id", "tenant_id":
			obj[f.Name] = project
		case "created_at", "updated_at":
			obj[f.Name] = now
		case "revision_number":
			obj[f.Name] = 0
		default:
			obj[f.Name] = cloneJSON(f.Default)
		}
	}
	obj["project_id"], obj["tenant_id"] = project, project
	if r.Name == "security-groups" {
		obj["security_group_rules"] = defaultEgressRules(obj, now)
	}
}

// defaultEgressRules are the two rules Neutron gives a new security group: egress to anywhere
// over IPv4 and IPv6.
func defaultEgressRules(sg map[string]any, now string) []any {
	var rules []any
	for _, eth := range []string{"IPv6", "IPv4"} {
		rules = append(rules, map[string]any{"id": uuid4(), "project_id": sg["project_id"], "tenant_id": sg["project_id"],
			"security_group_id": sg["id"], "ethertype": eth, "direction": "egress", "protocol": nil,
			"port_range_min": nil, "port_range_max": nil, "remote_ip_prefix": nil, "remote_address_group_id": nil,
			"normalized_cidr": nil, "remote_group_id": nil, "standard_attr_id": 0, "belongs_to_default_sg": false,
			"description": nil, "tags": []any{}, "created_at": now, "updated_at": now, "revision_number": 0})
	}
	return rules
}

func (n neutron) update(s *Store, r *Resource, obj map[string]any, req Request) Response {
	if !req.Caller.Admin && obj["project_id"] != req.Caller.ProjectID {
		return n.notFound(r, fmt.Sprint(obj["id"]))
	}
	body, bad := n.body(r, req.Body)
	if bad != nil {
		return *bad
	}
	owner(body)
	if u := unknown(r, body); len(u) > 0 {
		return badRequest("Unrecognized attribute(s) '%s'", strings.Join(u, ", "))
	}
	for _, f := range r.Fields {
		if _, given := body[f.Name]; given && f.Update == No {
			return badRequest("Cannot update read-only attribute %s", f.Name)
		}
	}
	changes := map[string]any{}
	for _, f := range r.Fields {
		v, given := body[f.Name]
		if !given {
			continue
		}
		v, resp := n.convert(f, v)
		if resp != nil {
			return *resp
		}
		changes[f.Name] = v
	}
	if r.checkUpdate != nil {
		if resp := r.checkUpdate(obj, changes, req.Caller); resp != nil {
			return *resp
		}
	}
	changed := false
	for k, v := range changes {
		changed = changed || pyRepr(obj[k]) != pyRepr(v)
		obj[k] = v
	}
	if changed {
		n.touch(s, obj)
	}
	return Response{Status: http.StatusOK, Body: map[string]any{r.Key: n.show(r, obj, nil, req.Caller)}}
}

// touch records a change: the standard attributes' revision and update time.
func (neutron) touch(s *Store, obj map[string]any) {
	if rev, ok := obj["revision_number"]; ok {
		n, _ := ordinal(rev)
		if i, isInt := rev.(int); isInt {
			n = i
		}
		obj["revision_number"] = n + 1
		obj["updated_at"] = s.opts.Now().UTC().Format(neutronTime)
	}
}

// convert converts and validates one attribute's value as Neutron does.
func (neutron) convert(f Field, v any) (any, *Response) {
	fail := func(reason string) (any, *Response) {
		resp := badRequest("Invalid input for %s. Reason: %s.", f.Name, reason)
		return nil, &resp
	}
	switch f.Type {
	case Boolean:
		b, ok := pyBool(v)
		if !ok {
			resp := invalidInput(fmt.Sprintf("'%s' cannot be converted to boolean", pyStr(v)))
			return nil, &resp
		}
		v = b
	case Integer:
		i, ok := pyInt(v)
		if !ok {
			resp := invalidInput(fmt.Sprintf("'%s' is not an integer", pyStr(v)))
			return nil, &resp
		}
		v = i
	case String:
		if v == nil && f.Nullable {
			return nil, nil
		}
		s, ok := v.(string)
		if !ok {
			return fail(fmt.Sprintf("'%s' is not a valid string", pyStr(v)))
		}
		if f.MaxLen > 0 && len([]rune(s)) > f.MaxLen {
			return fail(fmt.Sprintf("'%s' exceeds maximum length of %d", s, f.MaxLen))
		}
	case UUID:
		s, ok := v.(string)
		if !ok || !isUUID(s) {
			return fail(fmt.Sprintf("'%s' is not a valid UUID", pyStr(v)))
		}
	case Strings:
		if _, ok := v.([]any); !ok {
			return fail(fmt.Sprintf("'%s' is not a list", pyStr(v)))
		}
	case CIDRs:
		if v == nil {
			return []any{}, nil
		}
		list, ok := v.([]any)
		if !ok {
			return fail(fmt.Sprintf("'%s' is not a list", pyStr(v)))
		}
		if d := duplicates(list); len(d) > 0 {
			return fail(fmt.Sprintf("Duplicate items in the list: '%s'", strings.Join(d, ", ")))
		}
		for _, it := range list {
			if !isSubnet(it) {
				return fail(fmt.Sprintf("'%s' is not a valid IP subnet", pyStr(it)))
			}
		}
	}
	if len(f.Enum) > 0 && !slices.ContainsFunc(f.Enum, func(e any) bool { return sameValue(e, v) }) {
		return fail(fmt.Sprintf("%s is not in valid_values", pyStr(v)))
	}
	return v, nil
}

// sameValue compares a rule's value (Go ints) with a converted one.
func sameValue(a, b any) bool { return pyRepr(a) == pyRepr(b) }

// pyBool is oslo's bool_from_string(strict=True): bools, and the strings (and numbers as text)
// 1/t/true/on/y/yes and 0/f/false/off/n/no in any case.
func pyBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case nil:
		return false, false
	}
	switch strings.ToLower(strings.TrimSpace(pyStr(v))) {
	case "1", "t", "true", "on", "y", "yes":
		return true, true
	case "0", "f", "false", "off", "n", "no":
		return false, true
	}
	return false, false
}

// pyInt is Python's int(): numbers (truncated), booleans and integer text.
func pyInt(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		return int(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(strings.ReplaceAll(x, "_", "")))
		return i, err == nil
	}
	return 0, false
}

func isUUID(s string) bool {
	h := strings.ReplaceAll(strings.TrimPrefix(strings.Trim(strings.ToLower(s), "{}"), "urn:uuid:"), "-", "")
	if len(h) != 32 {
		return false
	}
	for _, c := range h {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// isSubnet is validate_subnet: an address with a prefix length, an IPv4 one in canonical form.
func isSubnet(v any) bool {
	s, ok := v.(string)
	if !ok || !strings.Contains(s, "/") || strings.TrimSpace(s) != s {
		return false
	}
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		return false
	}
	if ip.To4() != nil {
		ones, _ := n.Mask.Size()
		return fmt.Sprintf("%s/%d", ip, ones) == s
	}
	return true
}

func duplicates(list []any) []string {
	seen := map[string]bool{}
	var out []string
	for _, it := range list {
		k := pyStr(it)
		if seen[k] && !slices.Contains(out, k) {
			out = append(out, k)
		}
		seen[k] = true
	}
	return out
}

// listControls are the query parameters that are not filters.
var listControls = []string{"fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse"}

var tagFilters = []string{"tags", "tags-any", "not-tags", "not-tags-any"}

func (n neutron) list(s *Store, r *Resource, req Request) Response {
	q := req.Query
	var bad []string
	for k := range q {
		if slices.Contains(listControls, k) {
			continue
		}
		if slices.Contains(tagFilters, k) && r.Tags == TagsNeutron {
			continue
		}
		if f, ok := r.Field(k); !ok || !f.Filter {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return badRequest("%s is invalid attribute for filtering", pyList(bad))
	}
	items := []map[string]any{}
	for _, o := range s.list(r) {
		if n.visible(o, req.Caller) && n.matches(r, o, q) {
			items = append(items, o)
		}
	}
	key, desc := "id", false
	if k := q.Get("sort_key"); k != "" {
		key = k
		desc = q.Get("sort_dir") == "desc"
	}
	slices.SortStableFunc(items, func(a, b map[string]any) int {
		c := strings.Compare(pyStr(a[key]), pyStr(b[key]))
		if desc {
			return -c
		}
		return c
	})
	body := map[string]any{}
	if m := q.Get("marker"); m != "" {
		if i := slices.IndexFunc(items, func(o map[string]any) bool { return o["id"] == m }); i >= 0 {
			items = items[i+1:]
		}
	}
	if l, err := strconv.Atoi(q.Get("limit")); err == nil && l > 0 {
		if len(items) > l {
			items = items[:l]
		}
		body[r.Plural+"_links"] = n.links(s, r, req, items, l)
	}
	out := []any{}
	for _, o := range items {
		out = append(out, n.show(r, o, q["fields"], req.Caller))
	}
	body[r.Plural] = out
	return Response{Status: http.StatusOK, Body: body}
}

// matches applies the filters of q: exact values (several OR-ed), converted as the attribute
// is, and the tag filters.
func (n neutron) matches(r *Resource, o map[string]any, q map[string][]string) bool {
	for k, vs := range q {
		if slices.Contains(listControls, k) {
			continue
		}
		if slices.Contains(tagFilters, k) {
			if !matchTags(o, k, vs) {
				return false
			}
			continue
		}
		f, _ := r.Field(k)
		if !slices.ContainsFunc(vs, func(v string) bool {
			conv, bad := n.convert(f, v)
			if bad != nil {
				return pyStr(o[k]) == v
			}
			return pyStr(conv) == pyStr(o[k])
		}) {
			return false
		}
	}
	return true
}

// matchTags is Neutron's tag filters: tags (all of), tags-any (one of), not-tags (not all of),
// not-tags-any (none of); each value is a comma-separated list.
func matchTags(o map[string]any, filter string, values []string) bool {
	var want []string
	for _, v := range values {
		want = append(want, strings.Split(v, ",")...)
	}
	have, _ := o["tags"].([]any)
	n := 0
	for _, t := range want {
		if slices.Contains(have, any(t)) {
			n++
		}
	}
	switch filter {
	case "tags":
		return n == len(want)
	case "tags-any":
		return n > 0
	case "not-tags":
		return n < len(want)
	}
	return n == 0
}

// tags serves /{id}/tags and /{id}/tags/{tag}.
func (n neutron) tags(s *Store, r *Resource, obj map[string]any, req Request, rest []string) Response {
	have, _ := obj["tags"].([]any)
	set := func(tags []any) {
		obj["tags"] = tags
		n.touch(s, obj)
	}
	if len(rest) == 0 {
		switch req.Method {
		case http.MethodGet:
			return Response{Status: http.StatusOK, Body: map[string]any{"tags": sortedStrings(have)}}
		case http.MethodPut:
			v, err := decodeJSON(req.Body)
			env, _ := v.(map[string]any)
			list, ok := env["tags"].([]any)
			if err != nil || !ok {
				return invalidInput("Invalid tags body")
			}
			if msg := validTags(list); msg != "" {
				return invalidInput(msg)
			}
			if len(list) > neutronMaxTags {
				return tooManyTags(r)
			}
			set(list)
			return Response{Status: http.StatusOK, Body: map[string]any{"tags": list}}
		case http.MethodDelete:
			set([]any{})
			return Response{Status: http.StatusNoContent}
		}
		return n.notAllowed()
	}
	tag := rest[0]
	switch req.Method {
	case http.MethodGet:
		if !slices.Contains(have, any(tag)) {
			return nerr(http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", tag)
		}
		return Response{Status: http.StatusNoContent}
	case http.MethodPut:
		if len([]rune(tag)) > neutronTagMax {
			return invalidInput(fmt.Sprintf("'%s' exceeds maximum length of %d", tag, neutronTagMax))
		}
		if !slices.Contains(have, any(tag)) {
			if len(have) >= neutronMaxTags {
				return tooManyTags(r)
			}
			set(append(slices.Clone(have), tag))
		}
		return Response{Status: http.StatusCreated, Null: true}
	case http.MethodDelete:
		if !slices.Contains(have, any(tag)) {
			return nerr(http.StatusNotFound, "TagNotFound", "Tag %s could not be found.", tag)
		}
		set(slices.DeleteFunc(slices.Clone(have), func(t any) bool { return t == tag }))
		return Response{Status: http.StatusNoContent}
	}
	return n.notAllowed()
}

func tooManyTags(r *Resource) Response {
	return nerr(http.StatusBadRequest, "BadRequest", "Bad %s request: The number of tags exceed the per-resource limit of %d.",
		r.Plural, neutronMaxTags)
}

// validTags is validate_list_of_unique_strings with the tag length.
func validTags(list []any) string {
	if d := duplicates(list); len(d) > 0 {
		return fmt.Sprintf("Duplicate items in the list: '%s'", strings.Join(d, ", "))
	}
	for _, t := range list {
		s, ok := t.(string)
		if !ok {
			return fmt.Sprintf("'%s' is not a valid string", pyStr(t))
		}
		if len([]rune(s)) > neutronTagMax {
			return fmt.Sprintf("'%s' exceeds maximum length of %d", s, neutronTagMax)
		}
	}
	return ""
}

// links are Neutron's pagination links (neutron.api.api_common.get_pagination_links): next,
// unless a page came back short, and previous, each the request's query with the page's marker.
func (neutron) links(s *Store, r *Resource, req Request, items []map[string]any, limit int) []any {
	href := func(marker any, reverse bool) string {
		var pairs []string
		for _, kv := range strings.Split(encodeQuery(req), "&") {
			if k, _, _ := strings.Cut(kv, "="); kv != "" && k != "marker" && k != "page_reverse" {
				pairs = append(pairs, kv)
			}
		}
		if marker != nil {
			pairs = append(pairs, "marker="+url.QueryEscape(fmt.Sprint(marker)))
		}
		if reverse {
			pairs = append(pairs, "page_reverse=True")
		}
		return s.opts.URL(r.Service) + "/" + r.Path + "?" + strings.Join(pairs, "&")
	}
	var first, last any
	if len(items) > 0 {
		first, last = items[0]["id"], items[len(items)-1]["id"]
	}
	var out []any
	if len(items) >= limit {
		out = append(out, map[string]any{"rel": "next", "href": href(last, false)})
	}
	return append(out, map[string]any{"rel": "previous", "href": href(first, true)})
}
