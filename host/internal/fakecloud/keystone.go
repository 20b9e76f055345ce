package fakecloud

import (
	"encoding/json"
	"net/http"
	"time"
)

func (c *Cloud) serveKeystone(w http.ResponseWriter, r *http.Request) {
	v3 := map[string]any{"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links": []any{map[string]any{"rel": "self", "href": c.keystone.URL + "/v3/"}}}
	switch r.URL.Path {
	case "/":
		// Version discovery, for an unversioned auth_url.
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{v3}}})
	case "/v3", "/v3/":
		writeJSON(w, http.StatusOK, map[string]any{"version": v3})
	case "/v3/auth/tokens":
		switch r.Method {
		case http.MethodPost:
			c.issueToken(w, r)
		case http.MethodGet, http.MethodHead:
			c.validateToken(w, r)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	default:
		if t := c.authenticate(w, r); t == nil || c.serveKnown(Identity, w, r, t, "") {
			return
		}
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"code": 404, "title": "Not Found", "message": "The resource could not be found."}})
	}
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods               []string `json:"methods"`
			ApplicationCredential *struct {
				ID     string `json:"id"`
				Name   string `json:"name"`
				Secret string `json:"secret"`
				User   *struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"user"`
			} `json:"application_credential"`
			Password struct {
				User struct {
					ID       string `json:"id"`
					Name     string `json:"name"`
					Password string `json:"password"`
					Domain   struct {
						ID   string `json:"id"`
						Name string `json:"name"`
					} `json:"domain"`
				} `json:"user"`
			} `json:"password"`
		} `json:"identity"`
		Scope *struct {
			Project *struct {
				ID     string `json:"id"`
				Name   string `json:"name"`
				Domain struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"domain"`
			} `json:"project"`
			System *struct {
				All bool `json:"all"`
			} `json:"system"`
		} `json:"scope"`
	} `json:"auth"`
}

func (c *Cloud) issueToken(w http.ResponseWriter, r *http.Request) {
	var req authRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"code": 400, "title": "Bad Request", "message": "Expecting to find auth in request body."}})
		return
	}
	if ac := req.Auth.Identity.ApplicationCredential; ac != nil {
		c.issueAppCredToken(w, ac.ID, ac.Name, ac.Secret, ac.User)
		return
	}
	pw := req.Auth.Identity.Password.User
	c.mu.Lock()
	var u *user
	for _, cand := range c.users {
		if pw.ID != "" && cand.id == pw.ID || pw.ID == "" && cand.name == pw.Name {
			u = cand
		}
	}
	if u == nil || u.password != pw.Password {
		c.mu.Unlock()
		writeKeystoneUnauthorized(w)
		return
	}
	t := &token{user: u, expires: time.Now().Add(c.opts.TokenTTL).UTC()}
	projectName := ""
	if s := req.Auth.Scope; s != nil && s.System != nil && s.System.All {
		if !t.isAdmin() {
			c.mu.Unlock()
			writeKeystoneUnauthorized(w)
			return
		}
		t.system = true
	} else if s != nil && s.Project != nil {
		for name, id := range c.projects {
			if s.Project.ID != "" && id == s.Project.ID || s.Project.ID == "" && name == s.Project.Name {
				projectName = name
			}
		}
		// A user only gets a token for the project it has a role on.
		if projectName != u.project {
			c.mu.Unlock()
			writeKeystoneUnauthorized(w)
			return
		}
		t.projectID = c.projects[projectName]
	}
	id := newHexID() + newHexID()
	c.tokens[id] = t
	c.mu.Unlock()

	w.Header().Set("X-Subject-Token", id)
	writeJSON(w, http.StatusCreated, map[string]any{"token": c.tokenBody(t, projectName)})
}

// issueAppCredToken authenticates with an application credential, which carries its own project
// scope; by name it needs the owning user.
func (c *Cloud) issueAppCredToken(w http.ResponseWriter, id, name, secret string, owner *struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}) {
	c.mu.Lock()
	var found *appCred
	for _, ac := range c.appCreds {
		byName := owner != nil && ac.name == name && (ac.user.id == owner.ID || ac.user.name == owner.Name)
		if (id != "" && ac.id == id || id == "" && byName) && ac.secret == secret {
			found = ac
		}
	}
	if found == nil {
		c.mu.Unlock()
		writeKeystoneUnauthorized(w)
		return
	}
	t := &token{user: found.user, projectID: c.projects[found.user.project], expires: time.Now().Add(c.opts.TokenTTL).UTC()}
	tokenID := newHexID() + newHexID()
	c.tokens[tokenID] = t
	project := found.user.project
	c.mu.Unlock()
	w.Header().Set("X-Subject-Token", tokenID)
	writeJSON(w, http.StatusCreated, map[string]any{"token": c.tokenBody(t, project)})
}

func (c *Cloud) tokenBody(t *token, projectName string) map[string]any {
	roles := []any{}
	for _, r := range t.user.roles {
		roles = append(roles, map[string]any{"id": r, "name": r})
	}
	body := map[string]any{
		"methods":    []string{"password"},
		"user":       map[string]any{"id": t.user.id, "name": t.user.name, "domain": map[string]any{"id": "default", "name": "Default"}},
		"expires_at": t.expires.Format("2006-01-02T15:04:05.000000Z"),
		"issued_at":  time.Now().UTC().Format("2006-01-02T15:04:05.000000Z"),
		"roles":      roles,
		"catalog":    c.catalog(),
	}
	if t.system {
		body["system"] = map[string]any{"all": true}
	} else if t.projectID != "" {
		body["project"] = map[string]any{"id": t.projectID, "name": projectName,
			"domain": map[string]any{"id": "default", "name": "Default"}}
	}
	return body
}

func (c *Cloud) catalog() []any {
	ep := func(iface, url string) map[string]any {
		return map[string]any{"id": newHexID(), "interface": iface, "region_id": region,
			"region": region, "url": url}
	}
	return []any{
		map[string]any{"id": newHexID(), "type": Identity, "name": "keystone", "endpoints": []any{
			ep("internal", c.keystone.URL+"/v3/"), ep("public", c.keystone.URL+"/v3/")}},
		map[string]any{"id": newHexID(), "type": Network, "name": "neutron", "endpoints": []any{
			ep("public", c.NetworkURL())}},
		map[string]any{"id": newHexID(), "type": Baremetal, "name": "ironic", "endpoints": []any{
			ep("public", c.BaremetalURL())}},
	}
}

// validateToken answers Keystone's token validation: the caller's X-Auth-Token must be valid, and
// the token in X-Subject-Token is the one checked.
func (c *Cloud) validateToken(w http.ResponseWriter, r *http.Request) {
	if c.authenticate(w, r) == nil {
		return
	}
	c.mu.Lock()
	subject, ok := c.tokens[r.Header.Get("X-Subject-Token")]
	if ok && time.Now().After(subject.expires) {
		ok = false
	}
	projectName := ""
	if ok {
		for name, id := range c.projects {
			if id == subject.projectID {
				projectName = name
			}
		}
	}
	c.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"code": 404, "title": "Not Found", "message": "Could not find token."}})
		return
	}
	w.Header().Set("X-Subject-Token", r.Header.Get("X-Subject-Token"))
	writeJSON(w, http.StatusOK, map[string]any{"token": c.tokenBody(subject, projectName)})
}
