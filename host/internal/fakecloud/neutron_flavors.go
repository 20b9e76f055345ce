package fakecloud

import (
	"net/http"
	"slices"
)

// Neutron flavors (/v2.0/flavors) and their service-profile bindings.

func (f *Flavor) render() map[string]any {
	return map[string]any{"id": f.ID, "name": f.Name, "description": f.Description,
		"service_type": f.ServiceType, "enabled": f.Enabled, "service_profiles": append([]string{}, f.ServiceProfiles...)}
}

func (c *Cloud) findFlavor(id string) *Flavor {
	return c.flavorIDs.find(c.flavors, id)
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
			if !adminOnly(w, t, "create_flavor") {
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
				invalidInput(w, "flavor")
				return
			}
			if f.ServiceType != "L3_ROUTER_NAT" {
				neutronError(w, http.StatusBadRequest, "InvalidServiceType", "Invalid service type: %s.", f.ServiceType)
				return
			}
			c.flavors = append(c.flavors, f)
			c.flavorIDs.added(f)
			writeJSON(w, http.StatusCreated, map[string]any{"flavor": f.render()})
		default:
			methodNotAllowed(w)
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
		if !adminOnly(w, t, "update_flavor") {
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
			invalidInput(w, "flavor")
			return
		}
		f.Name, f.Description, f.Enabled = name, desc, enabled
		writeJSON(w, http.StatusOK, map[string]any{"flavor": f.render()})
	case http.MethodDelete:
		if !adminOnly(w, t, "delete_flavor") {
			return
		}
		if c.flavorInUse(f.ID) {
			neutronError(w, http.StatusConflict, "FlavorInUse", "Flavor %s is used by some service instance.", f.ID)
			return
		}
		c.flavors = slices.DeleteFunc(c.flavors, func(x *Flavor) bool { return x == f })
		c.flavorIDs.reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w)
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
			methodNotAllowed(w)
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
		methodNotAllowed(w)
	}
}
