package contract

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
)

// ironicName is the name of an Ironic object this run makes: a custom trait holding the run.
func ironicName(base, tag string) string {
	return "CUSTOM_" + strings.ToUpper(strings.NewReplacer("-", "_").Replace(base+"-"+tag))
}

// ironicProbes is the sequence for an Ironic collection: bare bodies, JSON Patch updates, the
// microversion on every request, and the rules of names, steps, owner and public. The writer is
// the project admin, or the system-scoped admin where only it may write (deploy templates).
func ironicProbes(r *osapi.Resource, base string) []probe {
	g := &ironicGen{r: r, base: base, writer: "admin"}
	if r.SystemScoped {
		g.writer = "system"
	}
	g.all()
	return g.out
}

type ironicGen struct {
	r      *osapi.Resource
	base   string
	writer string
	out    []probe
	n      int
}

func (g *ironicGen) add(p probe) {
	if p.cloud == "" {
		p.cloud = g.writer
	}
	if p.microversion == "" {
		p.microversion = osapi.IronicVersion
	}
	g.out = append(g.out, p)
}

func (g *ironicGen) name(tag string) string { return ironicName(g.base, tag) }

func (g *ironicGen) samples(field string) []any {
	f, _ := g.r.Field(field)
	return f.Samples
}

// step is one valid step of the collection's kind.
func (g *ironicGen) step(iface, name string, order any) map[string]any {
	key := "order"
	if _, ok := g.r.Field("steps"); ok && g.r.Name == "deploy-templates" {
		key = "priority"
	}
	return map[string]any{"interface": iface, "step": name, "args": map[string]any{}, key: order}
}

func (g *ironicGen) minimal(name string) map[string]any {
	return map[string]any{"name": name, "steps": g.samples("steps")[0]}
}

func (g *ironicGen) create(what string, body map[string]any, capture string) {
	if capture == "" {
		g.n++
		capture = fmt.Sprintf("x%d", g.n)
	}
	g.add(probe{name: what, method: http.MethodPost, path: g.r.Path, body: body, capture: capture})
}

func (g *ironicGen) bad(what, field string, v any) {
	g.create(what, withField(g.minimal(g.name("bad")), field, v), "")
}

func (g *ironicGen) patch(what, path string, ops ...any) {
	if ops == nil {
		ops = []any{}
	}
	g.add(probe{name: what, method: http.MethodPatch, path: path, body: ops})
}

func op(o, path string, v ...any) map[string]any {
	m := map[string]any{"op": o, "path": path}
	if len(v) > 0 {
		m["value"] = v[0]
	}
	return m
}

