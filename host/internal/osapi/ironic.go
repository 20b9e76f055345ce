package osapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ironic is Ironic's API (Ironic 29, pecan), as the real-parts tier's 2025.1 server answers:
//
//   - Every request names a microversion (X-OpenStack-Ironic-API-Version; the embedded cloud
//     resolves the header into Request.Microversion, none being 1.1); a collection below its
//     MinVersion is 404 for a GET and 405 for anything else.
//   - Bodies are the bare object. POST is checked against the resource's JSON schema and reported
//     as "Schema error for <runbook|template>: <jsonschema's best match>", then for repeated steps
//     and a bad uuid, then the policy (403 "Access was denied to the following resource:
//     <rule>"); 409 for a taken name or uuid; 201 with the object and its links.
//   - PATCH takes an RFC 6902 JSON Patch (add, replace, remove) on the fields the resource lets
//     change; a new root attribute is refused; the patched object is checked against the schema
//     again ("Schema error for patch: ..."). PUT is 405.
//   - An object is named by its uuid or its name. Lists show uuid and name unless detail=True or
//     fields says otherwise, come in creation order, page with limit and marker (a next link on
//     every full page) and filter by nothing else.
//   - Errors are {"error_message": "<JSON text of {faultcode, faultstring, debuginfo}>"}.
type ironic struct{}

// ironicRules are what one Ironic resource does its own way.
type ironicRules struct {
	// bodyName names the body in schema errors ("runbook", "template"); policy prefixes the
	// policy rules ("baremetal:runbook").
	bodyName, policy string
	// owned: the resource has an owner and public, with Ironic's runbook rules (a project-scoped
	// admin owns what it makes; only a system-scoped one makes public or changes the owner).
	owned bool
	// orderKey is the steps' order field: "order" (runbooks) or "priority" (deploy templates).
	orderKey string
	// notAllowed is the text of the answer below MinVersion.
	notAllowed string
	// patchable are the fields a patch may name.
	patchable []string
	// show are the fields shown besides uuid, the times, links and steps, in Ironic's order.
	show []string
	// conflict and uuidConflict are the 409s for a taken name and uuid (one %s).
	conflict, uuidConflict string
	// schema is the create schema, which a patched object is checked against too.
	schema *jsonSchema
}

// ironicVersion is an Ironic microversion.
type ironicVersion struct{ major, minor int }

func parseIronicVersion(s string) ironicVersion {
	if s == "" {
		return ironicVersion{1, 1}
	}
	maj, mnr, _ := strings.Cut(s, ".")
	a, _ := strconv.Atoi(maj)
	b, _ := strconv.Atoi(mnr)
	return ironicVersion{a, b}
}

