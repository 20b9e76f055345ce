package contract

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
)

// A probe is one request of a collection's generated sequence. The sequence is derived from the
// collection's rules alone (host/internal/osapi), so it is the same for the embedded and the
// real cloud: valid creates, one invalid create per rule (each required field left out, each
// field of the wrong type, too long, outside its values, each read-only field sent, an unknown
// field, bad tags), reads, filtered and paged lists, updates with the wrong and the right verb,
// each fixed field changed, member requests, deletes and reads of what is gone.
type probe struct {
	name   string
	cloud  string // admin or member
	method string
	// path is below the endpoint; {a}, {b}, ... are the ids captured under those names.
	path  string
	query url.Values
	body  any
	// capture names the id of what a successful create made; cleanup deletes it at the end.
	capture string
	// ours keeps, in a list's answer, only the items this run made (their names hold the run).
	ours bool
	// microversion is the Ironic microversion sent ("none" sends none).
	microversion string
}

// probes is the sequence for r; base prefixes every name it gives.
func probes(r *osapi.Resource, base string) []probe {
	if r.JSONPatch {
		return ironicProbes(r, base)
	}
	g := gen{r: r, base: base}
	return g.all()
}

type gen struct {
	r    *osapi.Resource
	base string
	out  []probe
	n    int
}

func (g *gen) add(p probe) {
	if p.cloud == "" {
		p.cloud = "admin"
	}
	g.out = append(g.out, p)
}

// name is a fresh name for an object this run may make.
func (g *gen) name(tag string) string { return g.base + "-" + tag }

// minimal is a create body with the required fields and a name.
func (g *gen) minimal(name string) map[string]any {
	body := map[string]any{}
	for _, f := range g.r.Fields {
		if f.Create == osapi.Required && len(f.Samples) > 0 {
			body[f.Name] = f.Samples[0]
		}
	}
	body["name"] = name
	return body
}

func (g *gen) wrap(body map[string]any) map[string]any { return map[string]any{g.r.Key: body} }

// create adds a create probe; every create captures what it makes, so cleanup finds it even when
// a create that should fail succeeds.
func (g *gen) create(name string, body map[string]any, capture string) {
	if capture == "" {
		g.n++
		capture = fmt.Sprintf("x%d", g.n)
	}
	g.add(probe{name: name, method: http.MethodPost, path: g.r.Path, body: g.wrap(body), capture: capture})
}

// wrongType is a value of another JSON type than the field takes.
func wrongType(f osapi.Field) any {
	switch f.Type {
	case osapi.String, osapi.UUID:
		return 12345
	case osapi.Boolean:
		return "maybe"
	case osapi.Integer:
		return "many"
	case osapi.Strings, osapi.CIDRs, osapi.Objects:
		return "not-a-list"
	}
	return "not-an-object"
}

