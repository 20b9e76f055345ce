package scaffold

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
)

// model is what the templates see: the options, the collection's rules and the spec fields
// derived from them.
type model struct {
	Options
	Known                       bool
	Plural, Singular, EnvPrefix string
	ModVersion                  string // the openstack-sync modules' version in go.mod
	Replace                     bool   // go.mod replaces them with a checkout
	res                         *osapi.Resource
	fields                      []field
}

// namePrefix is the name-prefix ownership's prefix.
const namePrefix = "oss-"

func (m *model) Service() string    { return m.res.Service }
func (m *model) Path() string       { return m.res.Path }
func (m *model) Key() string        { return m.res.Key }
func (m *model) ListKey() string    { return m.res.Plural }
func (m *model) Noun() string       { return m.res.Noun }
func (m *model) Update() string     { return m.res.Update }
func (m *model) Collection() string { return m.res.Ref() }
func (m *model) ServiceTitle() string {
	return map[string]string{osapi.Identity: "Keystone", osapi.Network: "Neutron", osapi.Baremetal: "Ironic"}[m.res.Service]
}

// TagsInBody: the tags travel in create and update bodies (Keystone); TagsPath: they are set
// through /{id}/tags (Neutron).
func (m *model) TagsInBody() bool { return m.res.Tags == osapi.TagsKeystone }
func (m *model) TagsPath() bool   { return m.res.Tags == osapi.TagsNeutron }
func (m *model) HasTags() bool    { return m.res.Tags != osapi.TagsNone }

func (m *model) ByTag() bool         { return m.Ownership == OwnerTag }
func (m *model) ByPrefix() bool      { return m.Ownership == OwnerNamePrefix }
func (m *model) ByDescription() bool { return m.Ownership == OwnerDescription }
func (m *model) ByExtra() bool       { return m.Ownership == OwnerExtra }
func (m *model) Adopts() bool        { return m.Ownership != OwnerNone }
func (m *model) OwnerTag() string    { return "openstack-sync:" + m.Name }
func (m *model) NamePrefix() string  { return namePrefix }
func (m *model) Marker() string      { return "[managed-by:" + m.Name + "]" }

// JSONPatch: bodies are the bare object and updates JSON Patch (Ironic); MinVersion is the
// microversion the plugin sends; IDKey is the id's JSON name ("uuid" for Ironic).
func (m *model) JSONPatch() bool    { return m.res.JSONPatch }
func (m *model) MinVersion() string { return m.res.MinVersion }
func (m *model) IDKey() string      { return m.res.ID() }
func (m *model) SystemScoped() bool { return m.res.SystemScoped }
func (m *model) TraitNames() bool   { return traitNames(m.res) }
func (m *model) OwnerKey() string   { return "openstack-sync" }

// HasJSON: a spec field holds JSON values (sameJSON compares them).
func (m *model) HasJSON() bool { return slices.ContainsFunc(m.fields, field.isJSON) || m.ByExtra() }

