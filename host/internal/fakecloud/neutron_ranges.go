package fakecloud

import (
	"net/http"
	"slices"
	"time"
)

// rangeRec is the exported SegmentRange (the state tests seed and read) plus what only the API
// shows.
type rangeRec struct {
	SegmentRange
	Revision int
	Created  time.Time
}

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
			methodNotAllowed(w)
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
			invalidInput(w, "network_segment_range")
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
		methodNotAllowed(w)
	}
}

func (c *Cloud) createRange(w http.ResponseWriter, r *http.Request, t *token) {
	if !adminOnly(w, t, "create_network_segment_range") {
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
		invalidInput(w, "network_segment_range")
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
