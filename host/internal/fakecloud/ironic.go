package fakecloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// version is an Ironic microversion "1.N".
type version struct{ major, minor int }

func parseVersion(s string) (version, error) {
	maj, min, ok := strings.Cut(s, ".")
	if !ok {
		return version{}, fmt.Errorf("not MAJOR.MINOR")
	}
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return version{}, fmt.Errorf("not MAJOR.MINOR")
	}
	return version{a, b}, nil
}

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }
func (v version) atLeast(o version) bool {
	return v.major > o.major || v.major == o.major && v.minor >= o.minor
}

var (
	ironicMin       = version{1, 1}
	runbooksVersion = version{1, 92}
	// runbookTraitsVersion adds runbook traits and description and lifts the CUSTOM_* name rule.
	runbookTraitsVersion = version{1, 112}
)

var (
	traitRE           = regexp.MustCompile(`^CUSTOM_[A-Z0-9_]+$`)
	runbookNameRE     = regexp.MustCompile(`^[A-Za-z0-9._~-]{1,255}$`)
	runbookInterfaces = []string{"bios", "deploy", "firmware", "management", "power", "raid", "vendor"}
	patchableRunbook  = []string{"extra", "name", "steps", "description", "public", "owner"}
)

// requestedIronicVersion reads the microversion a request asks for, from the legacy header or
// the generic OpenStack-API-Version header.
func requestedIronicVersion(h http.Header) string {
	if v := h.Get("X-OpenStack-Ironic-API-Version"); v != "" {
		return strings.TrimSpace(v)
	}
	if svc, v, ok := strings.Cut(strings.TrimSpace(h.Get("OpenStack-API-Version")), " "); ok && svc == "baremetal" {
		return strings.TrimSpace(v)
	}
	return ""
}

// RunbookStep is one step of an Ironic runbook, as the API reads it.
type RunbookStep struct {
	Interface string         `json:"interface"`
	Step      string         `json:"step"`
	Args      map[string]any `json:"args"`
	Order     int            `json:"order"`
}

// runbookRec is the exported Runbook plus the timestamps only the API shows.
type runbookRec struct {
	Runbook
	Created time.Time
	Updated *time.Time
}

func ironicError(w http.ResponseWriter, status int, format string, args ...any) {
	inner, _ := json.Marshal(map[string]any{"faultcode": "Client", "faultstring": fmt.Sprintf(format, args...), "debuginfo": nil})
	writeJSON(w, status, map[string]any{"error_message": string(inner)})
}

func ironicVersionError(w http.ResponseWriter, status int, title, desc string) {
	inner, _ := json.Marshal(map[string]any{"code": status, "title": title, "description": desc})
	writeJSON(w, status, map[string]any{"error_message": string(inner)})
}

func (c *Cloud) serveIronic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-OpenStack-Ironic-API-Minimum-Version", ironicMin.String())
	w.Header().Set("X-OpenStack-Ironic-API-Maximum-Version", c.ironicMax.String())
	v, ok := c.negotiateIronic(w, r)
	if !ok {
		return
	}
	w.Header().Set("X-OpenStack-Ironic-API-Version", v.String())
	versionDoc := map[string]any{"id": "v1", "status": "CURRENT", "min_version": ironicMin.String(),
		"version": c.ironicMax.String(), "links": []any{map[string]any{"href": c.ironic.URL + "/v1/", "rel": "self"}}}
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "":
		writeJSON(w, http.StatusOK, map[string]any{"name": "OpenStack Ironic API",
			"default_version": versionDoc, "versions": []any{versionDoc}})
		return
	case "/v1":
		writeJSON(w, http.StatusOK, map[string]any{"id": "v1", "version": versionDoc,
			"links": []any{map[string]any{"href": c.ironic.URL + "/v1/", "rel": "self"}}})
		return
	}
	seg, ok := pathSegments(r.URL.Path, "/v1")
	if !ok || len(seg) == 0 || seg[0] != "runbooks" {
		ironicError(w, http.StatusNotFound, "The resource could not be found.")
		return
	}
	t := c.authenticate(w, r)
	if t == nil {
		return
	}
	if !v.atLeast(runbooksVersion) {
		ironicVersionError(w, http.StatusNotFound, "Not Found", "The API version does not allow runbooks")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(seg) == 1:
		c.ironicRunbooks(w, r, t, v)
	case len(seg) == 2:
		c.ironicRunbook(w, r, t, v, seg[1])
	case len(seg) <= 4 && seg[2] == "traits" && v.atLeast(runbookTraitsVersion):
		c.ironicRunbookTraits(w, r, t, seg[1], seg[3:])
	default:
		ironicError(w, http.StatusBadRequest, "Field(s) \"%s\" are not valid", seg[2])
	}
}