// OSName is the OpenStack name an example CR named name asks for: the name, or for a resource
// whose names are custom traits, CUSTOM_ and the name in capitals.
func (m *model) OSName(name string) string {
	if m.TraitNames() {
		return "CUSTOM_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	}
	return name
}

// UniqueNames: the service refuses a second resource of a name (409).
func (m *model) UniqueNames() bool { return m.res.UniqueName != nil }

// DisableFirst: an enabled resource cannot be deleted (Keystone domains).
func (m *model) DisableFirst() bool { return m.res.DeleteEnabled != "" }

// HasBuildState: the resource reports a status that is ACTIVE once it is usable.
func (m *model) HasBuildState() bool { return hasField(m.res, "status") }

func (m *model) checkOwnership() error {
	switch m.Ownership {
	case OwnerTag:
		if !m.HasTags() {
			return fmt.Errorf("--ownership tag: %s has no tags; use name-prefix%s or none", m.res.Ref(), m.descriptionHint())
		}
	case OwnerDescription:
		if f, ok := m.res.Field("description"); !ok || f.Update == osapi.No {
			return fmt.Errorf("--ownership description: %s has no description it keeps; use name-prefix%s or none", m.res.Ref(), m.tagHint())
		}
	case OwnerExtra:
		if f, ok := m.res.Field("extra"); !ok || f.Update == osapi.No {
			return fmt.Errorf("--ownership extra: %s has no extra it keeps; use name-prefix%s%s or none", m.res.Ref(), m.tagHint(), m.descriptionHint())
		}
	case OwnerNamePrefix:
		if m.TraitNames() {
			return fmt.Errorf("--ownership name-prefix: %s's names are custom traits (CUSTOM_[A-Z0-9_]+), which a prefix cannot mark; use extra or none", m.res.Ref())
		}
	case OwnerNone:
	default:
		return fmt.Errorf("--ownership %q: want tag, name-prefix, description, extra or none", m.Ownership)
	}
	return nil
}

func (m *model) descriptionHint() string {
	if f, ok := m.res.Field("description"); ok && f.Update != osapi.No {
		return ", description"
	}
	return ""
}

func (m *model) tagHint() string {
	if m.HasTags() {
		return ", tag"
	}
	return ""
}

// OwnershipDoc says in a sentence where ownership lives.
func (m *model) OwnershipDoc() string {
	switch m.Ownership {
	case OwnerTag:
		return fmt.Sprintf("the tag %q", m.OwnerTag())
	case OwnerNamePrefix:
		return fmt.Sprintf("the name prefix %q", namePrefix)
	case OwnerDescription:
		return fmt.Sprintf("the marker %q at the end of the description", m.Marker())
	case OwnerExtra:
		return fmt.Sprintf("the key %q in extra, whose value is the plugin's name", m.OwnerKey())
	}
	return "none: the plugin knows a resource as its CR's only by status.id, and adopts nothing"
}

// name is the name field's rules.
func (m *model) nameField() (field, bool) {
	i := slices.IndexFunc(m.fields, func(f field) bool { return f.JSON == "name" })
	if i < 0 {
		return field{}, false
	}
	return m.fields[i], true
}

// NameMax is how long spec.resource.name may be: the service's limit, less the prefix.
func (m *model) NameMax() int {
	f, _ := m.nameField()
	n := f.rules.MaxLen
	if n > 0 && m.ByPrefix() {
		n -= len(namePrefix)
	}
	return n
}

// SpecFields are the Go fields of Spec.
func (m *model) SpecFields() string {
	var b strings.Builder
	for _, f := range m.fields {
		tag := f.JSON
		if !f.Required {
			tag += ",omitempty"
		}
		doc := f.Doc
		if !f.Mutable && f.JSON != "name" && !strings.Contains(doc, "fixed at creation") {
			doc = strings.TrimSuffix(doc, ".") + "; fixed at creation."
		}
		fmt.Fprintf(&b, "\t// %s\n\t%s %s `json:%q`\n", strings.TrimSpace(doc), f.Go, f.GoType(), tag)
	}
	switch {
	case m.ByTag():
		b.WriteString("\t// Tags the resource carries besides the plugin's owner tag, which it always carries.\n")
		b.WriteString("\tTags []string `json:\"tags,omitempty\"`\n")
	case m.HasTags():
		b.WriteString("\t// Tags the resource carries; nil leaves them alone.\n\tTags []string `json:\"tags,omitempty\"`\n")
	}
	return b.String()
}

// FilterFields are the Go fields of Filter, spec.import.filter: the string fields lists filter by.
func (m *model) FilterFields() string {
	var b strings.Builder
	for _, f := range m.fields {
		if f.Filter {
			fmt.Fprintf(&b, "\t%s string `json:\"%s,omitempty\"`\n", f.Go, f.JSON)
		}
	}
	return b.String()
}

// FilterQuery sets the list query of a filter.
func (m *model) FilterQuery() string {
	var b strings.Builder
	for _, f := range m.fields {
		if f.Filter {
			fmt.Fprintf(&b, "\tif f.%s != \"\" {\n\t\tq.Set(%q, f.%s)\n\t}\n", f.Go, f.JSON, f.Go)
		}
	}
	return b.String()
}

// ObservedFields are the Go fields of resource, the object as read.
func (m *model) ObservedFields() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\tID string `json:%q`\n", m.res.ID())
	for _, f := range m.fields {
		fmt.Fprintf(&b, "\t%s %s `json:%q`\n", f.Go, f.ObservedType(), f.JSON)
	}
	if m.HasTags() {
		b.WriteString("\tTags []string `json:\"tags\"`\n")
	}
	if m.HasBuildState() {
		b.WriteString("\tStatus string `json:\"status\"`\n")
	}
	return b.String()
}