func (g *gen) all() []probe {
	r := g.r
	item := r.Path + "/{a}"
	g.create("create with the required fields", g.minimal(g.name("a")), "a")
	full := g.minimal(g.name("b"))
	for _, f := range r.Fields {
		if f.Create != osapi.No && len(f.Samples) > 0 && f.Ref == "" && f.Name != "name" {
			full[f.Name] = f.Samples[0]
		}
	}
	g.create("create with every field", full, "b")
	g.create("create a second object of the same name", g.minimal(g.name("a")), "")
	for _, f := range r.Fields {
		body := g.minimal(g.name("bad"))
		switch {
		case f.Create == osapi.Required:
			delete(body, f.Name)
			g.create("create without "+f.Name, body, "")
		case f.Create == osapi.No && f.Name != "id":
			body[f.Name] = sample(f)
			g.create("create with read-only "+f.Name, body, "")
		}
		if f.Create == osapi.No {
			continue
		}
		g.create("create with "+f.Name+" of the wrong type", withField(g.minimal(g.name("bad")), f.Name, wrongType(f)), "")
		if f.Type == osapi.String && f.MaxLen > 0 {
			g.create("create with "+f.Name+" too long", withField(g.minimal(g.name("bad")), f.Name, strings.Repeat("x", f.MaxLen+1)), "")
			if f.Name != "name" {
				g.create("create with "+f.Name+" at its longest", withField(g.minimal(g.name("long-"+f.Name)), f.Name,
					strings.Repeat("x", f.MaxLen)), "")
			}
		}
		if f.MinLen > 0 {
			g.create("create with "+f.Name+" empty", withField(g.minimal(g.name("bad")), f.Name, ""), "")
		}
		if len(f.Enum) > 0 {
			g.create("create with "+f.Name+" outside its values", withField(g.minimal(g.name("bad")), f.Name, 5), "")
		}
		if f.Nullable {
			g.create("create with "+f.Name+" null", withField(g.minimal(g.name("null-"+f.Name)), f.Name, nil), "")
		}
		if f.Ref != "" {
			g.create("create with "+f.Name+" naming nothing", withField(g.minimal(g.name("bad")), f.Name, "ct-nothing"), "")
		}
	}
	g.create("create with an unknown field", withField(g.minimal(g.name("extra")), "ct_unknown", "x"), "extra")
	if r.ExtrasBreakReads() {
		// The create failed but stored an object that breaks every list: delete it at once.
		g.deleteNow("extra")
		g.create("create an object to update with an unknown field", g.minimal(g.name("u")), "u")
		g.add(probe{name: "update with an unknown field", method: r.Update, path: r.Path + "/{u}", body: g.wrap(map[string]any{"ct_unknown": "y"})})
		g.deleteNow("u")
	}
	if r.Tags == osapi.TagsKeystone {
		for _, c := range []struct {
			what string
			tags []any
		}{
			{"a comma", []any{"a,b"}}, {"a slash", []any{"a/b"}}, {"a repeated tag", []any{"a", "a"}},
			{"an empty tag", []any{""}}, {"a tag too long", []any{strings.Repeat("t", 256)}},
			{"81 tags", numbered("t", 81)}, {"80 tags", numbered("t", 80)},
		} {
			g.create("create with tags holding "+c.what, withField(g.minimal(g.name("tags")), "tags", c.tags), "")
		}
	}

	g.add(probe{name: "read", method: http.MethodGet, path: item})
	g.add(probe{name: "read an id that does not exist", method: http.MethodGet, path: r.Path + "/" + missingID(r)})
	g.add(probe{name: "list by name", method: http.MethodGet, path: r.Path, query: url.Values{"name": {g.name("a")}}})
	g.add(probe{name: "list all (this run's)", method: http.MethodGet, path: r.Path, ours: true})
	g.add(probe{name: "list with an unknown filter", method: http.MethodGet, path: r.Path,
		query: url.Values{"name": {g.name("a")}, "ct_bogus": {"1"}}})
	g.add(probe{name: "list with fields", method: http.MethodGet, path: r.Path,
		query: url.Values{"name": {g.name("a")}, "fields": {"id", "name"}}})
	// One object is named b, so the page does not depend on how the cloud's random ids sort.
	g.add(probe{name: "list with limit 1", method: http.MethodGet, path: r.Path, query: url.Values{"name": {g.name("b")}, "limit": {"1"}}})
	for _, f := range r.Fields {
		if !f.Filter || f.Name == "name" || f.Name == "id" {
			continue
		}
		v := listValue(f)
		g.add(probe{name: "list filtered by " + f.Name, method: http.MethodGet, path: r.Path, ours: true,
			query: url.Values{f.Name: {v}}})
	}
	for _, f := range r.Fields {
		if f.Filter || f.Name == "id" || strings.HasSuffix(f.Name, "_at") || f.Type == osapi.Object || f.Type == osapi.Strings {
			continue
		}
		g.add(probe{name: "list filtered by " + f.Name + " (not a filter)", method: http.MethodGet, path: r.Path,
			query: url.Values{"name": {g.name("a")}, f.Name: {listValue(f)}}})
	}

	wrongVerb := http.MethodPatch
	if r.Update == http.MethodPatch {
		wrongVerb = http.MethodPut
	}
	g.add(probe{name: "update with " + wrongVerb, method: wrongVerb, path: item, body: g.wrap(map[string]any{"name": g.name("a")})})
	for _, f := range r.Fields {
		switch {
		case f.Update != osapi.No && len(f.Samples) > 1:
			g.add(probe{name: "update " + f.Name, method: r.Update, path: item, body: g.wrap(map[string]any{f.Name: f.Samples[1]})})
			g.add(probe{name: "update " + f.Name + " with the wrong type", method: r.Update, path: item,
				body: g.wrap(map[string]any{f.Name: wrongType(f)})})
		case f.Update == osapi.No && f.Name != "id":
			g.add(probe{name: "update read-only " + f.Name, method: r.Update, path: item, body: g.wrap(map[string]any{f.Name: sample(f)})})
		}
	}
	g.add(probe{name: "update name", method: r.Update, path: item, body: g.wrap(map[string]any{"name": g.name("a-renamed")})})
	if !r.ExtrasBreakReads() {
		g.add(probe{name: "update with an unknown field", method: r.Update, path: item, body: g.wrap(map[string]any{"ct_unknown": "y"})})
	}
	g.add(probe{name: "update with nothing", method: r.Update, path: item, body: g.wrap(map[string]any{})})
	g.add(probe{name: "update an id that does not exist", method: r.Update, path: r.Path + "/" + missingID(r),
		body: g.wrap(map[string]any{"name": g.name("z")})})
	if r.UniqueName != nil {
		g.add(probe{name: "rename to a taken name", method: r.Update, path: r.Path + "/{b}", body: g.wrap(map[string]any{"name": g.name("a-renamed")})})
	}
	g.tagProbes()

	g.add(probe{name: "member: list", cloud: "member", method: http.MethodGet, path: r.Path, ours: true})
	g.add(probe{name: "member: read", cloud: "member", method: http.MethodGet, path: item})
	g.add(probe{name: "member: create", cloud: "member", method: http.MethodPost, path: r.Path,
		body: g.wrap(g.minimal(g.name("m"))), capture: "m"})
	g.add(probe{name: "member: update", cloud: "member", method: r.Update, path: item, body: g.wrap(map[string]any{"name": g.name("m2")})})
	g.add(probe{name: "member: delete", cloud: "member", method: http.MethodDelete, path: item})

	if r.DeleteEnabled != "" {
		g.add(probe{name: "delete while enabled", method: http.MethodDelete, path: item})
		g.add(probe{name: "disable", method: r.Update, path: item, body: g.wrap(map[string]any{"enabled": false})})
	}
	g.add(probe{name: "delete", method: http.MethodDelete, path: item})
	g.add(probe{name: "read what was deleted", method: http.MethodGet, path: item})
	g.add(probe{name: "delete again", method: http.MethodDelete, path: item})
	return g.out
}