// negotiateIronic picks the request's microversion or writes Ironic's 406.
func (c *Cloud) negotiateIronic(w http.ResponseWriter, r *http.Request) (version, bool) {
	raw := requestedIronicVersion(r.Header)
	switch raw {
	case "":
		return ironicMin, true
	case "latest":
		return c.ironicMax, true
	}
	v, err := parseVersion(raw)
	rangeText := fmt.Sprintf("The supported version range is: [%s, %s].", ironicMin, c.ironicMax)
	switch {
	case err != nil:
		ironicVersionError(w, http.StatusNotAcceptable, "Not Acceptable", "Invalid value for X-OpenStack-Ironic-API-Version header")
	case v.major != 1:
		ironicVersionError(w, http.StatusNotAcceptable, "Not Acceptable", fmt.Sprintf(
			"Mutually exclusive versions requested. Version %s requested but not supported by this service. %s", v, rangeText))
	case !v.atLeast(ironicMin) || !c.ironicMax.atLeast(v):
		ironicVersionError(w, http.StatusNotAcceptable, "Not Acceptable", fmt.Sprintf(
			"Version %s was requested but the minor version is not supported by this service. %s", v, rangeText))
	default:
		return v, true
	}
	return version{}, false
}

func (c *Cloud) runbookVisible(t *token, rb *runbookRec) bool {
	return t.system || rb.Public || rb.Owner != nil && *rb.Owner == t.projectID
}

// ownsRunbook says whether t may change rb: a system-scoped token may change any runbook, a
// project-scoped one only its project's (a public runbook it can see but not change).
func ownsRunbook(t *token, rb *runbookRec) bool {
	return t.system || rb.Owner != nil && *rb.Owner == t.projectID
}

// findRunbook looks a runbook up by name or UUID. One the caller may not see is refused with the
// real server's 403, whose message carries an unformatted placeholder.
func (c *Cloud) findRunbook(w http.ResponseWriter, t *token, ident string) *runbookRec {
	for _, rb := range c.runbooks {
		if rb.UUID == ident || rb.Name == ident {
			if !c.runbookVisible(t, rb) {
				ironicError(w, http.StatusForbidden, "Access was denied to the following resource: %%(resource)s")
				return nil
			}
			return rb
		}
	}
	ironicError(w, http.StatusNotFound, "Runbook %s could not be found.", ident)
	return nil
}

func (c *Cloud) renderRunbook(rb *runbookRec, v version) map[string]any {
	links := []any{
		map[string]any{"href": c.ironic.URL + "/v1/runbooks/" + rb.UUID, "rel": "self"},
		map[string]any{"href": c.ironic.URL + "/runbooks/" + rb.UUID, "rel": "bookmark"},
	}
	steps := []any{}
	for _, s := range rb.Steps {
		steps = append(steps, map[string]any{"interface": s.Interface, "step": s.Step, "args": s.Args, "order": s.Order})
	}
	var updated any
	if rb.Updated != nil {
		updated = rb.Updated.Format("2006-01-02T15:04:05.000000+00:00")
	}
	extra := rb.Extra
	if extra == nil {
		extra = map[string]any{}
	}
	out := map[string]any{"uuid": rb.UUID, "name": rb.Name, "created_at": rb.Created.Format("2006-01-02T15:04:05.000000+00:00"),
		"updated_at": updated, "extra": extra, "public": rb.Public, "owner": rb.Owner,
		"disable_ramdisk": rb.DisableRamdisk, "links": links, "steps": steps}
	if v.atLeast(runbookTraitsVersion) {
		out["description"] = rb.Description
		out["traits"] = append([]string{}, rb.Traits...)
	}
	return out
}

