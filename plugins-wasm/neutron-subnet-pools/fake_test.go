package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// fakeNeutron holds subnet pools and address scopes with the rules of real Neutron the plugin
// depends on (each pinned against it by the contract suite,
// host/internal/openstack/contract/testdata/neutron-subnet-pools.yaml): prefixes compacted,
// prefix lengths read back as strings, a pool only grows, shared is read-only, one default per
// family, a pool with allocations is not deleted (400 SubnetPoolDeleteError).
type fakeNeutron struct {
	pools  []map[string]any
	scopes []map[string]any
	inUse  map[string]bool
	nextID int
}

func newFakeNeutron() *fakeNeutron { return &fakeNeutron{inUse: map[string]bool{}} }

func (f *fakeNeutron) id(kind string) string {
	f.nextID++
	return fmt.Sprintf("%s-%d", kind, f.nextID)
}

// addScope seeds an address scope.
func (f *fakeNeutron) addScope(id, name string, version int) {
	f.scopes = append(f.scopes, map[string]any{"id": id, "name": name, "ip_version": version, "shared": true, "project_id": "project-a"})
}

// addPool seeds a pool as Neutron would store it.
func (f *fakeNeutron) addPool(p map[string]any) map[string]any {
	pool := map[string]any{"id": f.id("pool"), "project_id": "project-a", "description": "", "ip_version": 4,
		"min_prefixlen": "24", "default_prefixlen": "24", "max_prefixlen": "28", "is_default": false, "shared": false,
		"address_scope_id": nil, "tags": []string{}}
	for k, v := range p {
		pool[k] = v
	}
	f.pools = append(f.pools, pool)
	return pool
}

func (f *fakeNeutron) pool(name string) map[string]any {
	for _, p := range f.pools {
		if p["name"] == name {
			return p
		}
	}
	return nil
}

func compactStrings(in []string) ([]string, error) {
	nets, err := networks(in)
	if err != nil {
		return nil, err
	}
	return strs(compact(nets)), nil
}

func toStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case []string:
		return slices.Clone(x)
	case []any:
		for _, e := range x {
			out = append(out, fmt.Sprint(e))
		}
	}
	return out
}

func neutronError(status int, typ, msg string) (int, any) {
	return status, map[string]any{"NeutronError": map[string]any{"type": typ, "message": msg, "detail": ""}}
}

// showPool renders a pool as show and list do: prefix lengths as strings.
func showPool(p map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		if strings.HasSuffix(k, "_prefixlen") {
			v = fmt.Sprint(v)
		}
		out[k] = v
	}
	return out
}

