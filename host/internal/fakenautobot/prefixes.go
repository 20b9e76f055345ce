package fakenautobot

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// nonFilters are the query parameters that are not filters (Nautobot's NON_FILTER_QUERY_PARAMS).
var nonFilters = []string{"api_version", "depth", "exclude_m2m", "format", "include", "limit", "offset", "sort"}

// The page sizes of Nautobot's defaults (PAGINATE_COUNT, MAX_PAGE_SIZE).
const (
	pageSize    = 50
	maxPageSize = 1000
)

var typeLabels = map[string]string{"container": "Container", "network": "Network", "pool": "Pool"}

// choiceError is the answer to a filter value that names nothing.
func choiceError(w http.ResponseWriter, filter, value string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{filter: []string{
		fmt.Sprintf("Select a valid choice. %s is not one of the available choices.", value)}})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, version string) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := slices.Clone(s.prefixes)
	var names []string
	for k := range q {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if slices.Contains(nonFilters, k) {
			continue
		}
		vs := q[k]
		var match func(p *Prefix) bool
		switch k {
		case "id":
			for _, v := range vs {
				if !isUUID(v) {
					writeJSON(w, http.StatusBadRequest, map[string]any{"id": []string{fmt.Sprintf("“%s” is not a valid UUID.", v)}})
					return
				}
			}
			match = func(p *Prefix) bool {
				return slices.ContainsFunc(vs, func(v string) bool { return strings.EqualFold(v, p.ID) })
			}
		case "location", "locations":
			var within []string
			for _, v := range vs {
				l := s.location(v)
				if l == nil {
					choiceError(w, k, v)
					return
				}
				within = append(within, s.subtree(l.Name)...)
			}
			match = func(p *Prefix) bool {
				return slices.ContainsFunc(p.Locations, func(n string) bool { return slices.Contains(within, n) })
			}
		case "namespace", "status", "tag":
			for _, v := range vs {
				if !s.named(k, v) {
					choiceError(w, k, v)
					return
				}
			}
			match = func(p *Prefix) bool {
				switch k {
				case "namespace":
					return slices.ContainsFunc(vs, func(v string) bool { return v == p.Namespace || v == idFor("namespace", p.Namespace) })
				case "status":
					return slices.ContainsFunc(vs, func(v string) bool { return v == p.Status || v == idFor("status", p.Status) })
				}
				// Several tags are all required (a conjoined filter).
				return !slices.ContainsFunc(vs, func(v string) bool { return !slices.Contains(p.Tags, v) && !slices.Contains(tagIDs(p.Tags), v) })
			}
		case "type":
			for _, v := range vs {
				if typeLabels[v] == "" {
					choiceError(w, k, v)
					return
				}
			}
			match = func(p *Prefix) bool { return slices.Contains(vs, p.Type) }
		case "prefix":
			match = func(p *Prefix) bool { return slices.Contains(vs, p.Prefix) }
		default:
			writeJSON(w, http.StatusBadRequest, map[string]any{k: []string{"Unknown filter field"}})
			return
		}
		keep = slices.DeleteFunc(keep, func(p *Prefix) bool { return !match(p) })
	}
	limit := pageSize
	if v, err := strconv.Atoi(q.Get("limit")); err == nil && v >= 0 {
		limit = min(v, maxPageSize)
		if v == 0 {
			limit = maxPageSize
		}
	}
	offset := 0
	if v, err := strconv.Atoi(q.Get("offset")); err == nil && v >= 0 {
		offset = v
	}
	count := len(keep)
	page := []any{}
	base := s.base(r)
	for i := offset; i < count && i < offset+limit; i++ {
		out, err := s.render(keep[i], version, depth(q), base)
		if err != nil {
			detail(w, http.StatusPreconditionFailed, err.Error())
			return
		}
		page = append(page, out)
	}
	link := func(off int) any {
		u := *r.URL
		qq := u.Query()
		qq.Set("limit", strconv.Itoa(limit))
		if off > 0 {
			qq.Set("offset", strconv.Itoa(off))
		} else {
			qq.Del("offset")
		}
		u.RawQuery = qq.Encode()
		return base + u.RequestURI()
	}
	var next, prev any
	if offset+limit < count {
		next = link(offset + limit)
	}
	if offset > 0 {
		prev = link(max(offset-limit, 0))
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": count, "next": next, "previous": prev, "results": page})
}

func (s *Server) show(w http.ResponseWriter, r *http.Request, version, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prefixes {
		if strings.EqualFold(p.ID, id) {
			out, err := s.render(p, version, depth(r.URL.Query()), s.base(r))
			if err != nil {
				detail(w, http.StatusPreconditionFailed, err.Error())
				return
			}
			writeJSON(w, http.StatusOK, out)
			return
		}
	}
	detail(w, http.StatusNotFound, "Not found.")
}

// depth is the depth parameter; a bad one is 0, as Nautobot reads it.
func depth(q url.Values) int {
	d, err := strconv.Atoi(q.Get("depth"))
	if err != nil || d < 0 || d > 10 {
		return 0
	}
	return d
}