func (c *Cloud) ironicRunbooks(w http.ResponseWriter, r *http.Request, t *token, v version) {
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		limit := 1000
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				ironicError(w, http.StatusBadRequest, "Expected an integer for limit: %s", s)
				return
			}
			if n <= 0 {
				ironicError(w, http.StatusBadRequest, "Limit must be positive")
				return
			}
			limit = min(n, 1000)
		}
		detail := strings.EqualFold(q.Get("detail"), "true")
		var visible []*runbookRec
		for _, rb := range c.runbooks {
			if c.runbookVisible(t, rb) {
				visible = append(visible, rb)
			}
		}
		start := 0
		if m := q.Get("marker"); m != "" {
			i := slices.IndexFunc(visible, func(rb *runbookRec) bool { return rb.UUID == m })
			if i < 0 {
				ironicError(w, http.StatusNotFound, "Runbook %s could not be found.", m)
				return
			}
			start = i + 1
		}
		page := visible[start:min(start+limit, len(visible))]
		items := []any{}
		for _, rb := range page {
			full := c.renderRunbook(rb, v)
			if detail {
				items = append(items, full)
			} else {
				items = append(items, map[string]any{"uuid": rb.UUID, "name": rb.Name, "links": full["links"]})
			}
		}
		body := map[string]any{"runbooks": items}
		// Like the real server, a full page links to the next one even when nothing follows.
		if len(page) == limit && len(page) > 0 {
			shape := "fields=uuid,name"
			if detail {
				shape = "detail=True"
			}
			body["next"] = fmt.Sprintf("%s/v1/runbooks?sort_key=id&sort_dir=asc&%s&limit=%d&marker=%s",
				c.ironic.URL, shape, limit, page[len(page)-1].UUID)
		}
		writeJSON(w, http.StatusOK, body)
	case http.MethodPost:
		c.createRunbook(w, r, t, v)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func validRunbookName(name string, v version) bool {
	if v.atLeast(runbookTraitsVersion) {
		return runbookNameRE.MatchString(name)
	}
	return traitRE.MatchString(name)
}

// decodeSteps validates steps the way Ironic's schema does.
func decodeSteps(raw any) ([]RunbookStep, string) {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		return nil, "steps must be a non-empty list"
	}
	var out []RunbookStep
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, "each step must be an object"
		}
		b, _ := json.Marshal(m)
		var s RunbookStep
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Sprintf("invalid step: %v", err)
		}
		if !slices.Contains(runbookInterfaces, s.Interface) {
			return nil, fmt.Sprintf("'%s' is not one of %v", s.Interface, runbookInterfaces)
		}
		if s.Step == "" || s.Order < 0 {
			return nil, "each step needs a step name and an order >= 0"
		}
		if s.Args == nil {
			s.Args = map[string]any{}
		}
		out = append(out, s)
	}
	return out, ""
}

