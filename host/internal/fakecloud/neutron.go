package fakecloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
)

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

// methodNotAllowed answers a method the resource does not serve.
func methodNotAllowed(w http.ResponseWriter) { w.WriteHeader(http.StatusMethodNotAllowed) }

// adminOnly reports whether t may perform an admin-only action, answering the policy refusal
// when it may not.
func adminOnly(w http.ResponseWriter, t *token, action string) bool {
	if !t.isAdmin() {
		policyRefused(w, action)
	}
	return t.isAdmin()
}

// invalidInput is Neutron's answer to a body attribute of the wrong type: one error for the
// whole resource, whatever the attribute.
func invalidInput(w http.ResponseWriter, resource string) {
	neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for %s", resource)
}

// neutronError writes Neutron's error envelope.
func neutronError(w http.ResponseWriter, status int, typ, format string, args ...any) {
	writeJSON(w, status, map[string]any{"NeutronError": map[string]any{
		"type": typ, "message": fmt.Sprintf(format, args...), "detail": ""}})
}

func policyRefused(w http.ResponseWriter, action string) {
	neutronError(w, http.StatusForbidden, "PolicyNotAuthorized", "rule:%s is disallowed by policy", action)
}

func (c *Cloud) serveNeutron(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/" {
		writeJSON(w, http.StatusOK, map[string]any{"versions": []any{map[string]any{
			"id": "v2.0", "status": "CURRENT",
			"links": []any{map[string]any{"rel": "self", "href": c.neutron.URL + "/v2.0/"}}}}})
		return
	}
	seg, ok := pathSegments(r.URL.Path, "/v2.0")
	if !ok || len(seg) == 0 {
		neutronError(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
		return
	}
	t := c.authenticate(w, r)
	if t == nil {
		return
	}
	if t.system && c.neutronRefusesSystemScope(w, r, seg) {
		return
	}
	switch {
	case seg[0] == "extensions" && len(seg) == 1:
		c.neutronExtensions(w)
	case seg[0] == "flavors" && len(seg) <= 2:
		c.neutronFlavors(w, r, t, seg[1:])
	case seg[0] == "flavors" && len(seg) <= 4 && seg[2] == "service_profiles":
		c.neutronBindings(w, r, t, seg[1], seg[3:])
	case seg[0] == "service_profiles" && len(seg) <= 2:
		c.neutronProfiles(w, r, t, seg[1:])
	case seg[0] == "routers" && len(seg) <= 2:
		c.neutronRouters(w, r, t, seg[1:])
	case seg[0] == "network_segment_ranges" && len(seg) <= 2:
		c.neutronRanges(w, r, t, seg[1:])
	case seg[0] == "subnetpools" && len(seg) <= 3:
		c.neutronSubnetPools(w, r, t, seg[1:])
	case c.scopeInUse(w, r, seg):
	case c.serveKnown(Network, w, r, t, ""):
	case c.serveCollection(w, r, t, seg):
	default:
		neutronError(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
	}
}

// neutronRefusesSystemScope answers as Neutron 2025.1 does for a system-scoped token: lists are
// empty, single resources are not found, and writes need a project scope.
func (c *Cloud) neutronRefusesSystemScope(w http.ResponseWriter, r *http.Request, seg []string) bool {
	collection := map[string]string{"flavors": "flavor", "service_profiles": "service_profile",
		"routers": "router", "network_segment_ranges": "network_segment_range"}
	single, known := collection[seg[0]]
	if !known {
		return false
	}
	switch {
	case r.Method == http.MethodGet && len(seg) == 1:
		writeJSON(w, http.StatusOK, map[string]any{seg[0]: []any{}})
	case r.Method == http.MethodGet:
		neutronError(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
	case r.Method == http.MethodPost && seg[0] == "network_segment_ranges":
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Running without keystone AuthN requires that tenant_id is specified")
	default:
		verb := map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodDelete: "delete"}[r.Method]
		neutronError(w, http.StatusForbidden, "InvalidScope", "rule:%s_%s requires a scope of ['project'], request was made with system scope.", verb, single)
	}
	return true
}

func (c *Cloud) neutronExtensions(w http.ResponseWriter) {
	var exts []any
	for _, a := range []string{"address-scope", "flavors", "l3-flavors", "network-segment-range", "router", "segment", "subnet_allocation"} {
		exts = append(exts, map[string]any{"alias": a, "name": a, "description": a})
	}
	writeJSON(w, http.StatusOK, map[string]any{"extensions": exts})
}

// readBody decodes {"<key>": {...}} and checks the attributes against allowed.
func readBody(w http.ResponseWriter, r *http.Request, key string, allowed ...string) (map[string]any, bool) {
	var env map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Malformed request body")
		return nil, false
	}
	raw, ok := env[key]
	if !ok {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Unable to find '%s' in request body", key)
		return nil, false
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Malformed request body")
		return nil, false
	}
	var unknown []string
	for k := range body {
		if !slices.Contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Unrecognized attribute(s) '%s'", strings.Join(unknown, ", "))
		return nil, false
	}
	return body, true
}