func (g *ironicGen) all() {
	r := g.r
	item := r.Path + "/{a}"
	key := "order"
	if r.Name == "deploy-templates" {
		key = "priority"
	}
	owned := r.Name == "runbooks"
	// What Ironic does alike for every collection (JSON Patch's mechanics, list parameters) is
	// probed on runbooks only: every request to the tier's Ironic costs a Keystone validation
	// (the harness caches no token), and the real half must stay short.
	generic := owned

	// Creates, valid and not.
	g.create("create with the required fields", g.minimal(g.name("a")), "a")
	full := g.minimal(g.name("b"))
	for _, f := range r.Fields {
		if f.Create != osapi.No && len(f.Samples) > 0 && f.Name != "name" && f.Name != "steps" {
			full[f.Name] = f.Samples[0]
		}
	}
	full["description"] = "d"
	g.create("create with every field", full, "b")
	g.create("create a second object of the same name", g.minimal(g.name("a")), "")
	for _, req := range []string{"name", "steps"} {
		body := g.minimal(g.name("bad"))
		delete(body, req)
		g.create("create without "+req, body, "")
	}
	g.bad("create with a name that is not a custom trait", "name", g.base+"-lower")
	g.bad("create with name empty", "name", "")
	g.bad("create with name too long", "name", "CUSTOM_"+strings.Repeat("X", 250))
	g.create("create with name at its longest", withField(g.minimal(""), "name", g.name("l")+strings.Repeat("X", 255-len(g.name("l")))), "")
	g.bad("create with name of the wrong type", "name", 12345)
	g.bad("create with steps empty", "steps", []any{})
	g.bad("create with steps not a list", "steps", "x")
	g.bad("create with a step of an unknown interface", "steps", []any{g.step("bogus", "x", 1)})
	g.bad("create with a step without its "+key, "steps", []any{map[string]any{"interface": "bios", "step": "x", "args": map[string]any{}}})
	g.bad("create with a step of a negative "+key, "steps", []any{g.step("bios", "x", -1)})
	g.bad("create with a step whose "+key+" is not a number", "steps", []any{g.step("bios", "x", "x")})
	g.create("create with a step whose "+key+" is numeric text", withField(g.minimal(g.name("ord")), "steps", []any{g.step("bios", "x", "2")}), "")
	g.create("create with a step without args", withField(g.minimal(g.name("noargs")), "steps",
		[]any{map[string]any{"interface": "bios", "step": "x", key: 1}}), "")
	g.bad("create with a step of an unknown key", "steps", []any{withField(g.step("bios", "x", 1), "ct_unknown", 1)})
	g.bad("create with a step of an empty name", "steps", []any{g.step("bios", "", 1)})
	g.bad("create with a step not an object", "steps", []any{"x"})
	g.bad("create with a repeated step", "steps", []any{g.step("bios", "x", 1), g.step("bios", "x", 2)})
	g.create("create with a password in a step's args", withField(g.minimal(g.name("secret")), "steps",
		[]any{map[string]any{"interface": "bios", "step": "x", "args": map[string]any{"password": "p", "user": "u"}, key: 1}}), "")
	for _, f := range r.Fields {
		switch f.Name {
		case "name", "steps", "created_at", "updated_at":
			continue
		}
		if f.Nullable {
			g.create("create with "+f.Name+" null", withField(g.minimal(g.name("null-"+f.Name)), f.Name, nil), "")
		}
		g.bad("create with "+f.Name+" of the wrong type", f.Name, wrongType(f))
		if f.MaxLen > 0 {
			g.bad("create with "+f.Name+" too long", f.Name, strings.Repeat("x", f.MaxLen+1))
		}
	}
	g.bad("create with a uuid that is not one", "uuid", "not-a-uuid")
	g.bad("create with read-only created_at", "created_at", "2020-01-01T00:00:00+00:00")
	g.bad("create with an unknown field", "ct_unknown", "x")
	g.add(probe{name: "create with a body that is not an object", method: http.MethodPost, path: r.Path, body: []any{}})
	if owned {
		g.bad("create a public one as a project admin", "public", true)
		g.bad("create one for another project as a project admin", "owner", "ct-other")
	}

	// Reads and lists.
	g.add(probe{name: "read", method: http.MethodGet, path: item})
	g.add(probe{name: "read by name", method: http.MethodGet, path: r.Path + "/" + g.name("a")})
	g.add(probe{name: "read an id that does not exist", method: http.MethodGet, path: r.Path + "/" + missingID(r)})
	g.add(probe{name: "read a name that does not exist", method: http.MethodGet, path: r.Path + "/CUSTOM_CT_NOTHING"})
	g.add(probe{name: "read an ident that is neither", method: http.MethodGet, path: r.Path + "/a@b"})
	g.add(probe{name: "read with fields", method: http.MethodGet, path: item, query: url.Values{"fields": {"name,steps"}}})
	g.add(probe{name: "read with an unknown field", method: http.MethodGet, path: item, query: url.Values{"fields": {"bogus"}}})
	g.add(probe{name: "read below the collection's microversion", method: http.MethodGet, path: item, microversion: belowVersion(r.MinVersion)})
	g.add(probe{name: "list all (this run's)", method: http.MethodGet, path: r.Path, ours: true})
	g.add(probe{name: "list in detail", method: http.MethodGet, path: r.Path, ours: true, query: url.Values{"detail": {"True"}}})
	g.add(probe{name: "list with fields", method: http.MethodGet, path: r.Path, ours: true, query: url.Values{"fields": {"name,extra"}}})
	g.add(probe{name: "list with limit 1 after a", method: http.MethodGet, path: r.Path, query: url.Values{"limit": {"1"}, "marker": {"{a}"}}})
	g.add(probe{name: "list in detail with limit 1 after a", method: http.MethodGet, path: r.Path,
		query: url.Values{"limit": {"1"}, "marker": {"{a}"}, "detail": {"true"}}})
	g.add(probe{name: "list sorted by name", method: http.MethodGet, path: r.Path, ours: true, query: url.Values{"sort_key": {"name"}}})
	g.add(probe{name: "list sorted by name, descending", method: http.MethodGet, path: r.Path, ours: true,
		query: url.Values{"sort_key": {"name"}, "sort_dir": {"desc"}}})
	if generic {
		for _, q := range []struct{ what, k, v string }{
			{"limit 0", "limit", "0"}, {"limit not a number", "limit", "x"}, {"a marker that does not exist", "marker", missingID(r)},
			{"a marker that is not a name", "marker", "a@b"}, {"sort_key extra", "sort_key", "extra"}, {"sort_key unknown", "sort_key", "ct_bogus"},
			{"sort_dir bogus", "sort_dir", "sideways"}, {"detail not a boolean", "detail", "maybe"}, {"an unknown filter", "ct_bogus", "1"},
		} {
			g.add(probe{name: "list with " + q.what, method: http.MethodGet, path: r.Path, ours: true, query: url.Values{q.k: {q.v}}})
		}
		g.add(probe{name: "list with detail and fields", method: http.MethodGet, path: r.Path, query: url.Values{"detail": {"True"}, "fields": {"name"}}})
		// What the runbooks plugin's prune asks for (uuid, name and extra in pages), and how Ironic
		// reads fields: the next link repeats them, detail=False goes with them, they are
		// lower-cased and kept once, an empty fields= shows only the links, an unknown one is
		// refused as an item is shown (an empty page refuses none), after the marker's lookup
		// and the limit's check.
		after := func(q url.Values) url.Values {
			q.Set("limit", "1")
			q.Set("marker", "{a}")
			return q
		}
		g.add(probe{name: "list with fields, limit 1 after a", method: http.MethodGet, path: r.Path,
			query: after(url.Values{"fields": {"uuid,name,extra"}})})
		g.add(probe{name: "list with detail false and fields, limit 1 after a", method: http.MethodGet, path: r.Path,
			query: after(url.Values{"detail": {"False"}, "fields": {"name"}})})
		g.add(probe{name: "list with fields in capitals and repeated, limit 1 after a", method: http.MethodGet, path: r.Path,
			query: after(url.Values{"fields": {" Name ,name,UUID"}})})
		g.add(probe{name: "list with fields empty, limit 1 after a", method: http.MethodGet, path: r.Path, query: after(url.Values{"fields": {""}})})
		g.add(probe{name: "read with fields empty", method: http.MethodGet, path: item, query: url.Values{"fields": {""}}})
		g.add(probe{name: "list with an unknown field, limit 1 after a", method: http.MethodGet, path: r.Path,
			query: after(url.Values{"fields": {"name,bogus"}})})
		g.add(probe{name: "list with an unknown field after a marker that does not exist", method: http.MethodGet, path: r.Path,
			query: url.Values{"fields": {"bogus"}, "marker": {missingID(r)}}})
		g.add(probe{name: "list with detail, fields and limit 0", method: http.MethodGet, path: r.Path,
			query: url.Values{"detail": {"True"}, "fields": {"name"}, "limit": {"0"}}})
		// The newest runbook is the last in Ironic's order (by id) while the suite holds the
		// e2e lock: after it the page is empty.
		g.create("create the newest", g.minimal(g.name("newest")), "newest")
		g.add(probe{name: "list with an unknown field after the newest", method: http.MethodGet, path: r.Path,
			query: url.Values{"fields": {"bogus"}, "marker": {"{newest}"}}})
	}
	g.add(probe{name: "list with a name filter", method: http.MethodGet, path: r.Path, ours: true, query: url.Values{"name": {g.name("a")}}})
	g.add(probe{name: "list without a microversion", method: http.MethodGet, path: r.Path, microversion: "none"})
	g.add(probe{name: "list below the collection's microversion", method: http.MethodGet, path: r.Path, microversion: belowVersion(r.MinVersion)})
	g.add(probe{name: "list at the collection's microversion", method: http.MethodGet, path: r.Path, ours: true, microversion: r.MinVersion})
	g.add(probe{name: "create below the collection's microversion", method: http.MethodPost, path: r.Path,
		body: g.minimal(g.name("old")), capture: "old", microversion: belowVersion(r.MinVersion)})

	// Updates.
	g.add(probe{name: "update with PUT", method: http.MethodPut, path: item, body: map[string]any{"name": g.name("a")}})
	g.patch("update extra", item, op("replace", "/extra", g.samples("extra")[1]))
	if generic {
		g.patch("update extra, adding a key", item, op("add", "/extra/k", "v"))
		g.patch("update extra, removing a key", item, op("remove", "/extra/k"))
		g.patch("update extra, replacing a key that is absent", item, op("replace", "/extra/nope", "v"))
		g.patch("update extra, removing a key that is absent", item, op("remove", "/extra/nope"))
	}
	g.patch("update extra with the wrong type", item, op("replace", "/extra", "x"))
	g.patch("update extra to null", item, op("replace", "/extra", nil))
	g.patch("update steps", item, op("replace", "/steps", g.samples("steps")[1]))
	g.patch("update steps, appending one", item, op("add", "/steps/-", g.step("bios", "appended", 3)))
	g.patch("update steps, changing one's args", item, op("add", "/steps/0/args/k", "v"))
	g.patch("update steps, removing one", item, op("remove", "/steps/1"))
	if generic {
		g.patch("update steps, removing the last", item, op("remove", "/steps/0"))
	}
	g.patch("update steps to none", item, op("replace", "/steps", []any{}))
	g.patch("update steps with a bad step", item, op("replace", "/steps", []any{g.step("bogus", "x", 1)}))
	g.patch("update steps with a repeated step", item, op("replace", "/steps", []any{g.step("bios", "x", 1), g.step("bios", "x", 2)}))
	g.patch("update name", item, op("replace", "/name", g.name("a-renamed")))
	g.patch("update name to one that is not a trait", item, op("replace", "/name", "lower"))
	g.patch("update name, removing it", item, op("remove", "/name"))
	g.patch("update name to a taken name", r.Path+"/{b}", op("replace", "/name", g.name("a-renamed")))
	g.patch("update name without a value", item, op("replace", "/name"))
	g.patch("update read-only uuid", item, op("replace", "/uuid", missingID(r)))
	g.patch("update read-only created_at", item, op("replace", "/created_at", "2020-01-01T00:00:00+00:00"))
	if owned {
		g.patch("update disable_ramdisk", item, op("replace", "/disable_ramdisk", true))
	}
	g.patch("update description", item, op("add", "/description", "d"))
	g.patch("update description, replacing", item, op("replace", "/description", "d"))
	g.patch("update a new root attribute", item, op("add", "/extra2", "x"))
	if generic {
		g.patch("update with an unknown op", item, map[string]any{"op": "bogus", "path": "/name", "value": "x"})
		g.patch("update with a move", item, map[string]any{"op": "move", "from": "/extra", "path": "/name"})
		g.patch("update with an op without a path", item, map[string]any{"op": "add", "value": "x"})
		g.patch("update with a path that is not one", item, op("add", "name", "x"))
		g.add(probe{name: "update with a body that is not a list", method: http.MethodPatch, path: item, body: map[string]any{"name": "x"}})
		g.add(probe{name: "update with a null body", method: http.MethodPatch, path: item, body: json.RawMessage("null")})
	}
	g.patch("update with nothing", item)
	g.patch("update an id that does not exist", r.Path+"/"+missingID(r), op("replace", "/extra", map[string]any{}))
	g.patch("update several fields at once", item, op("replace", "/extra", map[string]any{"m": "n"}), op("replace", "/name", g.name("a")))
	g.add(probe{name: "read after the updates", method: http.MethodGet, path: item})

	// Who may do what.
	g.add(probe{name: "member: list", cloud: "member", method: http.MethodGet, path: r.Path, ours: true})
	g.add(probe{name: "member: read", cloud: "member", method: http.MethodGet, path: item})
	g.add(probe{name: "member: create", cloud: "member", method: http.MethodPost, path: r.Path, body: g.minimal(g.name("m")), capture: "m"})
	g.add(probe{name: "member: create an invalid one", cloud: "member", method: http.MethodPost, path: r.Path, body: map[string]any{"name": "x"}})
	g.add(probe{name: "member: update", cloud: "member", method: http.MethodPatch, path: item, body: []any{op("replace", "/extra", map[string]any{})}})
	g.add(probe{name: "member: delete", cloud: "member", method: http.MethodDelete, path: item})
	if owned {
		g.patch("project admin: make it public", item, op("replace", "/public", true))
		g.patch("project admin: change its owner", item, op("replace", "/owner", "ct-other"))
		g.patch("project admin: change extra and public", item, op("replace", "/extra", map[string]any{}), op("replace", "/public", true))
		g.add(probe{name: "system: create one without an owner", cloud: "system", method: http.MethodPost, path: r.Path,
			body: g.minimal(g.name("s")), capture: "s"})
		g.add(probe{name: "system: create a public one with an owner", cloud: "system", method: http.MethodPost, path: r.Path,
			body: withField(withField(g.minimal(g.name("sp")), "public", true), "owner", "ct-other"), capture: "sp"})
		sys := r.Path + "/{s}"
		g.add(probe{name: "project admin: read the system's", method: http.MethodGet, path: sys})
		g.add(probe{name: "project admin: list (the system's is not shown)", method: http.MethodGet, path: r.Path, ours: true})
		g.add(probe{name: "project admin: update the system's", method: http.MethodPatch, path: sys, body: []any{op("replace", "/extra", map[string]any{})}})
		g.add(probe{name: "project admin: delete the system's", method: http.MethodDelete, path: sys})
		g.add(probe{name: "system: give an owner to a public one", cloud: "system", method: http.MethodPatch, path: r.Path + "/{sp}",
			body: []any{op("replace", "/owner", "ct-other")}})
		g.add(probe{name: "system: make one public", cloud: "system", method: http.MethodPatch, path: sys, body: []any{op("replace", "/public", true)}})
		g.add(probe{name: "project admin: read a public one", method: http.MethodGet, path: sys})
		g.add(probe{name: "member: read a public one", cloud: "member", method: http.MethodGet, path: sys})
		g.add(probe{name: "member: list (public ones are shown)", cloud: "member", method: http.MethodGet, path: r.Path, ours: true})
		g.add(probe{name: "project admin: update a public one", method: http.MethodPatch, path: sys, body: []any{op("replace", "/extra", map[string]any{})}})
		g.add(probe{name: "system: make it private and give it an owner", cloud: "system", method: http.MethodPatch, path: sys,
			body: []any{op("replace", "/public", false), op("replace", "/owner", "ct-other")}})
		g.add(probe{name: "system: read the project admin's", cloud: "system", method: http.MethodGet, path: item})
		g.add(probe{name: "system: update the project admin's", cloud: "system", method: http.MethodPatch, path: item,
			body: []any{op("replace", "/extra", map[string]any{"by": "system"})}})
		g.add(probe{name: "system: list", cloud: "system", method: http.MethodGet, path: r.Path, ours: true})
	} else {
		g.add(probe{name: "project admin: list", cloud: "admin", method: http.MethodGet, path: r.Path, ours: true})
		g.add(probe{name: "project admin: read", cloud: "admin", method: http.MethodGet, path: item})
		g.add(probe{name: "project admin: create", cloud: "admin", method: http.MethodPost, path: r.Path, body: g.minimal(g.name("p")), capture: "p"})
		g.add(probe{name: "project admin: update", cloud: "admin", method: http.MethodPatch, path: item, body: []any{op("replace", "/extra", map[string]any{})}})
		g.add(probe{name: "project admin: delete", cloud: "admin", method: http.MethodDelete, path: item})
	}

	g.add(probe{name: "delete by name", method: http.MethodDelete, path: r.Path + "/" + g.name("b")})
	g.add(probe{name: "delete", method: http.MethodDelete, path: item})
	g.add(probe{name: "read what was deleted", method: http.MethodGet, path: item})
	g.add(probe{name: "delete again", method: http.MethodDelete, path: item})
}

// belowVersion is the microversion before v.
func belowVersion(v string) string {
	maj, mnr, _ := strings.Cut(v, ".")
	var n int
	fmt.Sscan(mnr, &n)
	return fmt.Sprintf("%s.%d", maj, n-1)
}