// value is the Go expression of a field of want for a request body.
func value(f field) string {
	switch {
	case f.JSON == "name":
		return "openstackName(want.Name)"
	case f.Required || f.Kind == "strings" || f.Kind == "object" || f.Kind == "objects":
		return "want." + f.Go
	}
	return "*want." + f.Go
}

// isJSON: the field holds JSON values (objects, lists of objects), compared as JSON.
func (f field) isJSON() bool { return f.Kind == "object" || f.Kind == "objects" }

// CreateBody fills body, the create's object, from want.
func (m *model) CreateBody() string {
	var b strings.Builder
	for _, f := range m.fields {
		switch {
		case f.JSON == "description" && m.ByDescription():
			b.WriteString("\tbody[\"description\"] = describe(want.Description, \"\")\n")
		case f.JSON == "extra" && m.ByExtra():
			b.WriteString("\tbody[\"extra\"] = mark(want.Extra, nil)\n")
		case f.Required:
			fmt.Fprintf(&b, "\tbody[%q] = %s\n", f.JSON, value(f))
		default:
			fmt.Fprintf(&b, "\tif want.%s != nil {\n\t\tbody[%q] = %s\n\t}\n", f.Go, f.JSON, value(f))
		}
	}
	if m.TagsInBody() {
		b.WriteString("\tif tags := wantTags(want.Tags); tags != nil {\n\t\tbody[\"tags\"] = tags\n\t}\n")
	}
	return b.String()
}

// Changes fills changes, an update's fields, with what differs from res; FixedChecks refuses a
// change to a field OpenStack fixes at creation.
func (m *model) Changes() string {
	var b strings.Builder
	for _, f := range m.fields {
		if !f.Mutable {
			continue
		}
		switch {
		case f.JSON == "description" && m.ByDescription():
			b.WriteString("\tif d := describe(want.Description, res.Description); d != res.Description {\n\t\tchanges[\"description\"] = d\n\t}\n")
		case f.JSON == "extra" && m.ByExtra():
			b.WriteString("\tif e := mark(want.Extra, res.Extra); !sameJSON(e, res.Extra) {\n\t\tchanges[\"extra\"] = e\n\t}\n")
		case f.isJSON() && f.Required:
			fmt.Fprintf(&b, "\tif !sameJSON(want.%s, res.%s) {\n\t\tchanges[%q] = want.%s\n\t}\n", f.Go, f.Go, f.JSON, f.Go)
		case f.isJSON():
			fmt.Fprintf(&b, "\tif want.%s != nil && !sameJSON(want.%s, res.%s) {\n\t\tchanges[%q] = want.%s\n\t}\n", f.Go, f.Go, f.Go, f.JSON, f.Go)
		case f.JSON == "name" || f.Required:
			fmt.Fprintf(&b, "\tif v := %s; v != res.%s {\n\t\tchanges[%q] = v\n\t}\n", value(f), f.Go, f.JSON)
		case f.Kind == "strings":
			fmt.Fprintf(&b, "\tif want.%s != nil && !sameSet(want.%s, res.%s) {\n\t\tchanges[%q] = want.%s\n\t}\n", f.Go, f.Go, f.Go, f.JSON, f.Go)
		default:
			fmt.Fprintf(&b, "\tif want.%s != nil && *want.%s != res.%s {\n\t\tchanges[%q] = *want.%s\n\t}\n", f.Go, f.Go, f.Go, f.JSON, f.Go)
		}
	}
	if m.TagsInBody() {
		b.WriteString("\tif tags := wantTags(want.Tags); tags != nil && !sameSet(tags, res.Tags) {\n\t\tchanges[\"tags\"] = tags\n\t}\n")
	}
	return b.String()
}