// readOnly rejects an update that names a read-only attribute, as Neutron does.
func readOnly(w http.ResponseWriter, body map[string]any, attrs ...string) bool {
	for _, a := range attrs {
		if _, ok := body[a]; ok {
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Cannot update read-only attribute %s", a)
			return false
		}
	}
	return true
}

// filterList applies Neutron's query filters and field selection to a list of rendered items.
// filterable names the attributes Neutron accepts as filters; others are 400 (the real server
// refuses, e.g., shared, minimum and maximum on segment ranges and flavor_id on routers).
func filterList(w http.ResponseWriter, q url.Values, items []map[string]any, filterable ...string) ([]map[string]any, bool) {
	var keys []string
	for k := range q {
		switch k {
		case "fields", "limit", "marker", "sort_key", "sort_dir", "page_reverse":
			continue
		}
		if !slices.Contains(filterable, k) {
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "['%s'] is invalid attribute for filtering", k)
			return nil, false
		}
		keys = append(keys, k)
	}
	out := []map[string]any{}
	for _, it := range items {
		keep := true
		for _, k := range keys {
			if !slices.Contains(q[k], scalarString(it[k])) {
				keep = false
			}
		}
		if keep {
			out = append(out, project(it, q["fields"]))
		}
	}
	return out, true
}

func project(it map[string]any, fields []string) map[string]any {
	if len(fields) == 0 {
		return it
	}
	out := map[string]any{}
	for _, f := range fields {
		if v, ok := it[f]; ok {
			out[f] = v
		}
	}
	return out
}

func scalarString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "True"
		}
		return "False"
	default:
		return fmt.Sprint(v)
	}
}

// normaliseBoolQuery lets "true" and "True" filters both match the rendered "True".
func normaliseBoolQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, vs := range q {
		for _, v := range vs {
			switch strings.ToLower(v) {
			case "true":
				v = "True"
			case "false":
				v = "False"
			}
			out[k] = append(out[k], v)
		}
	}
	return out
}

func stringAttr(body map[string]any, key string, def string) (string, bool) {
	v, ok := body[key]
	if !ok || v == nil {
		return def, true
	}
	s, ok := v.(string)
	return s, ok
}

func boolAttr(body map[string]any, key string, def bool) (bool, bool) {
	v, ok := body[key]
	if !ok {
		return def, true
	}
	b, ok := v.(bool)
	return b, ok
}

// attrs reads typed attributes of a request body and remembers whether any had the wrong type,
// because Neutron answers every such mistake with one "Invalid input" error for the resource.
type attrs struct {
	body    map[string]any
	invalid bool
}

func (a *attrs) str(key, def string) string {
	v, ok := stringAttr(a.body, key, def)
	a.invalid = a.invalid || !ok
	return v
}

func (a *attrs) boolean(key string, def bool) bool {
	v, ok := boolAttr(a.body, key, def)
	a.invalid = a.invalid || !ok
	return v
}

func (a *attrs) integer(key string, def int) int {
	v, ok := intAttr(a.body, key, def)
	a.invalid = a.invalid || !ok
	return v
}

func intAttr(body map[string]any, key string, def int) (int, bool) {
	v, ok := body[key]
	if !ok {
		return def, true
	}
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