func (f *fakeNeutron) handle(c pdktest.Call) (int, any) {
	var body map[string]any
	if len(c.Body) > 0 {
		_ = json.Unmarshal(c.Body, &body)
	}
	switch {
	case c.Path == poolsPath && c.Method == http.MethodGet:
		var out []any
		for _, p := range f.pools {
			keep := true
			for k, vs := range c.Query {
				switch k {
				case "limit", "marker":
				case "tags":
					keep = keep && slices.Contains(toStrings(p["tags"]), vs[0])
				case "is_default":
					keep = keep && fmt.Sprint(p["is_default"]) == strings.ToLower(vs[0])
				default:
					keep = keep && fmt.Sprint(p[k]) == vs[0]
				}
			}
			if keep {
				out = append(out, showPool(p))
			}
		}
		return 200, map[string]any{"subnetpools": out}
	case c.Path == poolsPath && c.Method == http.MethodPost:
		attrs := body["subnetpool"].(map[string]any)
		if _, ok := attrs["tags"]; ok {
			return neutronError(400, "HTTPBadRequest", "Attribute 'tags' not allowed in POST")
		}
		prefixes, err := compactStrings(toStrings(attrs["prefixes"]))
		if err != nil {
			return neutronError(400, "HTTPBadRequest", err.Error())
		}
		nets, _ := networks(prefixes)
		p := map[string]any{"id": f.id("pool"), "project_id": "project-a", "tags": []string{}, "is_default": false,
			"shared": false, "address_scope_id": nil, "description": "", "ip_version": family(nets[0])}
		for k, v := range attrs {
			if strings.HasSuffix(k, "_prefixlen") {
				v = int(v.(float64))
			}
			p[k] = v
		}
		p["prefixes"] = prefixes
		if p["is_default"] == true {
			for _, o := range f.pools {
				if o["is_default"] == true && o["ip_version"] == p["ip_version"] {
					return neutronError(400, "InvalidInput", "Invalid input for operation: A default subnetpool for this IP family has already been set. Only one default may exist per IP family.")
				}
			}
		}
		f.pools = append(f.pools, p)
		return 201, map[string]any{"subnetpool": showPool(p)}
	case strings.HasPrefix(c.Path, poolsPath+"/"):
		rest := strings.Split(strings.TrimPrefix(c.Path, poolsPath+"/"), "/")
		var p map[string]any
		for _, x := range f.pools {
			if x["id"] == rest[0] {
				p = x
			}
		}
		if p == nil {
			return neutronError(404, "SubnetPoolNotFound", "Subnet pool "+rest[0]+" could not be found.")
		}
		switch {
		case len(rest) == 2 && rest[1] == "tags" && c.Method == http.MethodPut:
			tags := toStrings(body["tags"])
			slices.Sort(tags)
			p["tags"] = tags
			return 200, map[string]any{"tags": body["tags"]}
		case c.Method == http.MethodGet:
			return 200, map[string]any{"subnetpool": showPool(p)}
		case c.Method == http.MethodDelete:
			if f.inUse[p["id"].(string)] {
				return neutronError(400, "SubnetPoolDeleteError", "Unable to delete subnet pool: Subnet pool has existing allocations.")
			}
			f.pools = slices.DeleteFunc(f.pools, func(x map[string]any) bool { return x["id"] == p["id"] })
			return 204, nil
		case c.Method == http.MethodPut:
			attrs := body["subnetpool"].(map[string]any)
			if _, ok := attrs["shared"]; ok {
				return neutronError(400, "HTTPBadRequest", "Cannot update read-only attribute shared")
			}
			if v, ok := attrs["prefixes"]; ok {
				want, err := compactStrings(toStrings(v))
				if err != nil {
					return neutronError(400, "HTTPBadRequest", err.Error())
				}
				wn, _ := networks(want)
				hn, _ := networks(toStrings(p["prefixes"]))
				if len(uncovered(hn, wn)) > 0 {
					return neutronError(400, "IllegalSubnetPoolPrefixUpdate", "Illegal update to prefixes: Existing prefixes must be a subset of the new prefixes.")
				}
				attrs["prefixes"] = want
			}
			for k, v := range attrs {
				if strings.HasSuffix(k, "_prefixlen") {
					v = int(v.(float64))
				}
				p[k] = v
			}
			out := map[string]any{}
			for k, v := range p {
				out[k] = v
			}
			return 200, map[string]any{"subnetpool": out}
		}
	case c.Path == scopesPath && c.Method == http.MethodGet:
		out := []any{}
		for _, s := range f.scopes {
			if (c.Query.Get("name") == "" || s["name"] == c.Query.Get("name")) &&
				(c.Query.Get("ip_version") == "" || strconv.Itoa(s["ip_version"].(int)) == c.Query.Get("ip_version")) &&
				(c.Query.Get("project_id") == "" || s["project_id"] == c.Query.Get("project_id")) {
				out = append(out, s)
			}
		}
		return 200, map[string]any{"address_scopes": out}
	case c.Path == scopesPath && c.Method == http.MethodPost:
		attrs := body["address_scope"].(map[string]any)
		s := map[string]any{"id": f.id("scope"), "project_id": "admin", "shared": false}
		for k, v := range attrs {
			if k == "ip_version" {
				v = int(v.(float64))
			}
			s[k] = v
		}
		f.scopes = append(f.scopes, s)
		return 201, map[string]any{"address_scope": s}
	case strings.HasPrefix(c.Path, scopesPath+"/") && c.Method == http.MethodGet:
		for _, s := range f.scopes {
			if s["id"] == strings.TrimPrefix(c.Path, scopesPath+"/") {
				return 200, map[string]any{"address_scope": s}
			}
		}
		return neutronError(404, "AddressScopeNotFound", "Address scope could not be found.")
	}
	return neutronError(400, "HTTPBadRequest", "fake: unexpected "+c.Method+" "+c.Path)
}

// The prefix ids of the original's tests.
const (
	publicID  = "2bc3ecab-b6dc-46cd-9bd4-1c0ea8a07f87"
	publicID2 = "53c8ee3b-09b9-41ab-a413-b1a1f5ecec6a"
	nbURL     = "https://nautobot.example.test"
	nbToken   = "0123456789abcdef0123456789abcdef01234567"
)

// nbPrefix is a Nautobot prefix in the shape the plugin's query (depth=1) gets back: status,
// namespace and tags as objects with a name, type as a {value, label} choice.
type nbPrefix struct {
	ID, Prefix, Status, Type, Namespace string
	Tags, Locations                     []string
	// Raw, when set, is answered instead (odd shapes).
	Raw map[string]any
}

func (p nbPrefix) record() map[string]any {
	if p.Raw != nil {
		return p.Raw
	}
	var tags []any
	for _, t := range p.Tags {
		tags = append(tags, map[string]any{"id": "tag-" + t, "name": t, "display": t})
	}
	return map[string]any{"id": p.ID, "prefix": p.Prefix, "display": p.Prefix,
		"status":    map[string]any{"id": "st", "name": p.Status, "display": p.Status},
		"type":      map[string]any{"value": p.Type, "label": strings.ToUpper(p.Type[:1]) + p.Type[1:]},
		"namespace": map[string]any{"id": "ns", "name": p.Namespace, "display": p.Namespace}, "tags": tags, "location": nil}
}