// FixedChecks refuses, as a terminal error, a spec that asks a field fixed at creation to change.
func (m *model) FixedChecks() string {
	var b strings.Builder
	for _, f := range m.fields {
		if f.Mutable {
			continue
		}
		cond := fmt.Sprintf("want.%s != nil && *want.%s != res.%s", f.Go, f.Go, f.Go)
		shown := "*want." + f.Go
		switch {
		case f.isJSON():
			cond, shown = fmt.Sprintf("want.%s != nil && !sameJSON(want.%s, res.%s)", f.Go, f.Go, f.Go), "want."+f.Go
		case f.Kind == "strings":
			cond, shown = fmt.Sprintf("want.%s != nil && !sameSet(want.%s, res.%s)", f.Go, f.Go, f.Go), "want."+f.Go
		case f.Required:
			cond, shown = fmt.Sprintf("want.%s != res.%s", f.Go, f.Go), "want."+f.Go
		}
		fmt.Fprintf(&b, "\tif %s {\n\t\tfixed = append(fixed, fmt.Sprintf(\"spec.resource.%s is %%v in OpenStack, the spec asks for %%v\", res.%s, %s))\n\t}\n",
			cond, f.JSON, f.Go, shown)
	}
	return b.String()
}

// ObservedMap is status.resource: what OpenStack holds, field by field.
func (m *model) ObservedMap() string {
	var b strings.Builder
	for _, f := range m.fields {
		fmt.Fprintf(&b, "\t\t%q: r.%s,\n", f.JSON, f.Go)
	}
	if m.HasTags() {
		b.WriteString("\t\t\"tags\": r.Tags,\n")
	}
	return b.String()
}

// sample is a value of the field for examples and tests: the rules' first sample, the CR's
// name for name.
func sample(f field, name string) (any, bool) {
	switch {
	case f.JSON == "name":
		return name, true
	case len(f.rules.Samples) > 0 && f.rules.Ref == "":
		return f.rules.Samples[0], true
	case f.Required && f.Kind == "string":
		return "example", true
	}
	return nil, false
}

// ExampleResource is spec.resource of an example CR named name, as a JSON object (valid YAML).
func (m *model) ExampleResource(name string) string {
	obj := map[string]any{}
	for _, f := range m.fields {
		if v, ok := sample(f, m.OSName(name)); ok && (f.Required || f.JSON == "name" || f.JSON == "description") {
			obj[f.JSON] = v
		}
	}
	if m.HasTags() {
		obj["tags"] = []string{"example"}
	}
	b, _ := json.Marshal(obj)
	return string(b)
}

// edit is the field the generated tests change on an existing resource, and its new value.
func (m *model) edit() (field, any) {
	var best field
	var to any
	for _, f := range m.fields {
		if !f.Mutable || len(f.rules.Samples) < 2 || fmt.Sprint(f.rules.Samples[0]) == fmt.Sprint(f.rules.Samples[1]) ||
			f.JSON == "description" && m.ByDescription() || f.JSON == "extra" && m.ByExtra() {
			continue
		}
		if to == nil || f.JSON == "description" {
			best, to = f, f.rules.Samples[1]
		}
	}
	if to == nil {
		best, _ = m.nameField()
		to = m.OSName("renamed")
	}
	return best, to
}

// EditField and EditValue are the JSON name and new value (as Go) of the field the tests edit.
func (m *model) EditField() string { f, _ := m.edit(); return f.JSON }
func (m *model) EditValue() string {
	_, v := m.edit()
	return goLiteral(v)
}

// goLiteral is a JSON value as a Go literal.
func goLiteral(v any) string {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = goLiteral(it)
		}
		return "[]any{" + strings.Join(parts, ", ") + "}"
	case []string:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = goLiteral(it)
		}
		return "[]any{" + strings.Join(parts, ", ") + "}"
	case map[string]any:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, fmt.Sprintf("%q: %s", k, goLiteral(x[k])))
		}
		return "map[string]any{" + strings.Join(parts, ", ") + "}"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Unowned is the body of a resource made by hand, for the conformance kit.