func (c *Cloud) createRunbook(w http.ResponseWriter, r *http.Request, t *token, v version) {
	if !t.isAdmin() {
		ironicError(w, http.StatusForbidden, "Access was denied to the following resource: baremetal:runbook:create")
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		ironicError(w, http.StatusBadRequest, "Invalid JSON body")
		return
	}
	// Before 1.112 the real server accepts a description and drops it.
	allowed := []string{"name", "steps", "uuid", "disable_ramdisk", "extra", "public", "owner", "description"}
	for k := range body {
		if !slices.Contains(allowed, k) {
			ironicError(w, http.StatusBadRequest, "Schema error for runbook: Additional properties are not allowed ('%s' was unexpected)", k)
			return
		}
	}
	name, _ := body["name"].(string)
	if !validRunbookName(name, v) {
		ironicError(w, http.StatusBadRequest, "Schema error for runbook: '%s' is not valid under any of the given schemas. Possible root cause: '%s' does not match '^CUSTOM_[A-Z0-9_]+$'", name, name)
		return
	}
	steps, problem := decodeSteps(body["steps"])
	if problem != "" {
		ironicError(w, http.StatusBadRequest, "Schema error for runbook: %s", problem)
		return
	}
	rb := &runbookRec{Runbook: Runbook{UUID: newUUID(), Name: name, Steps: steps, Extra: map[string]any{}}, Created: time.Now().UTC()}
	if u, ok := body["uuid"].(string); ok && u != "" {
		rb.UUID = u
	}
	rb.DisableRamdisk, _ = body["disable_ramdisk"].(bool)
	rb.Public, _ = body["public"].(bool)
	if e, ok := body["extra"].(map[string]any); ok {
		rb.Extra = e
	}
	if d, ok := body["description"].(string); ok && v.atLeast(runbookTraitsVersion) {
		rb.Description = &d
	}
	owner, _ := body["owner"].(string)
	if !t.system {
		if rb.Public {
			ironicError(w, http.StatusBadRequest, "Cannot create a public runbook as a project scoped admin.")
			return
		}
		if owner != "" && owner != t.projectID {
			ironicError(w, http.StatusBadRequest, "Cannot create a runbook as a project scoped admin with an owner other than your own project.")
			return
		}
		owner = t.projectID
	}
	if owner != "" {
		rb.Owner = &owner
	}
	for _, o := range c.runbooks {
		if o.Name == rb.Name {
			ironicError(w, http.StatusConflict, "A runbook with name %s already exists.", rb.Name)
			return
		}
	}
	c.runbooks = append(c.runbooks, rb)
	writeJSON(w, http.StatusCreated, c.renderRunbook(rb, v))
}

type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value"`
}

