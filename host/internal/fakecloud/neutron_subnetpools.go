package fakecloud

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SubnetPool is a Neutron subnet pool as the fake stores it. The rules the subnet pools plugin
// relies on are real Neutron's, pinned against it by the contract suite
// (host/internal/openstack/contract/testdata/neutron-subnet-pools.yaml):
//
//   - prefixes are stored normalised (host bits cleared) and merged (10.0.0.0/24 and 10.0.1.0/24
//     become 10.0.0.0/23); one pool holds one IP family;
//   - an update may only grow the prefixes (IllegalSubnetPoolPrefixUpdate, 400); shared,
//     ip_version and project_id are read-only; tags are not accepted in a POST;
//   - one default pool per IP family (InvalidInput, 400); is_default and shared are admin-only;
//   - pools of one address scope must not overlap (AddressScopePrefixConflict, 409), and a pool's
//     family must be its scope's;
//   - min_prefixlen, default_prefixlen and max_prefixlen read back as strings from show and list
//     (and from the create answer), as numbers from the update answer;
//   - a pool with allocations cannot be deleted (SubnetPoolDeleteError, 400, not 409).
type SubnetPool struct {
	ID, Name, ProjectID, Description, AddressScopeID string
	Prefixes                                         []string
	IPVersion                                        int
	MinPrefixLen, DefaultPrefixLen, MaxPrefixLen     int
	Shared, IsDefault                                bool
	Tags                                             []string
	// InUse stands for subnets allocated from the pool (the fake has no subnets): a delete fails.
	InUse bool
}

type subnetPoolRec struct {
	SubnetPool
	Revision         int
	Created, Updated time.Time
}

// render shapes a pool as Neutron does: the prefix lengths are strings from show and list (and
// the create answer), numbers from an update's answer.
func (p *subnetPoolRec) render(lengthsAsNumbers bool) map[string]any {
	length := func(n int) any {
		if lengthsAsNumbers {
			return n
		}
		return strconv.Itoa(n)
	}
	tags := slices.Clone(p.Tags)
	slices.Sort(tags)
	if tags == nil {
		tags = []string{}
	}
	return map[string]any{"id": p.ID, "name": p.Name, "project_id": p.ProjectID, "tenant_id": p.ProjectID,
		"description": p.Description, "prefixes": slices.Clone(p.Prefixes), "ip_version": p.IPVersion,
		"min_prefixlen": length(p.MinPrefixLen), "default_prefixlen": length(p.DefaultPrefixLen),
		"max_prefixlen": length(p.MaxPrefixLen), "shared": p.Shared, "is_default": p.IsDefault,
		"address_scope_id": nilIfEmpty(p.AddressScopeID), "default_quota": nil, "tags": tags,
		"revision_number": p.Revision, "created_at": p.Created.Format(time.RFC3339), "updated_at": p.Updated.Format(time.RFC3339)}
}

// SubnetPools returns the subnet pools in creation order.
func (c *Cloud) SubnetPools() []SubnetPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []SubnetPool
	for _, p := range c.pools {
		cp := p.SubnetPool
		cp.Prefixes, cp.Tags = slices.Clone(p.Prefixes), slices.Clone(p.Tags)
		out = append(out, cp)
	}
	return out
}

// AddSubnetPool seeds a subnet pool without the API's checks (e.g. one an earlier tool made,
// untagged and unscoped); the prefixes are stored as Neutron would store them.
func (c *Cloud) AddSubnetPool(p SubnetPool) SubnetPool {
	if p.ID == "" {
		p.ID = newUUID()
	}
	nets, version, err := parsePrefixes(p.Prefixes)
	if err != nil {
		panic("fakecloud: AddSubnetPool: " + err.Error())
	}
	p.Prefixes, p.IPVersion = prefixStrings(mergePrefixes(nets)), version
	lo, def, hi := defaultLengths(version)
	if p.MinPrefixLen == 0 {
		p.MinPrefixLen = lo
	}
	if p.DefaultPrefixLen == 0 {
		p.DefaultPrefixLen = max(def, p.MinPrefixLen)
	}
	if p.MaxPrefixLen == 0 {
		p.MaxPrefixLen = hi
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if p.ProjectID == "" {
		p.ProjectID = c.projects["admin"]
	}
	now := time.Now().UTC()
	rec := &subnetPoolRec{SubnetPool: p, Created: now, Updated: now}
	rec.Tags = slices.Clone(p.Tags)
	c.pools = append(c.pools, rec)
	return p
}

// SetSubnetPoolInUse marks a pool as having allocations (or not), as subnets made from it would.
func (c *Cloud) SetSubnetPoolInUse(id string, inUse bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pools {
		if p.ID == id {
			p.InUse = inUse
		}
	}
}

// defaultLengths are Neutron's prefix lengths for a pool that names none: the smallest is 8
// (IPv4) or 64 (IPv6), the default the smallest, the largest the family's.
func defaultLengths(version int) (lo, def, hi int) {
	if version == 6 {
		return 64, 64, 128
	}
	return 8, 8, 32
}

func parsePrefixes(in []string) ([]netip.Prefix, int, error) {
	var out []netip.Prefix
	version := 0
	for _, s := range in {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, 0, fmt.Errorf("'%s' is not a valid IP subnet", s)
		}
		v := 4
		if p.Addr().Is6() {
			v = 6
		}
		if version != 0 && v != version {
			return nil, -1, fmt.Errorf("mixed")
		}
		version = v
		out = append(out, p.Masked())
	}
	return out, version, nil
}