func (m *model) Unowned() string {
	obj := map[string]any{}
	for _, f := range m.fields {
		if f.Required {
			v, _ := sample(f, "made-by-hand")
			obj[f.JSON] = v
		}
	}
	obj["name"] = m.OSName("made-by-hand")
	if m.JSONPatch() {
		b, _ := json.Marshal(obj)
		return string(b)
	}
	b, _ := json.Marshal(map[string]any{m.res.Key: obj})
	return string(b)
}

// ReadinessQuery is the query of the readiness check: a name no resource has, which every
// collection's list accepts.
// Ironic's lists filter by nothing and refuse what they do not know: one item is enough.
func (m *model) ReadinessQuery() string {
	if m.JSONPatch() {
		return `url.Values{"limit": {"1"}}`
	}
	return `url.Values{"name": {"openstack-sync-wait-for-api"}}`
}

// FilterKeep is the import filter applied to listed items, for a service whose lists filter by
// nothing (Ironic).
func (m *model) FilterKeep() string {
	var conds []string
	for _, f := range m.fields {
		if f.Filter {
			conds = append(conds, fmt.Sprintf("(f.%s == \"\" || r.%s == f.%s)", f.Go, f.Go, f.Go))
		}
	}
	if len(conds) == 0 {
		return "true"
	}
	return strings.Join(conds, " && ")
}

// crdProperty is the CRD schema of a field.
func (m *model) crdProperty(f field, status bool) map[string]any {
	p := map[string]any{"type": map[string]string{"string": "string", "bool": "boolean", "int": "integer", "strings": "array",
		"object": "object", "objects": "array"}[f.Kind]}
	if f.Doc != "" {
		p["description"] = f.Doc
	}
	switch f.Kind {
	case "strings":
		p["items"] = map[string]any{"type": "string"}
	case "object":
		p["x-kubernetes-preserve-unknown-fields"] = true
	case "objects":
		p["items"] = map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
		if f.rules.MinItems > 0 && !status {
			p["minItems"] = f.rules.MinItems
		}
	}
	if status {
		return p
	}
	r := f.rules
	switch f.Kind {
	case "string":
		if r.MinLen > 0 {
			p["minLength"] = r.MinLen
		}
		if r.MaxLen > 0 {
			p["maxLength"] = r.MaxLen
		}
		if f.JSON == "name" && m.NameMax() > 0 {
			p["maxLength"] = m.NameMax()
		}
		if r.Pattern != "" {
			p["pattern"] = r.Pattern
		}
	case "int":
		if len(r.Enum) > 0 {
			p["enum"] = r.Enum
		}
	}
	if !f.Mutable && f.JSON != "name" {
		p["x-kubernetes-validations"] = []any{map[string]any{"rule": "self == oldSelf",
			"message": f.JSON + " is fixed at creation; delete and recreate the CR to change it"}}
	}
	return p
}

// tagsProperty is the CRD schema of spec.resource.tags, by the service's tag rules.
func (m *model) tagsProperty() map[string]any {
	tags, _ := m.res.Field("tags")
	items := map[string]any{"type": "string", "minLength": 1, "maxLength": 255}
	maxItems := 50
	if m.TagsInBody() {
		items["pattern"] = tags.Items.Pattern
		items["maxLength"] = tags.Items.MaxLen
		maxItems = tags.MaxItems
	}
	if m.ByTag() {
		maxItems-- // the owner tag takes one
	}
	return map[string]any{"type": "array", "maxItems": maxItems, "x-kubernetes-list-type": "set", "items": items,
		"description": "Tags the resource carries besides the plugin's own; listed sorted by OpenStack."}
}

