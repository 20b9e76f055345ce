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
	"time"
)

// routerRec and rangeRec are the exported Router and SegmentRange (the state tests seed and read)
// plus what only the API shows.
type routerRec struct {
	Router
	Created time.Time
}

type rangeRec struct {
	SegmentRange
	Revision int
	Created  time.Time
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

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
	for _, a := range []string{"flavors", "l3-flavors", "network-segment-range", "router", "segment", "subnet_allocation"} {
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

// ---- flavors ----

func (f *Flavor) render() map[string]any {
	return map[string]any{"id": f.ID, "name": f.Name, "description": f.Description,
		"service_type": f.ServiceType, "enabled": f.Enabled, "service_profiles": append([]string{}, f.ServiceProfiles...)}
}

func (c *Cloud) findFlavor(id string) *Flavor {
	for _, f := range c.flavors {
		if f.ID == id {
			return f
		}
	}
	return nil
}

func (c *Cloud) flavorInUse(id string) bool {
	for _, r := range c.routers {
		if r.FlavorID == id {
			return true
		}
	}
	return false
}

func (c *Cloud) neutronFlavors(w http.ResponseWriter, r *http.Request, t *token, rest []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			var items []map[string]any
			for _, f := range c.flavors {
				items = append(items, f.render())
			}
			out, ok := filterList(w, normaliseBoolQuery(r.URL.Query()), items, "id", "name", "description", "service_type", "enabled")
			if ok {
				writeJSON(w, http.StatusOK, map[string]any{"flavors": out})
			}
		case http.MethodPost:
			if !t.isAdmin() {
				policyRefused(w, "create_flavor")
				return
			}
			body, ok := readBody(w, r, "flavor", "name", "description", "service_type", "enabled", "project_id", "tenant_id")
			if !ok {
				return
			}
			f := &Flavor{ID: newUUID(), Enabled: true}
			in := attrs{body: body}
			f.Name = in.str("name", "")
			f.Description = in.str("description", "")
			f.ServiceType = in.str("service_type", "")
			f.Enabled = in.boolean("enabled", true)
			if in.invalid {
				neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for flavor")
				return
			}
			if f.ServiceType != "L3_ROUTER_NAT" {
				neutronError(w, http.StatusBadRequest, "InvalidServiceType", "Invalid service type: %s.", f.ServiceType)
				return
			}
			c.flavors = append(c.flavors, f)
			writeJSON(w, http.StatusCreated, map[string]any{"flavor": f.render()})
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
		return
	}
	f := c.findFlavor(rest[0])
	if f == nil {
		neutronError(w, http.StatusNotFound, "FlavorNotFound", "Flavor %s could not be found.", rest[0])
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"flavor": project(f.render(), r.URL.Query()["fields"])})
	case http.MethodPut:
		if !t.isAdmin() {
			policyRefused(w, "update_flavor")
			return
		}
		body, ok := readBody(w, r, "flavor", "name", "description", "service_type", "enabled", "id", "service_profiles")
		if !ok || !readOnly(w, body, "id", "service_type", "service_profiles") {
			return
		}
		in := attrs{body: body}
		name := in.str("name", f.Name)
		desc := in.str("description", f.Description)
		enabled := in.boolean("enabled", f.Enabled)
		if in.invalid {
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for flavor")
			return
		}
		f.Name, f.Description, f.Enabled = name, desc, enabled
		writeJSON(w, http.StatusOK, map[string]any{"flavor": f.render()})
	case http.MethodDelete:
		if !t.isAdmin() {
			policyRefused(w, "delete_flavor")
			return
		}
		if c.flavorInUse(f.ID) {
			neutronError(w, http.StatusConflict, "FlavorInUse", "Flavor %s is used by some service instance.", f.ID)
			return
		}
		c.flavors = slices.DeleteFunc(c.flavors, func(x *Flavor) bool { return x == f })
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// neutronBindings serves /flavors/{id}/service_profiles[/{profile}].
func (c *Cloud) neutronBindings(w http.ResponseWriter, r *http.Request, t *token, flavorID string, rest []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.isAdmin() {
		policyRefused(w, map[string]string{http.MethodGet: "get_flavor_service_profile",
			http.MethodPost: "create_flavor_service_profile", http.MethodDelete: "delete_flavor_service_profile"}[r.Method])
		return
	}
	f := c.findFlavor(flavorID)
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodPost:
			body, ok := readBody(w, r, "service_profile", "id", "project_id", "tenant_id")
			if !ok {
				return
			}
			pid, _ := stringAttr(body, "id", "")
			if !uuidRE.MatchString(pid) {
				neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for id. Reason: '%s' is not a valid UUID.", pid)
				return
			}
			if f == nil {
				// Neutron fails with an internal error here rather than a 404.
				neutronError(w, http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed: internal server error while processing your request.")
				return
			}
			if c.findProfile(pid) == nil {
				neutronError(w, http.StatusNotFound, "ServiceProfileNotFound", "Service Profile %s could not be found.", pid)
				return
			}
			if slices.Contains(f.ServiceProfiles, pid) {
				neutronError(w, http.StatusConflict, "FlavorServiceProfileBindingExists",
					"Service Profile %s is already associated with flavor %s.", pid, f.ID)
				return
			}
			f.ServiceProfiles = append(f.ServiceProfiles, pid)
			// The real server answers with the flavor's id in service_profile.id.
			writeJSON(w, http.StatusCreated, map[string]any{"service_profile": map[string]any{"id": f.ID}})
		case http.MethodGet:
			neutronError(w, http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed: internal server error while processing your request.")
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
		return
	}
	pid := rest[0]
	if f == nil {
		neutronError(w, http.StatusNotFound, "FlavorNotFound", "Flavor %s could not be found.", flavorID)
		return
	}
	if !slices.Contains(f.ServiceProfiles, pid) {
		neutronError(w, http.StatusNotFound, "FlavorServiceProfileBindingNotFound",
			"Service Profile %s is not associated with flavor %s.", pid, f.ID)
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"service_profile": map[string]any{}})
	case http.MethodDelete:
		f.ServiceProfiles = slices.DeleteFunc(f.ServiceProfiles, func(x string) bool { return x == pid })
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// ---- service profiles ----

func (p *ServiceProfile) render() map[string]any {
	return map[string]any{"id": p.ID, "description": p.Description, "driver": p.Driver,
		"enabled": p.Enabled, "metainfo": p.MetaInfo}
}

func (c *Cloud) findProfile(id string) *ServiceProfile {
	for _, p := range c.profiles {
		if p.ID == id {
			return p
		}
	}
	return nil
}

func (c *Cloud) profileBound(id string) bool {
	for _, f := range c.flavors {
		if slices.Contains(f.ServiceProfiles, id) {
			return true
		}
	}
	return false
}

func (c *Cloud) neutronProfiles(w http.ResponseWriter, r *http.Request, t *token, rest []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			var items []map[string]any
			if t.isAdmin() { // profiles are admin-only: others list nothing
				for _, p := range c.profiles {
					items = append(items, p.render())
				}
			}
			out, ok := filterList(w, normaliseBoolQuery(r.URL.Query()), items, "id", "description", "driver", "enabled")
			if ok {
				writeJSON(w, http.StatusOK, map[string]any{"service_profiles": out})
			}
		case http.MethodPost:
			if !t.isAdmin() {
				policyRefused(w, "create_service_profile")
				return
			}
			body, ok := readBody(w, r, "service_profile", "description", "driver", "metainfo", "enabled", "project_id", "tenant_id")
			if !ok {
				return
			}
			p := &ServiceProfile{ID: newUUID()}
			in := attrs{body: body}
			p.Description = in.str("description", "")
			p.Driver = in.str("driver", "")
			p.MetaInfo = in.str("metainfo", "")
			p.Enabled = in.boolean("enabled", true)
			if in.invalid {
				neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for service_profile")
				return
			}
			if !slices.Contains(l3Drivers, p.Driver) {
				neutronError(w, http.StatusNotFound, "ServiceProfileDriverNotFound", "Service Profile driver %s could not be found.", p.Driver)
				return
			}
			c.profiles = append(c.profiles, p)
			writeJSON(w, http.StatusCreated, map[string]any{"service_profile": p.render()})
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
		return
	}
	p := c.findProfile(rest[0])
	if p == nil || !t.isAdmin() && r.Method == http.MethodGet {
		neutronError(w, http.StatusNotFound, "ServiceProfileNotFound", "Service Profile %s could not be found.", rest[0])
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"service_profile": project(p.render(), r.URL.Query()["fields"])})
	case http.MethodPut:
		if !t.isAdmin() {
			policyRefused(w, "update_service_profile")
			return
		}
		body, ok := readBody(w, r, "service_profile", "description", "driver", "metainfo", "enabled", "id")
		if !ok || !readOnly(w, body, "id") {
			return
		}
		in := attrs{body: body}
		desc := in.str("description", p.Description)
		driver := in.str("driver", p.Driver)
		meta := in.str("metainfo", p.MetaInfo)
		enabled := in.boolean("enabled", p.Enabled)
		if in.invalid {
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for service_profile")
			return
		}
		if c.profileBound(p.ID) {
			neutronError(w, http.StatusConflict, "ServiceProfileInUse", "Service Profile %s is used by some service instance.", p.ID)
			return
		}
		if !slices.Contains(l3Drivers, driver) {
			neutronError(w, http.StatusNotFound, "ServiceProfileDriverNotFound", "Service Profile driver %s could not be found.", driver)
			return
		}
		p.Description, p.Driver, p.MetaInfo, p.Enabled = desc, driver, meta, enabled
		writeJSON(w, http.StatusOK, map[string]any{"service_profile": p.render()})
	case http.MethodDelete:
		if !t.isAdmin() {
			policyRefused(w, "delete_service_profile")
			return
		}
		if c.profileBound(p.ID) {
			neutronError(w, http.StatusConflict, "ServiceProfileInUse", "Service Profile %s is used by some service instance.", p.ID)
			return
		}
		c.profiles = slices.DeleteFunc(c.profiles, func(x *ServiceProfile) bool { return x == p })
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// ---- routers ----

func (rt *routerRec) render() map[string]any {
	ts := rt.Created.Format(time.RFC3339)
	return map[string]any{"id": rt.ID, "name": rt.Name, "tenant_id": rt.ProjectID, "project_id": rt.ProjectID,
		"admin_state_up": true, "status": "ACTIVE", "external_gateway_info": nil, "description": "",
		"availability_zones": []any{}, "distributed": false, "ha": false, "availability_zone_hints": []any{},
		"routes": []any{}, "flavor_id": nilIfEmpty(rt.FlavorID), "tags": []any{}, "created_at": ts,
		"updated_at": ts, "revision_number": 1}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (c *Cloud) neutronRouters(w http.ResponseWriter, r *http.Request, t *token, rest []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	visible := func(rt *routerRec) bool { return t.isAdmin() || rt.ProjectID == t.projectID }
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			var items []map[string]any
			for _, rt := range c.routers {
				if visible(rt) {
					items = append(items, rt.render())
				}
			}
			// flavor_id is not a filter attribute on the real server.
			out, ok := filterList(w, normaliseBoolQuery(r.URL.Query()), items, "id", "name", "description", "project_id", "tenant_id", "admin_state_up")
			if ok {
				writeJSON(w, http.StatusOK, map[string]any{"routers": out})
			}
		case http.MethodPost:
			body, ok := readBody(w, r, "router", "name", "flavor_id", "admin_state_up", "description", "project_id", "tenant_id", "external_gateway_info")
			if !ok {
				return
			}
			name, _ := stringAttr(body, "name", "")
			flavorID, _ := stringAttr(body, "flavor_id", "")
			if flavorID != "" {
				f := c.findFlavor(flavorID)
				if f == nil {
					neutronError(w, http.StatusNotFound, "FlavorNotFound", "Flavor %s could not be found.", flavorID)
					return
				}
				if len(f.ServiceProfiles) == 0 {
					neutronError(w, http.StatusNotFound, "FlavorServiceProfileBindingNotFound",
						"Service Profile  is not associated with flavor %s.", f.ID)
					return
				}
				if !slices.ContainsFunc(f.ServiceProfiles, func(id string) bool { p := c.findProfile(id); return p != nil && p.Enabled }) {
					neutronError(w, http.StatusServiceUnavailable, "ServiceProfileDisabled", "Service Profile is not enabled.")
					return
				}
			}
			rt := &routerRec{Router: Router{ID: newUUID(), Name: name, FlavorID: flavorID, ProjectID: t.projectID}, Created: time.Now().UTC()}
			c.routers = append(c.routers, rt)
			writeJSON(w, http.StatusCreated, map[string]any{"router": rt.render()})
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
		return
	}
	var rt *routerRec
	for _, x := range c.routers {
		if x.ID == rest[0] && visible(x) {
			rt = x
		}
	}
	if rt == nil {
		neutronError(w, http.StatusNotFound, "RouterNotFound", "Router %s could not be found", rest[0])
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"router": project(rt.render(), r.URL.Query()["fields"])})
	case http.MethodDelete:
		c.routers = slices.DeleteFunc(c.routers, func(x *routerRec) bool { return x == rt })
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

// ---- network segment ranges ----

// segmentLimits are the id spaces of the network types that support segment ranges.
var segmentLimits = map[string][2]int{"vlan": {1, 4094}, "vxlan": {1, 1<<24 - 1}, "geneve": {1, 1<<24 - 1}}

// render shapes a range as Neutron does; created says whether this is the create answer, which
// (unlike show, list and update) always carries project_id and physical_network.
func (s *rangeRec) render(created bool) map[string]any {
	ts := s.Created.Format(time.RFC3339)
	out := map[string]any{"id": s.ID, "default": s.Default, "shared": s.Shared, "network_type": s.NetworkType,
		"minimum": s.Minimum, "maximum": s.Maximum, "revision_number": s.Revision, "created_at": ts,
		"used": map[string]any{}, "tags": []any{}, "available": s.available()}
	if !s.Default {
		out["name"] = s.Name
		out["description"] = s.Description
		out["updated_at"] = ts
	} else {
		out["description"] = nil
	}
	if s.PhysicalNetwork != "" || created {
		out["physical_network"] = nilIfEmpty(s.PhysicalNetwork)
	}
	if s.ProjectID != "" || created {
		out["project_id"] = nilIfEmpty(s.ProjectID)
	}
	return out
}

// available lists the free segment ids; the fake allocates none, so that is the whole range.
func (s *rangeRec) available() []int {
	out := make([]int, 0, max(s.Maximum-s.Minimum+1, 0))
	for i := s.Minimum; i <= s.Maximum; i++ {
		out = append(out, i)
	}
	return out
}

func (c *Cloud) seedDefaultRanges() {
	now := time.Now().UTC()
	for _, d := range []SegmentRange{
		{NetworkType: "vxlan", Minimum: 1000, Maximum: 1999},
		{NetworkType: "vlan", PhysicalNetwork: "physnet1", Minimum: 100, Maximum: 199},
		{NetworkType: "geneve", Minimum: 5000, Maximum: 5999},
	} {
		d.ID, d.Default, d.Shared = newUUID(), true, true
		c.ranges = append(c.ranges, &rangeRec{SegmentRange: d, Created: now})
	}
}

// validRangeBounds checks a range the way the type drivers do; they fail with a 500, not a 400.
func (c *Cloud) validRangeBounds(w http.ResponseWriter, networkType string, lo, hi int) bool {
	limit := segmentLimits[networkType][1]
	if networkType == "vlan" {
		switch {
		case lo > hi:
			neutronError(w, http.StatusInternalServerError, "NetworkVlanRangeError",
				"Invalid network VLAN range: '%d:%d' - 'End of VLAN range is less than start of VLAN range'.", lo, hi)
		case hi > limit:
			neutronError(w, http.StatusInternalServerError, "NetworkVlanRangeError",
				"Invalid network VLAN range: '%d:%d' - '%d is not a valid VLAN tag'.", lo, hi, hi)
		default:
			return true
		}
		return false
	}
	switch {
	case lo > hi:
		neutronError(w, http.StatusInternalServerError, "NetworkTunnelRangeError",
			"Invalid network tunnel range: '%d:%d' - End of tunnel range is less than start of tunnel range.", lo, hi)
	case hi > limit:
		neutronError(w, http.StatusInternalServerError, "NetworkTunnelRangeError",
			"Invalid network tunnel range: '%d:%d' - %d is not a valid %s identifier.", lo, hi, hi, networkType)
	default:
		return true
	}
	return false
}

func (c *Cloud) overlapping(s *rangeRec) *rangeRec {
	for _, o := range c.ranges {
		if o != s && o.NetworkType == s.NetworkType && o.PhysicalNetwork == s.PhysicalNetwork &&
			o.Minimum <= s.Maximum && s.Minimum <= o.Maximum {
			return o
		}
	}
	return nil
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

func (c *Cloud) neutronRanges(w http.ResponseWriter, r *http.Request, t *token, rest []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			var items []map[string]any
			if t.isAdmin() { // ranges are admin-only: others list nothing
				for _, s := range c.ranges {
					items = append(items, s.render(false))
				}
			}
			out, ok := filterList(w, normaliseBoolQuery(r.URL.Query()), items, "id", "name", "description", "network_type",
				"physical_network", "project_id")
			if ok {
				writeJSON(w, http.StatusOK, map[string]any{"network_segment_ranges": out})
			}
		case http.MethodPost:
			c.createRange(w, r, t)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
		return
	}
	var s *rangeRec
	for _, x := range c.ranges {
		if x.ID == rest[0] {
			s = x
		}
	}
	if !t.isAdmin() {
		// The range is invisible to a non-admin, so every call on it is "not found".
		neutronError(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
		return
	}
	if s == nil {
		neutronError(w, http.StatusNotFound, "NetworkSegmentRangeNotFound", "Network Segment Range %s could not be found.", rest[0])
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"network_segment_range": project(s.render(false), r.URL.Query()["fields"])})
	case http.MethodPut:
		body, ok := readBody(w, r, "network_segment_range", "name", "description", "minimum", "maximum",
			"network_type", "physical_network", "project_id", "shared", "id", "default")
		if !ok || !readOnly(w, body, "id", "default", "network_type", "physical_network", "project_id", "shared") {
			return
		}
		in := attrs{body: body}
		name := in.str("name", s.Name)
		desc := in.str("description", s.Description)
		lo := in.integer("minimum", s.Minimum)
		hi := in.integer("maximum", s.Maximum)
		if in.invalid {
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for network_segment_range")
			return
		}
		if !c.validRangeBounds(w, s.NetworkType, lo, hi) {
			return
		}
		next := *s
		next.Name, next.Description, next.Minimum, next.Maximum = name, desc, lo, hi
		if o := c.overlapping(&next); o != nil && o != s {
			neutronError(w, http.StatusConflict, "NetworkSegmentRangeOverlaps", "Network segment range overlaps with range(s) with id %s", o.ID)
			return
		}
		next.Revision++
		*s = next
		writeJSON(w, http.StatusOK, map[string]any{"network_segment_range": s.render(false)})
	case http.MethodDelete:
		c.ranges = slices.DeleteFunc(c.ranges, func(x *rangeRec) bool { return x == s })
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (c *Cloud) createRange(w http.ResponseWriter, r *http.Request, t *token) {
	if !t.isAdmin() {
		policyRefused(w, "create_network_segment_range")
		return
	}
	body, ok := readBody(w, r, "network_segment_range", "name", "description", "minimum", "maximum",
		"network_type", "physical_network", "project_id", "tenant_id", "shared")
	if !ok {
		return
	}
	s := &rangeRec{SegmentRange: SegmentRange{ID: newUUID()}, Created: time.Now().UTC()}
	in := attrs{body: body}
	s.Name = in.str("name", "")
	s.Description = in.str("description", "")
	s.NetworkType = in.str("network_type", "")
	s.PhysicalNetwork = in.str("physical_network", "")
	s.ProjectID = in.str("project_id", "")
	s.Shared = in.boolean("shared", true)
	s.Minimum = in.integer("minimum", 0)
	s.Maximum = in.integer("maximum", 0)
	if in.invalid {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for network_segment_range")
		return
	}
	if !slices.Contains([]string{"vlan", "vxlan", "gre", "geneve"}, s.NetworkType) {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for network_type. Reason: %s is not in valid_values.", s.NetworkType)
		return
	}
	if _, supported := segmentLimits[s.NetworkType]; !supported {
		neutronError(w, http.StatusBadRequest, "NetworkSegmentRangeNetTypeNotSupported",
			"Network type %s does not support network segment ranges.", s.NetworkType)
		return
	}
	if s.NetworkType == "vlan" && s.PhysicalNetwork == "" {
		neutronError(w, http.StatusBadRequest, "BadRequest", "Bad network_segment_range request: Network type vlan requires 'physical_network' to be specified while creating new range.")
		return
	}
	if s.NetworkType != "vlan" {
		s.PhysicalNetwork = "" // the real server drops it silently
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"minimum", s.Minimum}, {"maximum", s.Maximum}} {
		if b.v < 1 {
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for %s. Reason: '%d' is too small - must be at least '1'.", b.name, b.v)
			return
		}
	}
	if !c.validRangeBounds(w, s.NetworkType, s.Minimum, s.Maximum) {
		return
	}
	if s.Shared {
		s.ProjectID = ""
	} else if s.ProjectID == "" {
		s.ProjectID = t.projectID
	}
	if o := c.overlapping(s); o != nil {
		neutronError(w, http.StatusConflict, "NetworkSegmentRangeOverlaps", "Network segment range overlaps with range(s) with id %s", o.ID)
		return
	}
	c.ranges = append(c.ranges, s)
	writeJSON(w, http.StatusCreated, map[string]any{"network_segment_range": s.render(true)})
}