// mergePrefixes is Neutron's compaction of a pool's prefixes (netaddr.cidr_merge): covered
// prefixes dropped, sibling halves joined, sorted.
func mergePrefixes(in []netip.Prefix) []netip.Prefix {
	ps := slices.Clone(in)
	for changed := true; changed; {
		changed = false
		slices.SortFunc(ps, func(a, b netip.Prefix) int {
			if c := a.Addr().Compare(b.Addr()); c != 0 {
				return c
			}
			return a.Bits() - b.Bits()
		})
		var out []netip.Prefix
		for _, p := range ps {
			if len(out) > 0 && out[len(out)-1].Contains(p.Addr()) && out[len(out)-1].Bits() <= p.Bits() {
				changed = changed || true
				continue
			}
			if len(out) > 0 {
				last := out[len(out)-1]
				if last.Bits() == p.Bits() && p.Bits() > 0 {
					parent, _ := last.Addr().Prefix(last.Bits() - 1)
					if parent.Contains(p.Addr()) && parent.Addr() == last.Addr() {
						out[len(out)-1] = parent
						changed = true
						continue
					}
				}
			}
			out = append(out, p)
		}
		if len(out) != len(ps) {
			changed = true
		}
		ps = out
	}
	return ps
}

func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// covers reports whether every prefix of old lies inside one of new.
func covers(newer, old []netip.Prefix) bool {
	for _, o := range old {
		if !slices.ContainsFunc(newer, func(n netip.Prefix) bool { return n.Bits() <= o.Bits() && n.Contains(o.Addr()) }) {
			return false
		}
	}
	return true
}

func overlap(a, b []string) bool {
	for _, x := range a {
		px, _ := netip.ParsePrefix(x)
		for _, y := range b {
			if py, _ := netip.ParsePrefix(y); px.Overlaps(py) {
				return true
			}
		}
	}
	return false
}

// visiblePool is a pool t may read: its own project's, a shared one, or any for an admin.
func visiblePool(t *token, p *subnetPoolRec) bool {
	return t.isAdmin() || p.Shared || p.ProjectID == t.projectID
}

func (c *Cloud) neutronSubnetPools(w http.ResponseWriter, r *http.Request, t *token, rest []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(rest) == 0 {
		switch r.Method {
		case http.MethodGet:
			c.listPools(w, r, t)
		case http.MethodPost:
			c.createPool(w, r, t)
		default:
			methodNotAllowed(w)
		}
		return
	}
	var p *subnetPoolRec
	for _, x := range c.pools {
		if x.ID == rest[0] && visiblePool(t, x) {
			p = x
		}
	}
	if p == nil {
		neutronError(w, http.StatusNotFound, "SubnetPoolNotFound", "Subnet pool %s could not be found.", rest[0])
		return
	}
	if len(rest) == 2 && rest[1] == "tags" {
		c.poolTags(w, r, t, p)
		return
	}
	if len(rest) > 1 {
		neutronError(w, http.StatusNotFound, "HTTPNotFound", "The resource could not be found.")
		return
	}
	if r.Method != http.MethodGet && !t.isAdmin() && p.ProjectID != t.projectID {
		policyRefused(w, map[string]string{http.MethodPut: "update_subnetpool", http.MethodDelete: "delete_subnetpool"}[r.Method])
		return
	}
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"subnetpool": project(p.render(false), r.URL.Query()["fields"])})
	case http.MethodPut:
		c.updatePool(w, r, t, p)
	case http.MethodDelete:
		if p.InUse {
			neutronError(w, http.StatusBadRequest, "SubnetPoolDeleteError", "Unable to delete subnet pool: Subnet pool has existing allocations.")
			return
		}
		c.pools = slices.DeleteFunc(c.pools, func(x *subnetPoolRec) bool { return x == p })
		w.WriteHeader(http.StatusNoContent)
	default:
		methodNotAllowed(w)
	}
}