// IronicAccepts reports whether the real-parts tier's Ironic accepts microversion mv ("" is
// 1.1): 1.1 to IronicVersion.
func IronicAccepts(mv string) bool {
	if mv == "" {
		return true
	}
	maj, mnr, ok := strings.Cut(mv, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(mnr)
	return ok && err1 == nil && err2 == nil && a == 1 && b >= 1 && parseIronicVersion(IronicVersion).atLeast(mv)
}

// VersionAtLeast reports whether microversion a is b or later ("" is 1.1).
func VersionAtLeast(a, b string) bool { return parseIronicVersion(a).atLeast(b) }

func (v ironicVersion) atLeast(s string) bool {
	o := parseIronicVersion(s)
	return v.major > o.major || v.major == o.major && v.minor >= o.minor
}

// pyJSONString is a string as Python's json.dumps writes it (ASCII only).
func pyJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ierr is Ironic's error answer: the fault as JSON text inside error_message.
func ierr(status int, format string, args ...any) Response {
	inner := `{"faultcode": "Client", "faultstring": ` + pyJSONString(fmt.Sprintf(format, args...)) + `, "debuginfo": null}`
	return Response{Status: status, Body: map[string]any{"error_message": inner}}
}

// webobErr is the answer of an error webob raises (pecan's routing, the version gate).
func webobErr(status int, desc string) Response {
	inner := fmt.Sprintf(`{"code": %d, "title": %s, "description": %s}`, status, pyJSONString(http.StatusText(status)), pyJSONString(desc))
	return Response{Status: status, Body: map[string]any{"error_message": inner}}
}

func (ironic) denied(rule string) Response {
	return ierr(http.StatusForbidden, "Access was denied to the following resource: %s", rule)
}

// ironic405 is pecan's answer to a method a controller does not have.
var ironic405 = webobErr(http.StatusMethodNotAllowed, "")

// logicalName is Ironic's logical names: RFC 3986 unreserved characters.
var logicalName = regexp.MustCompile(`^[A-Za-z0-9._~-]+$`)

func isLogicalName(s string) bool { return len(s) <= 255 && logicalName.MatchString(s) }

func (d ironic) serve(s *Store, r *Resource, req Request, rest []string) Response {
	rules := r.ironic
	v := parseIronicVersion(req.Microversion)
	if !v.atLeast(r.MinVersion) {
		if req.Method == http.MethodGet {
			return webobErr(http.StatusNotFound, rules.notAllowed)
		}
		return webobErr(http.StatusMethodNotAllowed, rules.notAllowed)
	}
	if len(rest) == 0 {
		switch req.Method {
		case http.MethodGet:
			return d.list(s, r, req, v)
		case http.MethodPost:
			return d.create(s, r, req, v)
		}
		return ironic405
	}
	if len(rest) > 1 {
		if rest[1] == "traits" && rules.owned && v.atLeast(ironicDescriptionVersion) && len(rest) <= 3 {
			return d.traits(s, r, req, rest[0], rest[2:])
		}
		// Pecan hands what follows the ident to the controller as an argument, which it refuses
		// (the contract suite's ironic-runbooks.yaml pins the status).
		return ierr(http.StatusBadRequest, "Field(s) \"%s\" are not valid", rest[1])
	}
	ident := rest[0]
	switch req.Method {
	case http.MethodGet:
		return d.get(s, r, req, v, ident)
	case http.MethodPatch:
		return d.patch(s, r, req, v, ident)
	case http.MethodDelete:
		return d.remove(s, r, req, ident)
	}
	return ironic405
}

// allowed is the policy: a system-scoped admin may do anything; for an owned resource a
// project admin (the manager role) may create and change its project's objects, and anyone may
// read them; write says whether the rule is one that changes things.
func (ironic) allowed(r *Resource, c Caller, obj map[string]any, write bool) bool {
	if c.System {
		return c.Admin || !write
	}
	if !r.ironic.owned {
		return false
	}
	if obj == nil {
		return !write || c.Admin
	}
	mine := obj["owner"] == c.ProjectID && c.ProjectID != ""
	return mine && (c.Admin || !write)
}

// find resolves an object by uuid or name, as Ironic's get_rpc_<x> does.
func (ironic) find(s *Store, r *Resource, ident string) (map[string]any, *Response) {
	if isUUID(ident) {
		for _, o := range s.lookupBy(r, "uuid", ident) {
			if o["uuid"] == ident {
				return o, nil
			}
		}
	} else if isLogicalName(ident) {
		for _, o := range s.lookupBy(r, "name", ident) {
			if o["name"] == ident {
				return o, nil
			}
		}
	} else {
		resp := ierr(http.StatusBadRequest, "Expected a logical name or UUID but received %s.", ident)
		return nil, &resp
	}
	resp := ierr(http.StatusNotFound, r.NotFound, ident)
	return nil, &resp
}

// checkIdent is args.uuid_or_name on the path's identifier.
func (ironic) checkIdent(r *Resource, ident string) *Response {
	if isLogicalName(ident) || isUUID(ident) {
		return nil
	}
	resp := ierr(http.StatusBadRequest, "Expected UUID or name for %s_ident: %s", identName(r), ident)
	return &resp
}

func identName(r *Resource) string {
	if r.ironic.owned {
		return "runbook"
	}
	return "template"
}

// show is the object as Ironic answers it; fields, when given, keeps only those (and links).
func (d ironic) show(s *Store, r *Resource, obj map[string]any, v ironicVersion, fields []string) map[string]any {
	return d.showKeys(s, r, obj, d.shownKeys(r, v, fields))
}

// shownKeys are the fields show shows at microversion v (besides links); fields, when given,
// keeps only those.
func (ironic) shownKeys(r *Resource, v ironicVersion, fields []string) []string {
	keys := slices.Concat([]string{"uuid", "created_at", "updated_at"}, r.ironic.show, []string{"steps"})
	for _, f := range r.Fields {
		if f.Since != "" && v.atLeast(f.Since) && !slices.Contains(keys, f.Name) {
			keys = append(keys, f.Name)
		}
	}
	if r.ironic.owned && v.atLeast(ironicDescriptionVersion) {
		keys = append(keys, "traits")
	}
	if fields != nil {
		keys = slices.DeleteFunc(keys, func(k string) bool { return !slices.Contains(fields, k) })
	}
	return keys
}

// showKeys is show with the fields shown worked out (shownKeys).
func (ironic) showKeys(s *Store, r *Resource, obj map[string]any, keys []string) map[string]any {
	out := make(map[string]any, len(keys)+1)
	for _, k := range keys {
		out[k] = copyJSON(obj[k])
	}
	if out["extra"] == nil && slices.Contains(keys, "extra") {
		out["extra"] = map[string]any{}
	}
	if t, ok := out["traits"]; ok && t == nil {
		out["traits"] = []any{}
	}
	base := s.opts.URL(Baremetal)
	seg := strings.TrimPrefix(r.Path, "v1/")
	out["links"] = []any{
		map[string]any{"href": base + "/v1/" + seg + "/" + fmt.Sprint(obj["uuid"]), "rel": "self"},
		map[string]any{"href": base + "/" + seg + "/" + fmt.Sprint(obj["uuid"]), "rel": "bookmark"},
	}
	maskSteps(out)
	return out
}

// maskSteps masks passwords in the steps' args, as Ironic does in every answer.
func maskSteps(out map[string]any) {
	if steps, ok := out["steps"].([]any); ok {
		for _, st := range steps {
			if m, ok := st.(map[string]any); ok {
				if args, ok := m["args"].(map[string]any); ok {
					maskPasswords(args)
				}
			}
		}
	}
}

// maskPasswords is oslo's mask_dict_password: values of keys that name a secret become ******.
func maskPasswords(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case map[string]any:
			maskPasswords(x)
		default:
			lk := strings.ToLower(k)
			for _, secret := range []string{"password", "secret", "token", "passphrase", "credential"} {
				if strings.Contains(lk, secret) {
					m[k] = "******"
				}
			}
		}
	}
}

