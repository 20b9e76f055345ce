package fakecloud

import (
	"net/http"
	"slices"
)

// Neutron service profiles (/v2.0/service_profiles).

func (p *ServiceProfile) render() map[string]any {
	return map[string]any{"id": p.ID, "description": p.Description, "driver": p.Driver,
		"enabled": p.Enabled, "metainfo": p.MetaInfo}
}

func (c *Cloud) findProfile(id string) *ServiceProfile {
	return c.profileIDs.find(c.profiles, id)
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
			if !adminOnly(w, t, "create_service_profile") {
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
				invalidInput(w, "service_profile")
				return
			}
			if !slices.Contains(l3Drivers, p.Driver) {
				neutronError(w, http.StatusNotFound, "ServiceProfileDriverNotFound", "Service Profile driver %s could not be found.", p.Driver)
				return
			}
			c.profiles = append(c.profiles, p)
			c.profileIDs.added(p)
			writeJSON(w, http.StatusCreated, map[string]any{"service_profile": p.render()})
		default:
			methodNotAllowed(w)
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
		if !adminOnly(w, t, "update_service_profile") {
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
			invalidInput(w, "service_profile")
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
		if !adminOnly(w, t, "delete_service_profile") {
			return
		}
		if c.profileBound(p.ID) {
			neutronError(w, http.StatusConflict, "ServiceProfileInUse", "Service Profile %s is used by some service instance.", p.ID)
			return
		}
		c.profiles = slices.DeleteFunc(c.profiles, func(x *ServiceProfile) bool { return x == p })
		c.profileIDs.reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w)
	}
}