var poolFilters = []string{"id", "name", "project_id", "tenant_id", "description", "ip_version", "is_default", "shared",
	"address_scope_id", "min_prefixlen", "default_prefixlen", "max_prefixlen", "default_quota", "revision_number",
	"tags", "tags-any", "not-tags", "not-tags-any"}

func (c *Cloud) listPools(w http.ResponseWriter, r *http.Request, t *token) {
	q := normaliseBoolQuery(r.URL.Query())
	tagQuery := map[string][]string{}
	for _, k := range []string{"tags", "tags-any", "not-tags", "not-tags-any"} {
		if vs, ok := q[k]; ok {
			for _, v := range vs {
				tagQuery[k] = append(tagQuery[k], strings.Split(v, ",")...)
			}
			delete(q, k)
		}
	}
	var items []map[string]any
	for _, p := range c.pools {
		tags := make([]any, len(p.Tags))
		for i, tag := range p.Tags {
			tags[i] = tag
		}
		if visiblePool(t, p) && matchTags(map[string]any{"tags": tags}, tagQuery) {
			items = append(items, p.render(false))
		}
	}
	out, ok := filterList(w, q, items, poolFilters...)
	if ok {
		writeJSON(w, http.StatusOK, map[string]any{"subnetpools": out})
	}
}

// poolLengths reads and checks the three prefix lengths against the family, as Neutron does.
func poolLengths(w http.ResponseWriter, body map[string]any, version int, lo, def, hi int, defSet bool) (int, int, int, bool) {
	read := func(key string, v int) (int, bool) {
		raw, ok := body[key]
		if !ok {
			return v, true
		}
		switch x := raw.(type) {
		case float64:
			if x == float64(int(x)) {
				return int(x), true
			}
		case string:
			if n, err := strconv.Atoi(x); err == nil {
				return n, true
			}
		}
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for %s. Reason: '%v' is not an integer.", key, raw)
		return 0, false
	}
	var ok bool
	if lo, ok = read("min_prefixlen", lo); !ok {
		return 0, 0, 0, false
	}
	if _, given := body["default_prefixlen"]; !given && !defSet {
		def = lo
	}
	if def, ok = read("default_prefixlen", def); !ok {
		return 0, 0, 0, false
	}
	if hi, ok = read("max_prefixlen", hi); !ok {
		return 0, 0, 0, false
	}
	_, _, familyMax := defaultLengths(version)
	switch {
	case hi > familyMax:
		neutronError(w, http.StatusBadRequest, "IllegalSubnetPoolPrefixBounds", "Illegal prefix bounds: max_prefixlen=%d, ip_version_max=%d.", hi, familyMax)
	case def < lo:
		neutronError(w, http.StatusBadRequest, "IllegalSubnetPoolPrefixBounds", "Illegal prefix bounds: default_prefixlen=%d, min_prefixlen=%d.", def, lo)
	case def > hi:
		neutronError(w, http.StatusBadRequest, "IllegalSubnetPoolPrefixBounds", "Illegal prefix bounds: default_prefixlen=%d, max_prefixlen=%d.", def, hi)
	default:
		return lo, def, hi, true
	}
	return 0, 0, 0, false
}

// addressScopes is the cloud's address scopes, a collection it serves with Neutron's rules (osapi).
const addressScopes = Network + ":address-scopes"

// scopeVersion is the IP version of the address scope id, when t may read it: its own project's, a
// shared one, or any for an admin.
func (c *Cloud) scopeVersion(t *token, id string) (int, bool) {
	for _, s := range c.known.Objects(addressScopes) {
		if s["id"] != id {
			continue
		}
		if shared, _ := s["shared"].(bool); !shared && !t.isAdmin() && s["project_id"] != t.projectID {
			return 0, false
		}
		switch v := s["ip_version"].(type) {
		case int:
			return v, true
		case float64:
			return int(v), true
		}
		return 0, false
	}
	return 0, false
}