// deleteNow deletes (after disabling, where an enabled object cannot go) what name captured.
func (g *gen) deleteNow(name string) {
	path := g.r.Path + "/{" + name + "}"
	if g.r.DeleteEnabled != "" {
		g.add(probe{name: "disable " + name, method: g.r.Update, path: path, body: g.wrap(map[string]any{"enabled": false})})
	}
	g.add(probe{name: "delete " + name, method: http.MethodDelete, path: path})
}

// tagProbes exercise the /tags sub-resource.
func (g *gen) tagProbes() {
	if g.r.Tags == osapi.TagsNone {
		return
	}
	tags := g.r.Path + "/{a}/tags"
	g.add(probe{name: "tags: replace", method: http.MethodPut, path: tags, body: map[string]any{"tags": []any{"z", "a", "m"}}})
	g.add(probe{name: "tags: read the object", method: http.MethodGet, path: g.r.Path + "/{a}"})
	g.add(probe{name: "tags: list", method: http.MethodGet, path: tags})
	g.add(probe{name: "tags: add one", method: http.MethodPut, path: tags + "/b"})
	g.add(probe{name: "tags: add one holding a comma", method: http.MethodPut, path: tags + "/c,d"})
	g.add(probe{name: "tags: check one", method: http.MethodGet, path: tags + "/b"})
	g.add(probe{name: "tags: check one that is absent", method: http.MethodGet, path: tags + "/nope"})
	g.add(probe{name: "tags: remove one that is absent", method: http.MethodDelete, path: tags + "/nope"})
	g.add(probe{name: "tags: remove one", method: http.MethodDelete, path: tags + "/b"})
	g.add(probe{name: "tags: replace with a repeated tag", method: http.MethodPut, path: tags, body: map[string]any{"tags": []any{"a", "a"}}})
	g.add(probe{name: "tags: replace with a tag too long", method: http.MethodPut, path: tags,
		body: map[string]any{"tags": []any{strings.Repeat("t", 256)}}})
	g.add(probe{name: "tags: replace with too many", method: http.MethodPut, path: tags, body: map[string]any{"tags": numbered("t", 81)}})
	g.add(probe{name: "tags: list filtered", method: http.MethodGet, path: g.r.Path, ours: true, query: url.Values{"tags": {"a,m"}}})
	g.add(probe{name: "tags: list filtered by any", method: http.MethodGet, path: g.r.Path, ours: true, query: url.Values{"tags-any": {"m,q"}}})
	g.add(probe{name: "tags: list filtered by not", method: http.MethodGet, path: g.r.Path, ours: true, query: url.Values{"not-tags": {"a"}}})
	g.add(probe{name: "tags: remove all", method: http.MethodDelete, path: tags})
}

func withField(body map[string]any, k string, v any) map[string]any {
	body[k] = v
	return body
}

func numbered(prefix string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// sample is a plausible value for a field, for fields whose rules give none.
func sample(f osapi.Field) any {
	if len(f.Samples) > 0 {
		return f.Samples[len(f.Samples)-1]
	}
	switch f.Type {
	case osapi.Boolean:
		return true
	case osapi.Integer:
		return 7
	case osapi.Strings, osapi.CIDRs:
		return []any{}
	case osapi.Object:
		return map[string]any{}
	case osapi.UUID:
		return "00000000-0000-4000-8000-000000000000"
	}
	if f.Ref != "" || f.Name == "id" || strings.HasSuffix(f.Name, "_id") {
		return "ct-other"
	}
	return "ct-value"
}

// listValue is a filter value matching what the probes create.
func listValue(f osapi.Field) string {
	if len(f.Samples) > 0 {
		return fmt.Sprint(f.Samples[0])
	}
	switch f.Type {
	case osapi.Boolean:
		return "false"
	case osapi.Integer:
		return "0"
	}
	if f.Default != nil {
		return fmt.Sprint(f.Default)
	}
	return "ct-value"
}

// missingID is an id no object of r has.
func missingID(r *osapi.Resource) string {
	if r.Service == osapi.Identity {
		return "00000000000040008000000000000000"
	}
	return "00000000-0000-4000-8000-000000000000"
}

// expandPath replaces {name} with captured ids.
func expandPath(path string, ids map[string]string) (string, bool) {
	ok := true
	for _, seg := range strings.Split(path, "/") {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			id, have := ids[strings.Trim(seg, "{}")]
			if !have {
				ok = false
			}
			path = strings.Replace(path, seg, id, 1)
		}
	}
	return path, ok
}