// ResourceSchema is the CRD schema of spec.resource, indented by indent spaces.
func (m *model) ResourceSchema(indent int) string {
	props := map[string]any{}
	var required []string
	for _, f := range m.fields {
		props[f.JSON] = m.crdProperty(f, false)
		if f.Required {
			required = append(required, f.JSON)
		}
	}
	if m.HasTags() {
		props["tags"] = m.tagsProperty()
	}
	s := map[string]any{"type": "object", "description": "What to create and keep converged (a managed CR).", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	// A field OpenStack fixes at creation may not be set or unset later either: its own rule
	// (self == oldSelf) holds only while both versions set it.
	var rules []any
	for _, f := range m.fields {
		if !f.Mutable && !f.Required {
			rules = append(rules, map[string]any{"rule": fmt.Sprintf("has(self.%s) == has(oldSelf.%s)", f.JSON, f.JSON),
				"message": f.JSON + " is fixed at creation; delete and recreate the CR to change it"})
		}
	}
	if len(rules) > 0 {
		s["x-kubernetes-validations"] = rules
	}
	return yamlIndent(s, indent)
}

// FilterSchema is the CRD schema of spec.import.filter.
func (m *model) FilterSchema(indent int) string {
	props := map[string]any{}
	for _, f := range m.fields {
		if f.Filter {
			props[f.JSON] = map[string]any{"type": "string", "minLength": 1}
		}
	}
	return yamlIndent(map[string]any{"type": "object", "minProperties": 1, "properties": props,
		"description": "Every field set must match; no match waits (Progressing), several are a terminal error."}, indent)
}

// ObservedSchema is the CRD schema of status.resource.
func (m *model) ObservedSchema(indent int) string {
	props := map[string]any{}
	for _, f := range m.fields {
		props[f.JSON] = m.crdProperty(f, true)
	}
	if m.HasTags() {
		props["tags"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
	}
	return yamlIndent(map[string]any{"type": "object", "properties": props,
		"description": "What OpenStack holds for the bound resource (observed)."}, indent)
}

func yamlIndent(v any, indent int) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	pad := strings.Repeat(" ", indent)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = pad + lines[i]
	}
	return strings.Join(lines, "\n")
}

// invalidExamples are CRs the generated CRD must refuse, each with the API server's words in
// its "# expect:" line; the repository's tests apply them to a real API server.
func (m *model) invalidExamples() map[string][]byte {
	meta := func(name string) string {
		return fmt.Sprintf("apiVersion: %s/v1alpha1\nkind: %s\nmetadata:\n  name: %s\n  namespace: default\nspec:\n"+
			"  cloudCredentialsRef: {secretName: openstack-credentials, cloudName: mycloud}\n", m.Group, m.Kind, name)
	}
	out := map[string][]byte{}
	add := func(file, expect, spec string) {
		out["examples/invalid/"+file+".yaml"] = []byte("# expect: " + expect + "\n" + meta("invalid-"+file) + spec)
	}
	res := m.ExampleResource("invalid")
	add("unmanaged-without-import", "spec.managementPolicy unmanaged needs spec.import", "  managementPolicy: unmanaged\n")
	add("managed-without-resource", "a managed CR needs spec.resource", "  managementPolicy: managed\n")
	add("import-and-resource", "spec.import and spec.resource are exclusive",
		"  managementPolicy: unmanaged\n  import: {id: an-id}\n  resource: "+res+"\n")
	add("import-id-and-filter", "spec.import needs exactly one of id and filter",
		"  managementPolicy: unmanaged\n  import: {id: an-id, filter: {name: a}}\n")
	add("import-while-managed", "spec.import needs spec.managementPolicy unmanaged", "  import: {id: an-id}\n")
	add("on-delete", `Unsupported value: "orphan"`, "  managedOptions: {onDelete: orphan}\n  resource: "+res+"\n")
	if n := m.NameMax(); n > 0 {
		longName := strings.Repeat("n", n+1)
		if m.TraitNames() {
			longName = "CUSTOM_" + strings.Repeat("N", n+1-len("CUSTOM_"))
		}
		long := strings.Replace(res, fmt.Sprintf("%q:%q", "name", m.OSName("invalid")), fmt.Sprintf("%q:%q", "name", longName), 1)
		add("name-too-long", "spec.resource.name: Too long", "  resource: "+long+"\n")
	}
	for _, f := range m.fields {
		if f.Required && f.JSON != "name" {
			var obj map[string]any
			_ = json.Unmarshal([]byte(res), &obj)
			delete(obj, f.JSON)
			b, _ := json.Marshal(obj)
			add("without-"+strings.ReplaceAll(f.JSON, "_", "-"), "spec.resource."+f.JSON+": Required value", "  resource: "+string(b)+"\n")
		}
	}
	return out
}