// scopeInUse answers the delete of an address scope a pool uses as Neutron does (409): the one
// rule of the scopes (served by osapi) that is the pools'. False for every other request.
func (c *Cloud) scopeInUse(w http.ResponseWriter, r *http.Request, seg []string) bool {
	if r.Method != http.MethodDelete || len(seg) != 2 || seg[0] != "address-scopes" {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.ContainsFunc(c.pools, func(p *subnetPoolRec) bool { return p.AddressScopeID == seg[1] }) {
		return false
	}
	neutronError(w, http.StatusConflict, "AddressScopeInUse",
		"Unable to complete operation on address scope %s. There are one or more subnet pools in use on the address scope.", seg[1])
	return true
}

// checkScope checks a pool's address scope: it exists, has the pool's family, and no other pool
// of the scope overlaps this one.
func (c *Cloud) checkScope(w http.ResponseWriter, t *token, p *subnetPoolRec) bool {
	if p.AddressScopeID == "" {
		return true
	}
	version, ok := c.scopeVersion(t, p.AddressScopeID)
	if !ok {
		neutronError(w, http.StatusNotFound, "AddressScopeNotFound", "Address scope %s could not be found.", p.AddressScopeID)
		return false
	}
	if version != p.IPVersion {
		neutronError(w, http.StatusBadRequest, "IllegalSubnetPoolIpVersionAssociationToAddressScope",
			"Illegal subnetpool association: subnetpool %s cannot associate with address scope %s because subnetpool ip_version is not %d.",
			p.ID, p.AddressScopeID, version)
		return false
	}
	for _, o := range c.pools {
		if o.ID != p.ID && o.AddressScopeID == p.AddressScopeID && overlap(o.Prefixes, p.Prefixes) {
			neutronError(w, http.StatusConflict, "AddressScopePrefixConflict",
				"Failed to associate address scope: subnetpools within an address scope must have unique prefixes.")
			return false
		}
	}
	return true
}

// checkDefault refuses a second default pool of the family.
func (c *Cloud) checkDefault(w http.ResponseWriter, p *subnetPoolRec) bool {
	if !p.IsDefault {
		return true
	}
	if slices.ContainsFunc(c.pools, func(o *subnetPoolRec) bool { return o.ID != p.ID && o.IsDefault && o.IPVersion == p.IPVersion }) {
		neutronError(w, http.StatusBadRequest, "InvalidInput",
			"Invalid input for operation: A default subnetpool for this IP family has already been set. Only one default may exist per IP family.")
		return false
	}
	return true
}

var poolAttrs = []string{"name", "prefixes", "min_prefixlen", "default_prefixlen", "max_prefixlen", "shared", "is_default",
	"address_scope_id", "description", "default_quota", "project_id", "tenant_id", "ip_version"}

func (c *Cloud) createPool(w http.ResponseWriter, r *http.Request, t *token) {
	body, ok := readBody(w, r, "subnetpool", append(slices.Clone(poolAttrs), "tags")...)
	if !ok {
		return
	}
	if _, ok := body["tags"]; ok {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Attribute 'tags' not allowed in POST")
		return
	}
	raw, given := body["prefixes"]
	if !given {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Failed to parse request. Required attribute 'prefixes' not specified")
		return
	}
	now := time.Now().UTC()
	p := &subnetPoolRec{SubnetPool: SubnetPool{ID: newUUID()}, Created: now, Updated: now}
	in := attrs{body: body}
	p.Name = in.str("name", "")
	p.Description = in.str("description", "")
	p.AddressScopeID = in.str("address_scope_id", "")
	p.ProjectID = in.str("project_id", in.str("tenant_id", t.projectID))
	p.Shared = in.boolean("shared", false)
	p.IsDefault = in.boolean("is_default", false)
	prefixes, okList := stringList(raw)
	if in.invalid || !okList {
		invalidInput(w, "subnetpool")
		return
	}
	if len(prefixes) == 0 {
		neutronError(w, http.StatusBadRequest, "EmptySubnetPoolPrefixList", "Empty subnet pool prefix list.")
		return
	}
	nets, version, err := parsePrefixes(prefixes)
	switch {
	case version == -1:
		neutronError(w, http.StatusBadRequest, "PrefixVersionMismatch", "Cannot mix IPv4 and IPv6 prefixes in a subnet pool.")
		return
	case err != nil:
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for prefixes. Reason: %v.", err)
		return
	}
	p.Prefixes, p.IPVersion = prefixStrings(mergePrefixes(nets)), version
	lo, def, hi := defaultLengths(version)
	if p.MinPrefixLen, p.DefaultPrefixLen, p.MaxPrefixLen, ok = poolLengths(w, body, version, lo, def, hi, false); !ok {
		return
	}
	switch {
	case p.IsDefault && !t.isAdmin():
		neutronError(w, http.StatusForbidden, "PolicyNotAuthorized", "(rule:create_subnetpool and rule:create_subnetpool:is_default) is disallowed by policy")
		return
	case p.Shared && !t.isAdmin():
		neutronError(w, http.StatusForbidden, "PolicyNotAuthorized", "(rule:create_subnetpool and rule:create_subnetpool:shared) is disallowed by policy")
		return
	case p.ProjectID != t.projectID && !t.isAdmin():
		policyRefused(w, "create_subnetpool")
		return
	}
	if !c.checkScope(w, t, p) || !c.checkDefault(w, p) {
		return
	}
	c.pools = append(c.pools, p)
	writeJSON(w, http.StatusCreated, map[string]any{"subnetpool": p.render(false)})
}

func (c *Cloud) updatePool(w http.ResponseWriter, r *http.Request, t *token, p *subnetPoolRec) {
	body, ok := readBody(w, r, "subnetpool", append(slices.Clone(poolAttrs), "tags")...)
	if !ok || !readOnly(w, body, "shared", "ip_version", "project_id", "tenant_id") {
		return
	}
	if _, ok := body["tags"]; ok {
		neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Attribute 'tags' not allowed in PUT")
		return
	}
	next := *p
	in := attrs{body: body}
	next.Name = in.str("name", p.Name)
	next.Description = in.str("description", p.Description)
	next.IsDefault = in.boolean("is_default", p.IsDefault)
	if v, given := body["address_scope_id"]; given && v == nil {
		next.AddressScopeID = ""
	} else {
		next.AddressScopeID = in.str("address_scope_id", p.AddressScopeID)
	}
	if in.invalid {
		invalidInput(w, "subnetpool")
		return
	}
	if raw, given := body["prefixes"]; given {
		prefixes, okList := stringList(raw)
		if !okList {
			invalidInput(w, "subnetpool")
			return
		}
		nets, version, err := parsePrefixes(prefixes)
		switch {
		case version == -1 || (err == nil && version != p.IPVersion && len(nets) > 0):
			neutronError(w, http.StatusBadRequest, "PrefixVersionMismatch", "Cannot mix IPv4 and IPv6 prefixes in a subnet pool.")
			return
		case err != nil:
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for prefixes. Reason: %v.", err)
			return
		}
		old, _, _ := parsePrefixes(p.Prefixes)
		merged := mergePrefixes(append(nets, []netip.Prefix{}...))
		if !covers(merged, old) {
			neutronError(w, http.StatusBadRequest, "IllegalSubnetPoolPrefixUpdate",
				"Illegal update to prefixes: Existing prefixes must be a subset of the new prefixes.")
			return
		}
		next.Prefixes = prefixStrings(merged)
	}
	if next.MinPrefixLen, next.DefaultPrefixLen, next.MaxPrefixLen, ok = poolLengths(w, body, p.IPVersion,
		p.MinPrefixLen, p.DefaultPrefixLen, p.MaxPrefixLen, true); !ok {
		return
	}
	if _, given := body["is_default"]; given && !t.isAdmin() {
		policyRefused(w, "update_subnetpool:is_default")
		return
	}
	if !c.checkScope(w, t, &next) || !c.checkDefault(w, &next) {
		return
	}
	next.Revision++
	next.Updated = time.Now().UTC()
	*p = next
	writeJSON(w, http.StatusOK, map[string]any{"subnetpool": p.render(true)})
}

// poolTags is Neutron's tag extension on a pool: PUT replaces every tag.
func (c *Cloud) poolTags(w http.ResponseWriter, r *http.Request, t *token, p *subnetPoolRec) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{"tags": p.render(false)["tags"]})
	case http.MethodPut:
		if !t.isAdmin() && p.ProjectID != t.projectID {
			policyRefused(w, "update_subnetpool:tags")
			return
		}
		var body struct {
			Tags []string `json:"tags"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Tags == nil {
			neutronError(w, http.StatusBadRequest, "HTTPBadRequest", "Invalid input for tags")
			return
		}
		p.Tags = slices.Compact(slices.Sorted(slices.Values(body.Tags)))
		p.Revision++
		writeJSON(w, http.StatusOK, map[string]any{"tags": body.Tags})
	default:
		methodNotAllowed(w)
	}
}

// stringList reads a JSON array of strings.
func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}