func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i, c := range v {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func tagIDs(tags []string) []string {
	out := make([]string, len(tags))
	for i, t := range tags {
		out[i] = idFor("tag", t)
	}
	return out
}

// location finds a location by name or id.
func (s *Server) location(v string) *Location {
	for _, l := range s.locations {
		if l.Name == v || strings.EqualFold(l.ID, v) {
			return l
		}
	}
	return nil
}

// subtree is a location and its descendants, by name.
func (s *Server) subtree(name string) []string {
	out := []string{name}
	for _, l := range s.locations {
		if l.Parent == name {
			out = append(out, s.subtree(l.Name)...)
		}
	}
	return out
}

// named reports whether a namespace, status or tag of that name (or id) exists: the ones any
// prefix uses, plus Nautobot's built-in Global namespace and statuses.
func (s *Server) named(kind, v string) bool {
	builtin := map[string][]string{"namespace": {"Global"}, "status": {"Active", "Reserved", "Deprecated"}}
	for _, n := range builtin[kind] {
		if v == n || v == idFor(kind, n) {
			return true
		}
	}
	for _, p := range s.prefixes {
		var names []string
		switch kind {
		case "namespace":
			names = []string{p.Namespace}
		case "status":
			names = []string{p.Status}
		case "tag":
			names = p.Tags
		}
		for _, n := range names {
			if v == n || v == idFor(kind, n) {
				return true
			}
		}
	}
	return false
}

// objectTypes are the app_label.model of each related kind.
var objectTypes = map[string]string{"status": "extras.status", "namespace": "ipam.namespace", "tag": "extras.tag",
	"location": "dcim.location", "prefix": "ipam.prefix"}

// urlPaths are where each kind lives in the API.
var urlPaths = map[string]string{"status": "extras/statuses", "namespace": "ipam/namespaces", "tag": "extras/tags",
	"location": "dcim/locations", "prefix": "ipam/prefixes"}

func (s *Server) stamp() string { return s.created.Format(time.RFC3339Nano) }

// related renders a related object at depth d: a reference at 0, the object itself deeper.
func (s *Server) related(kind, name, base string, d int) map[string]any {
	id := idFor(kind, name)
	if l := s.location(name); kind == "location" && l != nil {
		id = l.ID
	}
	url := base + "/api/" + urlPaths[kind] + "/" + id + "/"
	out := map[string]any{"id": id, "object_type": objectTypes[kind], "url": url}
	if d == 0 {
		return out
	}
	out["display"] = name
	out["name"] = name
	out["natural_slug"] = strings.ToLower(strings.ReplaceAll(name, " ", "-")) + "_" + id[:4]
	out["created"], out["last_updated"] = s.stamp(), s.stamp()
	out["notes_url"] = url + "notes/"
	out["custom_fields"] = map[string]any{}
	switch kind {
	case "status":
		out["color"], out["description"] = "4caf50", ""
		out["content_types"] = []string{"ipam.prefix", "ipam.ipaddress", "dcim.location"}
	case "tag":
		out["color"], out["description"] = "9e9e9e", ""
		out["content_types"] = []string{"ipam.prefix"}
	case "namespace":
		out["description"], out["location"] = "", nil
	case "location":
		var parent any
		if l := s.location(name); l != nil && l.Parent != "" {
			parent = s.related("location", l.Parent, base, d-1)
		}
		out["parent"] = parent
		out["description"] = ""
	}
	return out
}

// render shapes a prefix as the API version and depth ask.
func (s *Server) render(p *Prefix, version string, d int, base string) (map[string]any, error) {
	net, _ := netip.ParsePrefix(p.Prefix)
	ipVersion := 4
	if net.Addr().Is6() {
		ipVersion = 6
	}
	url := base + "/api/ipam/prefixes/" + p.ID + "/"
	out := map[string]any{
		"id": p.ID, "object_type": "ipam.prefix", "display": p.Prefix, "url": url,
		"natural_slug": strings.NewReplacer(".", "-", ":", "-", "/", "_").Replace(p.Prefix) + "_" + p.ID[:4],
		"prefix":       p.Prefix, "network": net.Masked().Addr().String(), "broadcast": broadcast(net), "prefix_length": net.Bits(),
		"type": map[string]any{"value": p.Type, "label": typeLabels[p.Type]}, "status": s.related("status", p.Status, base, d),
		"role": nil, "parent": nil, "ip_version": ipVersion, "namespace": s.related("namespace", p.Namespace, base, d),
		"tenant": nil, "vlan": nil, "rir": nil, "date_allocated": nil, "description": p.Description,
		"created": s.stamp(), "last_updated": s.stamp(), "notes_url": url + "notes/", "custom_fields": map[string]any{},
	}
	tags := []any{}
	for _, t := range p.Tags {
		tags = append(tags, s.related("tag", t, base, d))
	}
	out["tags"] = tags
	locations := []any{}
	for _, n := range p.Locations {
		locations = append(locations, s.related("location", n, base, d))
	}
	if version == "2.0" || version == "2.1" {
		// The legacy serializer: one location, and none when there are several.
		switch len(locations) {
		case 0:
			out["location"] = nil
		case 1:
			out["location"] = locations[0]
		default:
			return nil, fmt.Errorf("This object has multiple Locations and so cannot be represented in the 2.0 or 2.1 REST API. Please correct the data or use a later API version.")
		}
		return out, nil
	}
	out["locations"] = locations
	out["vrfs"] = []any{}
	return out, nil
}

func broadcast(p netip.Prefix) string {
	a := p.Masked().Addr().AsSlice()
	bits := p.Bits()
	for i := range a {
		for b := 0; b < 8; b++ {
			if i*8+b >= bits {
				a[i] |= 0x80 >> b
			}
		}
	}
	addr, _ := netip.AddrFromSlice(a)
	return addr.String()
}