// fieldsParam is args.string_list: comma-separated, trimmed, lower-cased, without repeats; an
// empty fields= asks for none (non-nil, empty), which shows only the links.
func fieldsParam(q []string) []string {
	if q == nil {
		return nil
	}
	out := []string{}
	for _, v := range q {
		for _, p := range strings.Split(v, ",") {
			p = strings.ToLower(strings.TrimSpace(p))
			if p != "" && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// checkFields is check_for_invalid_fields against the shown object.
func (d ironic) checkFields(s *Store, r *Resource, v ironicVersion, fields []string) *Response {
	known := d.show(s, r, map[string]any{}, v, nil)
	var bad []string
	for _, f := range fields {
		if _, ok := known[f]; !ok {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		resp := ierr(http.StatusBadRequest, "Field(s) \"%s\" are not valid", strings.Join(bad, ", "))
		return &resp
	}
	return nil
}

func (d ironic) get(s *Store, r *Resource, req Request, v ironicVersion, ident string) Response {
	if bad := d.checkIdent(r, ident); bad != nil {
		return *bad
	}
	if !r.ironic.owned && !d.allowed(r, req.Caller, nil, false) {
		return d.denied(r.ironic.policy + ":get")
	}
	obj, bad := d.find(s, r, ident)
	if bad != nil {
		return *bad
	}
	if r.ironic.owned && !d.allowed(r, req.Caller, obj, false) && obj["public"] != true {
		return ierr(http.StatusForbidden, "Access was denied to the following resource: %%(resource)s")
	}
	fields := fieldsParam(req.Query["fields"])
	if fields != nil {
		if bad := d.checkFields(s, r, v, fields); bad != nil {
			return *bad
		}
	}
	return Response{Status: http.StatusOK, Body: d.show(s, r, obj, v, fields)}
}

func (d ironic) list(s *Store, r *Resource, req Request, v ironicVersion) Response {
	q := req.Query
	if !r.ironic.owned && !d.allowed(r, req.Caller, nil, false) {
		return d.denied(r.ironic.policy + ":get")
	}
	for _, k := range slices.Sorted(maps.Keys(q)) {
		if !slices.Contains([]string{"marker", "limit", "sort_key", "sort_dir", "fields", "detail", "project"}, k) ||
			k == "project" && !r.ironic.owned {
			return ierr(http.StatusBadRequest, "Unexpected arguments: %s", k)
		}
	}
	marker := q.Get("marker")
	if _, ok := q["marker"]; ok && !isLogicalName(marker) {
		return ierr(http.StatusBadRequest, "Expected name for marker: %s", marker)
	}
	limit := 1000
	if raw, ok := q["limit"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(raw[len(raw)-1]))
		if err != nil {
			return ierr(http.StatusBadRequest, "Expected an integer for limit: %s", raw[len(raw)-1])
		}
		limit = n
	}
	var detail *bool
	if raw, ok := q["detail"]; ok {
		b, ok := pyBool(raw[len(raw)-1])
		if !ok {
			return ierr(http.StatusBadRequest, "Invalid detail: Unrecognized value '%s', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'", raw[len(raw)-1])
		}
		detail = &b
	}
	visibleTo := func(o map[string]any) bool {
		return req.Caller.System || !r.ironic.owned || o["owner"] == req.Caller.ProjectID || o["public"] == true
	}
	if r.ironic.owned && !req.Caller.System && req.Caller.ProjectID == "" {
		return d.denied(r.ironic.policy + ":list")
	}
	fields := fieldsParam(q["fields"])
	sortKey := "id"
	if k, ok := q["sort_key"]; ok {
		sortKey = k[len(k)-1]
	}
	sortDir := "asc"
	if sd, ok := q["sort_dir"]; ok {
		sortDir = sd[len(sd)-1]
	}
	switch {
	case fields != nil && detail != nil && *detail:
		return ierr(http.StatusBadRequest, "Can not specify ?detail=True and fields in the same request.")
	case limit <= 0:
		return ierr(http.StatusBadRequest, "Limit must be positive")
	case sortDir != "asc" && sortDir != "desc":
		return ierr(http.StatusBadRequest, "Invalid sort direction: %s. Acceptable values are 'asc' or 'desc'", sortDir)
	case sortKey == "extra" || sortKey == "steps":
		return ierr(http.StatusBadRequest, "The sort_key value %s is an invalid field for sorting", sortKey)
	}
	if sortKey != "id" {
		// What the database's model does not have fails there, worded a little differently.
		if f, ok := r.Field(sortKey); !ok || !f.Sort && f.Name != "uuid" {
			return ierr(http.StatusBadRequest, "The sort_key value \"%s\" is an invalid field for sorting", sortKey)
		}
	}
	limit = min(limit, 1000)
	named := fields != nil
	if !named && (detail == nil || !*detail) {
		fields = []string{"uuid", "name"}
	}
	list := s.list(r)
	start := -1 // the marker's position in list; -1 starts at the top
	if marker != "" {
		for _, at := range s.positionsBy(r, "uuid", marker) {
			if list[at]["uuid"] == marker {
				start = at
			}
		}
		if start < 0 {
			return ierr(http.StatusNotFound, r.NotFound, marker)
		}
		// A marker the caller cannot see is in none of its pages: the list starts at the top.
		if !visibleTo(list[start]) {
			start = -1
		}
	}
	var items []map[string]any
	if sortKey == "id" {
		// The database's id counts up with each create: sorting by id is creation order, the
		// list's own, so a page is read from its marker on and costs what it shows, not what the
		// collection holds (a catalog of 20,000 runbooks read 100 at a time scanned and sorted
		// them all for each of its 200 pages).
		at, step := start+1, 1
		if sortDir == "desc" {
			at, step = start-1, -1
			if start < 0 {
				at = len(list) - 1
			}
		}
		for ; at >= 0 && at < len(list) && len(items) < limit; at += step {
			if visibleTo(list[at]) {
				items = append(items, list[at])
			}
		}
	} else {
		for _, o := range list {
			if visibleTo(o) {
				items = append(items, o)
			}
		}
		// Ties keep creation order (the database sorts by sort_key, then id).
		slices.SortStableFunc(items, func(a, b map[string]any) int { return strings.Compare(pyStr(a[sortKey]), pyStr(b[sortKey])) })
		if sortDir == "desc" {
			slices.Reverse(items)
		}
		if start >= 0 {
			items = items[slices.IndexFunc(items, func(o map[string]any) bool { return o["uuid"] == marker })+1:]
		}
		if len(items) > limit {
			items = items[:limit]
		}
	}
	// Ironic checks the fields asked for as it shows each item (check_for_invalid_fields in
	// convert_with_links), after the marker's lookup: a page with no item refuses none.
	if named && len(items) > 0 {
		if bad := d.checkFields(s, r, v, fields); bad != nil {
			return *bad
		}
	}
	next := ""
	if _, asked := q["limit"]; len(items) > 0 && len(items) == limit && (asked || limit == 1000) {
		args := fmt.Sprintf("sort_key=%s&sort_dir=%s&", sortKey, sortDir)
		if detail != nil {
			args += fmt.Sprintf("detail=%s&", pyRepr(*detail))
		}
		// The fields shown, in Ironic's spelling of them; none (fields= asked for none) is left out.
		if len(fields) > 0 {
			args += "fields=" + strings.Join(fields, ",") + "&"
		}
		next = fmt.Sprintf("%s/v1/%s?%slimit=%d&marker=%s", s.opts.URL(Baremetal), strings.TrimPrefix(r.Path, "v1/"),
			args, limit, items[len(items)-1]["uuid"])
	}
	return d.page(s, r, v, fields, items, next)
}

// page is a list's answer, {plural: [items shown], next: link} (no next when ""), put together
// from the items' cached encodings (Store.encoded) as encoding/json would encode it: an object's
// keys in sorted order, strings escaped as Marshal escapes them.
func (d ironic) page(s *Store, r *Resource, v ironicVersion, fields []string, items []map[string]any, next string) Response {
	keys := d.shownKeys(r, v, fields)
	if s.encodeOnDemand {
		return d.shownPage(s, r, keys, items, next)
	}
	view := strings.Join(keys, ",") + "\x00" + s.opts.URL(Baremetal)
	shown := make([][]byte, len(items))
	size := 0
	for i, o := range items {
		b, err := s.encoded(o, view, func() any { return d.showKeys(s, r, o, keys) })
		if err != nil {
			// Not JSON (nothing the API stores): answer as before, leaving the error to the encoder.
			return d.shownPage(s, r, keys, items, next)
		}
		shown[i] = b
		size += len(b) + 1
	}
	plural, _ := json.Marshal(r.Plural)
	var link []byte
	if next != "" {
		link, _ = json.Marshal(next)
	}
	body := make([]byte, 0, size+len(plural)+len(link)+16)
	list := func(body []byte) []byte {
		body = append(append(body, plural...), ':', '[')
		for i, b := range shown {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, b...)
		}
		return append(body, ']')
	}
	body = append(body, '{')
	switch {
	case link == nil:
		body = list(body)
	case r.Plural < "next": // encoding/json writes an object's keys sorted
		body = append(append(list(body), `,"next":`...), link...)
	default:
		body = list(append(append(append(body, `"next":`...), link...), ','))
	}
	return Response{Status: http.StatusOK, Encoded: append(body, '}')}
}

// shownPage is page's answer as a Body to encode.
func (d ironic) shownPage(s *Store, r *Resource, keys []string, items []map[string]any, next string) Response {
	shown := []any{}
	for _, o := range items {
		shown = append(shown, d.showKeys(s, r, o, keys))
	}
	body := map[string]any{r.Plural: shown}
	if next != "" {
		body["next"] = next
	}
	return Response{Status: http.StatusOK, Body: body}
}

// schemaAt is the create schema at microversion v: from 1.112 a runbook's name is any logical
// name (from Ironic's API reference; no Ironic the tier runs has 1.112).
func (ironic) schemaAt(r *Resource, v ironicVersion) *jsonSchema {
	if !r.ironic.owned || !v.atLeast(ironicDescriptionVersion) {
		return r.ironic.schema
	}
	s := *r.ironic.schema
	s.Props = slices.Clone(s.Props)
	for i, p := range s.Props {
		if p.Name == "name" {
			s.Props[i].Schema = &jsonSchema{Types: []string{"string"}, MinLength: 1, MaxLength: 255, Pattern: `^[A-Za-z0-9._~-]+$`}
		}
	}
	return &s
}

// checkBody is the create validator: the schema, repeated steps and the uuid.
func (d ironic) checkBody(r *Resource, v ironicVersion, name string, body any) *Response {
	if msg, bad := ironicSchemaError(name, d.schemaAt(r, v).validate(body, 0)); bad {
		resp := ierr(http.StatusBadRequest, "%s", msg)
		return &resp
	}
	obj := body.(map[string]any)
	steps, _ := obj["steps"].([]any)
	seen := map[string]int{}
	var order []string
	for _, st := range steps {
		m, _ := st.(map[string]any)
		k := fmt.Sprintf("interface: %s, step: %s", pyStr(m["interface"]), pyStr(m["step"]))
		if seen[k] == 1 {
			order = append(order, k)
		}
		seen[k]++
	}
	if len(order) > 0 {
		resp := ierr(http.StatusBadRequest, "Deploy template invalid: Duplicate deploy steps. A template cannot have multiple deploy "+
			"steps with the same interface and step. Duplicates: %s.", strings.Join(order, "; "))
		return &resp
	}
	if u, ok := obj["uuid"]; ok && u != nil {
		if us, isString := u.(string); !isString || !isUUID(us) {
			resp := ierr(http.StatusBadRequest, "Expected UUID for uuid: %s", pyStr(u))
			return &resp
		}
	}
	return nil
}

func (d ironic) create(s *Store, r *Resource, req Request, v ironicVersion) Response {
	rules := r.ironic
	raw, err := decodeJSON(req.Body)
	if len(req.Body) == 0 {
		raw, err = map[string]any{}, nil
	}
	if err != nil {
		return ierr(http.StatusBadRequest, "Malformed request body")
	}
	if bad := d.checkBody(r, v, rules.bodyName, raw); bad != nil {
		return *bad
	}
	body := raw.(map[string]any)
	c := req.Caller
	if !d.allowed(r, c, nil, true) {
		return d.denied(rules.policy + ":create")
	}
	obj := map[string]any{}
	for _, f := range r.Fields {
		if val, ok := body[f.Name]; ok && (f.Since == "" || v.atLeast(f.Since)) {
			obj[f.Name] = cloneJSON(val)
		}
	}
	if rules.owned && !c.System {
		owner, _ := body["owner"].(string)
		if owner != "" && owner != c.ProjectID {
			return ierr(http.StatusBadRequest, "Cannot create a runbook as a project scoped admin with an owner other than your own project.")
		}
		if body["public"] == true {
			return ierr(http.StatusBadRequest, "Cannot create a public runbook as a project scoped admin.")
		}
		obj["owner"] = c.ProjectID
	}
	if u, _ := obj["uuid"].(string); u == "" {
		obj["uuid"] = uuid4()
	}
	if resp := d.unique(s, r, obj, true); resp != nil {
		return *resp
	}
	d.fill(s, r, obj, c)
	s.insert(r, obj)
	shown := d.show(s, r, obj, v, nil)
	shown["steps"] = sentSteps(body["steps"], rules.orderKey)
	maskSteps(shown)
	return Response{Status: http.StatusCreated, Body: shown}
}

// unique refuses a taken uuid (on create) or name (the database's unique keys).
func (ironic) unique(s *Store, r *Resource, obj map[string]any, create bool) *Response {
	// candidates are the objects whose field may equal obj's: from the index when it is a string,
	// else (a null name) every object.
	candidates := func(field string) []map[string]any {
		if v, ok := obj[field].(string); ok {
			return s.lookupBy(r, field, v)
		}
		return s.list(r)
	}
	for _, o := range candidates("uuid") {
		if create && o["uuid"] == obj["uuid"] {
			resp := ierr(http.StatusConflict, r.ironic.uuidConflict, obj["uuid"])
			return &resp
		}
	}
	for _, o := range candidates("name") {
		if o["name"] == obj["name"] && o["uuid"] != obj["uuid"] {
			resp := ierr(http.StatusConflict, r.ironic.conflict, obj["name"])
			return &resp
		}
	}
	return nil
}

// fill completes an object as Ironic stores it: defaults, steps as stored, the creation time.
func (ironic) fill(s *Store, r *Resource, obj map[string]any, c Caller) {
	if _, ok := obj["uuid"]; !ok {
		obj["uuid"] = uuid4()
	}
	for _, f := range r.Fields {
		if obj[f.Name] == nil && f.Default != nil {
			obj[f.Name] = cloneJSON(f.Default)
		}
	}
	if r.ironic.owned {
		if _, ok := obj["owner"]; !ok && !c.System && c.ProjectID != "" {
			obj["owner"] = c.ProjectID
		}
	}
	obj["steps"] = storedSteps(obj["steps"], r.ironic.orderKey)
	obj["created_at"] = s.opts.Now().UTC().Format(ironicTime)
	if _, ok := obj["updated_at"]; !ok {
		obj["updated_at"] = nil
	}
}

// ironicTime is how Ironic prints times.
const ironicTime = "2006-01-02T15:04:05.000000+00:00"

// storedSteps are steps as Ironic's database keeps them: interface, step, args ({} when
// missing) and the order as an integer. (The answer to a create shows them as sent: sentSteps.)
func storedSteps(v any, orderKey string) []any {
	out := []any{}
	for _, st := range sentSteps(v, orderKey) {
		m := st.(map[string]any)
		if m["args"] == nil {
			m["args"] = map[string]any{}
		}
		if text, ok := m[orderKey].(string); ok {
			n, _ := strconv.Atoi(text)
			m[orderKey] = n
		}
		out = append(out, m)
	}
	return out
}

// sentSteps are steps as a request sent them: args null when missing, the order as it came.
func sentSteps(v any, orderKey string) []any {
	list, _ := v.([]any)
	out := []any{}
	for _, st := range list {
		m, _ := st.(map[string]any)
		out = append(out, map[string]any{"interface": m["interface"], "step": m["step"], "args": cloneJSON(m["args"]), orderKey: m[orderKey]})
	}
	return out
}

// stepKey is the database's comparison of two steps: interface, step, args, order.
func stepKey(st any, orderKey string) string {
	m, _ := st.(map[string]any)
	return pyStr(m["interface"]) + "\x00" + pyStr(m["step"]) + "\x00" + pyRepr(m["args"]) + "\x00" + pyRepr(m[orderKey])
}

// updatedSteps is the order the database lists a steps update in: the stored steps the update
// keeps (in their order), then the new ones, which it inserts sorted by stepKey.
func updatedSteps(current, next []any, orderKey string) []any {
	pending := slices.Clone(next)
	var kept []any
	for _, c := range current {
		if i := slices.IndexFunc(pending, func(n any) bool { return stepKey(n, orderKey) == stepKey(c, orderKey) }); i >= 0 {
			kept = append(kept, c)
			pending = slices.Delete(pending, i, i+1)
		}
	}
	slices.SortStableFunc(pending, func(a, b any) int { return strings.Compare(stepKey(a, orderKey), stepKey(b, orderKey)) })
	return append(kept, pending...)
}

func (d ironic) remove(s *Store, r *Resource, req Request, ident string) Response {
	if bad := d.checkIdent(r, ident); bad != nil {
		return *bad
	}
	if !r.ironic.owned && !d.allowed(r, req.Caller, nil, true) {
		return d.denied(r.ironic.policy + ":delete")
	}
	obj, bad := d.find(s, r, ident)
	if bad != nil {
		return *bad
	}
	if r.ironic.owned && !d.allowed(r, req.Caller, obj, true) {
		return d.denied(r.ironic.policy + ":delete")
	}
	s.objs[r.Ref()] = slices.DeleteFunc(s.objs[r.Ref()], func(o map[string]any) bool {
		if o["uuid"] == obj["uuid"] {
			s.touch(o)
			return true
		}
		return false
	})
	s.unindex(r)
	return Response{Status: http.StatusNoContent}
}

// patchSchema is args.patch: a list of {op, path[, value]}.
var patchSchema = &jsonSchema{Types: []string{"array"}, Items: &jsonSchema{Types: []string{"object"}, NoExtra: true,
	Required: []string{"op", "path"}, Props: []jsonProp{
		{"path", &jsonSchema{Types: []string{"string"}, Pattern: `^(/[\w-]+)+$`}},
		{"op", &jsonSchema{Types: []string{"string"}, Enum: []any{"add", "replace", "remove"}}},
		{"value", &jsonSchema{}},
	}}}

func (d ironic) patch(s *Store, r *Resource, req Request, v ironicVersion, ident string) Response {
	rules := r.ironic
	if bad := d.checkIdent(r, ident); bad != nil {
		return *bad
	}
	raw, err := decodeJSON(req.Body)
	if len(req.Body) == 0 {
		raw, err = map[string]any{}, nil
	}
	if err != nil {
		return ierr(http.StatusBadRequest, "Malformed request body")
	}
	if raw == nil {
		// A null patch passes Ironic 29's check (a null argument is not validated) and fails
		// the first use.
		inner := `{"faultcode": "Server", "faultstring": "'NoneType' object is not iterable", "debuginfo": null}`
		return Response{Status: http.StatusInternalServerError, Body: map[string]any{"error_message": inner}}
	}
	if msg, bad := ironicSchemaError("patch", patchSchema.validate(raw, 0)); bad {
		return ierr(http.StatusBadRequest, "%s", msg)
	}
	ops := raw.([]any)
	if !rules.owned && !d.allowed(r, req.Caller, nil, true) {
		return d.denied(rules.policy + ":update")
	}
	for _, o := range ops {
		p := o.(map[string]any)["path"].(string)
		if field := strings.Split(p, "/")[1]; !slices.Contains(rules.patchable, field) {
			return ierr(http.StatusBadRequest, "Cannot patch %s. Only the following can be updated: %s", p, strings.Join(rules.patchable, ", "))
		}
	}
	obj, bad := d.find(s, r, ident)
	if bad != nil {
		return *bad
	}
	var owner, public []any
	if rules.owned {
		var policies []string
		generic := false
		for _, o := range ops {
			op := o.(map[string]any)
			p := op["path"].(string)
			switch {
			case strings.HasPrefix(p, "/owner"):
				policies = append(policies, rules.policy+":update:owner")
			case strings.HasPrefix(p, "/public"):
				policies = append(policies, rules.policy+":update:public")
			default:
				generic = true
			}
			if op["op"] != "remove" {
				switch p {
				case "/owner":
					owner = append(owner, op["value"])
				case "/public":
					public = append(public, op["value"])
				}
			}
		}
		if generic || len(policies) == 0 {
			policies = append(policies, rules.policy+":update")
		}
		for _, p := range policies {
			ok := d.allowed(r, req.Caller, obj, true)
			if strings.HasSuffix(p, ":owner") || strings.HasSuffix(p, ":public") {
				ok = req.Caller.System && req.Caller.Admin
			}
			if !ok {
				return d.denied(p)
			}
		}
	}
	// The document the patch applies to: the object as Ironic's as_dict() has it.
	doc := map[string]any{"id": float64(1)}
	for _, f := range r.Fields {
		if f.Since != "" && !v.atLeast(f.Since) {
			continue
		}
		doc[f.Name] = cloneJSON(obj[f.Name])
	}
	if len(owner) > 0 {
		publicValue := len(public) > 0 && truthy(public[0])
		if obj["public"] == true && len(public) == 0 || publicValue {
			return ierr(http.StatusBadRequest, "Couldn't apply patch '%s'. Reason: There cannot be an owner for a public runbook", pyRepr(ops))
		}
	}
	if len(public) > 0 {
		doc["owner"] = nil
	}
	for _, o := range ops {
		op := o.(map[string]any)
		p := op["path"].(string)
		if op["op"] == "add" && strings.Count(p, "/") == 1 {
			if _, ok := doc[strings.TrimPrefix(p, "/")]; !ok {
				return ierr(http.StatusBadRequest, "Adding a new attribute (%s) to the root of the resource is not allowed", p)
			}
		}
	}
	for _, o := range ops {
		op := o.(map[string]any)
		if reason := applyPatchOp(doc, op); reason != "" {
			return ierr(http.StatusBadRequest, "Couldn't apply patch '%s'. Reason: %s", pyRepr(op), reason)
		}
	}
	// The patched object without what the schema does not name, checked step by step and whole.
	checked := map[string]any{}
	for _, p := range rules.schema.Props {
		if val, ok := doc[p.Name]; ok {
			checked[p.Name] = val
		}
	}
	if steps, ok := checked["steps"].([]any); ok {
		stepSchema := rules.schema.Props[slices.IndexFunc(rules.schema.Props, func(p jsonProp) bool { return p.Name == "steps" })].Schema.Items
		for _, st := range steps {
			if msg, bad := ironicSchemaError("patch", stepSchema.validate(st, 0)); bad {
				return ierr(http.StatusBadRequest, "%s", msg)
			}
		}
	}
	if bad := d.checkBody(r, v, "patch", checked); bad != nil {
		return *bad
	}
	next := cloneJSON(obj)
	changed := false
	for _, p := range rules.schema.Props {
		if p.Name == "uuid" || p.Name == "description" && !v.atLeast(ironicDescriptionVersion) {
			continue
		}
		val := checked[p.Name]
		if p.Name == "steps" {
			current, _ := next["steps"].([]any)
			val = updatedSteps(current, storedSteps(val, rules.orderKey), rules.orderKey)
		}
		if pyRepr(val) != pyRepr(next[p.Name]) {
			next[p.Name] = val
			changed = true
		}
	}
	if resp := d.unique(s, r, next, false); resp != nil {
		return *resp
	}
	if changed {
		next["updated_at"] = s.opts.Now().UTC().Format(ironicTime)
	}
	maps.Copy(obj, next)
	s.touch(obj)
	s.unindex(r) // the name may have changed
	return Response{Status: http.StatusOK, Body: d.show(s, r, obj, v, nil)}
}

// truthy is Python's truth of a decoded JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// applyPatchOp applies one JSON Patch operation to doc in place, with python-jsonpatch's
// reasons for what fails.
func applyPatchOp(doc map[string]any, op map[string]any) string {
	parts := strings.Split(strings.TrimPrefix(op["path"].(string), "/"), "/")
	value, hasValue := op["value"]
	if op["op"] != "remove" && !hasValue {
		return "The operation does not contain a 'value' member"
	}
	var parent any = doc
	for _, p := range parts[:len(parts)-1] {
		switch x := parent.(type) {
		case map[string]any:
			next, ok := x[p]
			if !ok {
				return fmt.Sprintf("member '%s' not found in %s", p, pyRepr(x))
			}
			parent = next
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return fmt.Sprintf("index '%s' is out of bounds", p)
			}
			parent = x[i]
		default:
			return fmt.Sprintf("Document '%s' does not support indexing, only dictionaries and lists are supported.", pyRepr(parent))
		}
	}
	last := parts[len(parts)-1]
	switch x := parent.(type) {
	case map[string]any:
		_, exists := x[last]
		switch op["op"] {
		case "add":
			x[last] = cloneJSON(value)
		case "replace":
			if !exists {
				return fmt.Sprintf("can't replace a non-existent object '%s'", last)
			}
			x[last] = cloneJSON(value)
		case "remove":
			if !exists {
				return fmt.Sprintf("can't remove a non-existent object '%s'", last)
			}
			delete(x, last)
		}
		return ""
	case []any:
		// A list inside the document: its parent holds it, so rebuild it there.
		i, err := strconv.Atoi(last)
		if last == "-" && op["op"] == "add" {
			i, err = len(x), nil
		}
		if err != nil {
			return fmt.Sprintf("'%s' is not a valid sequence index", last)
		}
		var next []any
		switch op["op"] {
		case "add":
			if i > len(x) {
				return "can't insert outside of list"
			}
			next = slices.Insert(slices.Clone(x), i, cloneJSON(value))
		case "replace":
			if i >= len(x) {
				return "can't replace outside of list"
			}
			next = slices.Clone(x)
			next[i] = cloneJSON(value)
		case "remove":
			if i >= len(x) {
				return fmt.Sprintf("can't remove a non-existent object '%s'", last)
			}
			next = slices.Delete(slices.Clone(x), i, i+1)
		}
		setAt(doc, parts[:len(parts)-1], next)
		return ""
	}
	return fmt.Sprintf("Document '%s' does not support indexing, only dictionaries and lists are supported.", pyRepr(parent))
}

// setAt replaces the value at a path that exists.
func setAt(doc map[string]any, parts []string, v any) {
	var cur any = doc
	for i, p := range parts {
		lastPart := i == len(parts)-1
		switch x := cur.(type) {
		case map[string]any:
			if lastPart {
				x[p] = v
				return
			}
			cur = x[p]
		case []any:
			n, _ := strconv.Atoi(p)
			if lastPart {
				x[n] = v
				return
			}
			cur = x[n]
		}
	}
}

// traits serves a runbook's traits sub-resource (microversion 1.112; from Ironic's API
// reference: no Ironic the tier runs has it).
func (d ironic) traits(s *Store, r *Resource, req Request, ident string, rest []string) Response {
	obj, bad := d.find(s, r, ident)
	if bad != nil {
		return *bad
	}
	if req.Method != http.MethodGet && !d.allowed(r, req.Caller, obj, true) {
		return d.denied(r.ironic.policy + ":update")
	}
	if req.Method == http.MethodGet && !d.allowed(r, req.Caller, obj, false) && obj["public"] != true {
		return ierr(http.StatusForbidden, "Access was denied to the following resource: %%(resource)s")
	}
	have, _ := obj["traits"].([]any)
	trait := regexp.MustCompile(customTrait)
	if len(rest) == 1 {
		t := rest[0]
		switch req.Method {
		case http.MethodPut:
			if !trait.MatchString(t) {
				return ierr(http.StatusBadRequest, "Invalid trait %s", t)
			}
			if !slices.Contains(have, any(t)) {
				obj["traits"] = append(slices.Clone(have), t)
				s.touch(obj)
			}
			return Response{Status: http.StatusNoContent}
		case http.MethodDelete:
			if !slices.Contains(have, any(t)) {
				return ierr(http.StatusNotFound, "Runbook %s has no trait %s.", obj["uuid"], t)
			}
			obj["traits"] = slices.DeleteFunc(slices.Clone(have), func(x any) bool { return x == t })
			s.touch(obj)
			return Response{Status: http.StatusNoContent}
		}
		return ironic405
	}
	switch req.Method {
	case http.MethodGet:
		if have == nil {
			have = []any{}
		}
		return Response{Status: http.StatusOK, Body: map[string]any{"traits": have}}
	case http.MethodPut:
		var body struct {
			Traits []string `json:"traits"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return ierr(http.StatusBadRequest, "Invalid JSON body")
		}
		var list []any
		for _, t := range body.Traits {
			if !trait.MatchString(t) {
				return ierr(http.StatusBadRequest, "Invalid trait %s", t)
			}
			if !slices.Contains(list, any(t)) {
				list = append(list, t)
			}
		}
		slices.SortFunc(list, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		obj["traits"] = list
		s.touch(obj)
		return Response{Status: http.StatusNoContent}
	case http.MethodDelete:
		obj["traits"] = []any{}
		s.touch(obj)
		return Response{Status: http.StatusNoContent}
	}
	return ironic405
}
