package fakecloud

import (
	"net/http"
	"slices"
	"time"
)

// routerRec is the exported Router (the state tests seed and read) plus what only the API shows.
type routerRec struct {
	Router
	Created time.Time
}

func (rt *routerRec) render() map[string]any {
	ts := rt.Created.Format(time.RFC3339)
	return map[string]any{"id": rt.ID, "name": rt.Name, "tenant_id": rt.ProjectID, "project_id": rt.ProjectID,
		"admin_state_up": true, "status": "ACTIVE", "external_gateway_info": nil, "description": "",
		"availability_zones": []any{}, "distributed": false, "ha": false, "availability_zone_hints": []any{},
		"routes": []any{}, "flavor_id": nilIfEmpty(rt.FlavorID), "tags": []any{}, "created_at": ts,
		"updated_at": ts, "revision_number": 1}
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
			methodNotAllowed(w)
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
		methodNotAllowed(w)
	}
}