func (c *Cloud) ironicRunbook(w http.ResponseWriter, r *http.Request, t *token, v version, ident string) {
	rb := c.findRunbook(w, t, ident)
	if rb == nil {
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, c.renderRunbook(rb, v))
	case http.MethodDelete:
		if !t.isAdmin() || !ownsRunbook(t, rb) {
			ironicError(w, http.StatusForbidden, "Access was denied to the following resource: baremetal:runbook:delete")
			return
		}
		c.runbooks = slices.DeleteFunc(c.runbooks, func(x *runbookRec) bool { return x == rb })
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPatch:
		c.patchRunbook(w, r, t, v, rb)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (c *Cloud) patchRunbook(w http.ResponseWriter, r *http.Request, t *token, v version, rb *runbookRec) {
	if !t.isAdmin() || !ownsRunbook(t, rb) {
		ironicError(w, http.StatusForbidden, "Access was denied to the following resource: baremetal:runbook:update")
		return
	}
	var ops []patchOp
	if err := json.NewDecoder(r.Body).Decode(&ops); err != nil {
		ironicError(w, http.StatusBadRequest, "Invalid JSON patch")
		return
	}
	next := *rb
	next.Extra = map[string]any{}
	for k, val := range rb.Extra {
		next.Extra[k] = val
	}
	ownerPatched := false
	for _, op := range ops {
		field, sub, _ := strings.Cut(strings.TrimPrefix(op.Path, "/"), "/")
		if !slices.Contains(patchableRunbook, field) {
			ironicError(w, http.StatusBadRequest, "Cannot patch %s. Only the following can be updated: %s", op.Path, strings.Join(patchableRunbook, ", "))
			return
		}
		if field == "description" && !v.atLeast(runbookTraitsVersion) {
			ironicError(w, http.StatusBadRequest, "Adding a new attribute (%s) to the root of the resource is not allowed", op.Path)
			return
		}
		if (field == "public" || field == "owner") && !t.system {
			ironicError(w, http.StatusForbidden, "Access was denied to the following resource: baremetal:runbook:update:%s", field)
			return
		}
		if op.Op != "add" && op.Op != "replace" && op.Op != "remove" {
			ironicError(w, http.StatusBadRequest, "Invalid patch operation %q", op.Op)
			return
		}
		var val any
		if op.Op != "remove" {
			if err := json.Unmarshal(op.Value, &val); err != nil {
				ironicError(w, http.StatusBadRequest, "Invalid value for %s", op.Path)
				return
			}
		}
		if problem := applyRunbookOp(&next, field, sub, op.Op, val, v); problem != "" {
			ironicError(w, http.StatusBadRequest, "%s", problem)
			return
		}
		ownerPatched = ownerPatched || field == "owner"
	}
	if next.Public && next.Owner != nil {
		if ownerPatched {
			ironicError(w, http.StatusBadRequest, "Couldn't apply patch. Reason: There cannot be an owner for a public runbook")
			return
		}
		// Making a runbook public drops its owner on the real server.
		next.Owner = nil
	}
	if next.Name != rb.Name {
		for _, o := range c.runbooks {
			if o != rb && o.Name == next.Name {
				ironicError(w, http.StatusConflict, "A runbook with name %s already exists.", next.Name)
				return
			}
		}
	}
	now := time.Now().UTC()
	next.Updated = &now
	*rb = next
	writeJSON(w, http.StatusOK, c.renderRunbook(rb, v))
}

func applyRunbookOp(rb *runbookRec, field, sub, op string, val any, v version) string {
	switch field {
	case "extra":
		if sub != "" {
			if op == "remove" {
				delete(rb.Extra, sub)
			} else {
				rb.Extra[sub] = val
			}
			return ""
		}
		m, ok := val.(map[string]any)
		if op == "remove" || val == nil {
			m, ok = map[string]any{}, true
		}
		if !ok {
			return "extra must be an object"
		}
		rb.Extra = m
	case "name":
		s, _ := val.(string)
		if op == "remove" || !validRunbookName(s, v) {
			return fmt.Sprintf("Invalid runbook name %q", s)
		}
		rb.Name = s
	case "steps":
		steps, problem := decodeSteps(val)
		if problem != "" {
			return problem
		}
		rb.Steps = steps
	case "description":
		if s, ok := val.(string); ok && op != "remove" {
			rb.Description = &s
		} else {
			rb.Description = nil
		}
	case "public":
		b, ok := val.(bool)
		if !ok && op != "remove" {
			return "public must be a boolean"
		}
		rb.Public = b
	case "owner":
		if s, ok := val.(string); ok && op != "remove" && s != "" {
			rb.Owner = &s
		} else {
			rb.Owner = nil
		}
	}
	return ""
}

// ironicRunbookTraits serves /v1/runbooks/{id}/traits[/{trait}] (microversion 1.112).
func (c *Cloud) ironicRunbookTraits(w http.ResponseWriter, r *http.Request, t *token, ident string, rest []string) {
	rb := c.findRunbook(w, t, ident)
	if rb == nil {
		return
	}
	if r.Method != http.MethodGet && (!t.isAdmin() || !ownsRunbook(t, rb)) {
		ironicError(w, http.StatusForbidden, "Access was denied to the following resource: baremetal:runbook:update")
		return
	}
	if len(rest) == 1 {
		trait := rest[0]
		switch r.Method {
		case http.MethodPut:
			if !traitRE.MatchString(trait) {
				ironicError(w, http.StatusBadRequest, "Invalid trait %s", trait)
				return
			}
			if !slices.Contains(rb.Traits, trait) {
				rb.Traits = append(rb.Traits, trait)
			}
			w.WriteHeader(http.StatusNoContent)
		case http.MethodDelete:
			if !slices.Contains(rb.Traits, trait) {
				ironicError(w, http.StatusNotFound, "Runbook %s has no trait %s.", rb.UUID, trait)
				return
			}
			rb.Traits = slices.DeleteFunc(rb.Traits, func(x string) bool { return x == trait })
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"traits": append([]string{}, rb.Traits...)})
	case http.MethodPut:
		var body struct {
			Traits []string `json:"traits"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			ironicError(w, http.StatusBadRequest, "Invalid JSON body")
			return
		}
		for _, tr := range body.Traits {
			if !traitRE.MatchString(tr) {
				ironicError(w, http.StatusBadRequest, "Invalid trait %s", tr)
				return
			}
		}
		slices.Sort(body.Traits)
		rb.Traits = slices.Compact(body.Traits)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		rb.Traits = nil
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}