// fakeNautobot answers prefix lookups by id, filtered by location, as Nautobot does; answer,
// when set, answers first.
type fakeNautobot struct {
	prefixes  []nbPrefix
	locations []string
	answer    func(c pdktest.SourceCall) (int, any, bool)
}

func (f *fakeNautobot) handle(c pdktest.SourceCall) (int, any) {
	if f.answer != nil {
		if status, body, ok := f.answer(c); ok {
			return status, body
		}
	}
	if c.Path != prefixesPath {
		return 404, "<html>Page Not Found</html>"
	}
	if len(c.Header["Authorization"]) == 0 || c.Header["Authorization"][0] != "Token "+nbToken {
		return 403, map[string]any{"detail": "Invalid token"}
	}
	loc := c.Query.Get("location")
	if loc != "" && !slices.Contains(f.locations, loc) {
		return 400, map[string]any{"location": []string{"Select a valid choice. " + loc + " is not one of the available choices."}}
	}
	results := []any{}
	for _, p := range f.prefixes {
		if slices.Contains(c.Query["id"], p.ID) && (loc == "" || slices.Contains(p.Locations, loc)) {
			results = append(results, p.record())
		}
	}
	return 200, map[string]any{"count": len(results), "next": nil, "previous": nil, "results": results}
}

// world is one credential group's Neutron and Nautobot, behind a pdktest host that enforces the
// plugin's grants and declared sources.
type world struct {
	t        *testing.T
	neutron  *fakeNeutron
	nautobot *fakeNautobot
	config   map[string]string
	cache    map[string]any
	ctx      *pdk.Context
}

func newWorld(t *testing.T) *world {
	w := &world{t: t, neutron: newFakeNeutron(), config: map[string]string{}, cache: map[string]any{},
		nautobot: &fakeNautobot{locations: []string{"iad3-dev", "other-site"}, prefixes: []nbPrefix{
			{ID: publicID, Prefix: "204.232.163.128/25", Status: "Active", Type: "pool", Namespace: "Rackspace",
				Tags: []string{"openstack-subnet-pool"}, Locations: []string{"iad3-dev"}},
			{ID: publicID2, Prefix: "10.4.88.0/24", Status: "Active", Type: "pool", Namespace: "Rackspace",
				Tags: []string{"openstack-subnet-pool"}, Locations: []string{"iad3-dev"}},
		}}}
	return w
}

// context is a fresh pdktest context on the world (one credential group, sharing w.cache).
func (w *world) context() *pdk.Context {
	w.ctx = pdktest.New(w.t, pdktest.Options{Grants: metadata.Grants, Config: w.config, Cache: w.cache, Cloud: w.neutron.handle,
		Sources: []pdktest.Source{{Name: "nautobot", URL: nbURL, Secrets: map[string]string{"nautobot-token/token": nbToken + "\n"},
			Server: w.nautobot.handle}}})
	return w.ctx
}

func (w *world) host() *pdktest.Host { return pdktest.Of(w.t, w.ctx) }

func (w *world) reconcile(spec map[string]any) (*pdk.Result, error) {
	w.t.Helper()
	return pdktest.Reconcile(w.context(), nil, pdk.Object{Kind: "NeutronSubnetPool", Namespace: "openstack", Name: "cr"}, spec)
}

// spec is the original's test spec (_spec of test_subnet_pools_nautobot.py), with overrides.
func spec(overrides map[string]any) map[string]any {
	s := map[string]any{
		"name":                  "PUBLIC-IP-POOL",
		"address_scope":         map[string]any{"name": "publicnet-ip4"},
		"minimum_prefix_length": 27, "default_prefix_length": 28, "maximum_prefix_length": 30,
		"shared": true,
		"nautobot": map[string]any{
			"url": nbURL, "api_version": "2.0",
			"tokenSecretRef": map[string]any{"secretName": "nautobot-token", "key": "token"},
			"prefix_refs":    []any{map[string]any{"id": publicID}, map[string]any{"id": publicID2}},
			"require": map[string]any{"location": "iad3-dev", "tags": []any{"openstack-subnet-pool"}, "status": "Active",
				"type": "pool", "namespace": "Rackspace"},
		},
	}
	for k, v := range overrides {
		if v == nil {
			delete(s, k)
			continue
		}
		s[k] = v
	}
	return s
}

// nautobotSpec changes keys of spec.nautobot.
func nautobotSpec(s map[string]any, overrides map[string]any) map[string]any {
	n := map[string]any{}
	for k, v := range s["nautobot"].(map[string]any) {
		n[k] = v
	}
	for k, v := range overrides {
		if v == nil {
			delete(n, k)
			continue
		}
		n[k] = v
	}
	s["nautobot"] = n
	return s
}

func prefixesOf(p map[string]any) []string { return toStrings(p["prefixes"]) }

var _ = netip.Prefix{}
