package scaffold

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
)

// Ownership is where a generated plugin marks the resources it made, so it adopts (after a lost
// status write) and deletes only its own.
type Ownership string

const (
	// OwnerTag: a tag on the resource (the default where the resource has tags).
	OwnerTag Ownership = "tag"
	// OwnerNamePrefix: the OpenStack name is a fixed prefix and the CR's name.
	OwnerNamePrefix Ownership = "name-prefix"
	// OwnerDescription: a marker at the end of the description.
	OwnerDescription Ownership = "description"
	// OwnerExtra: a key in the resource's free-form extra (Ironic's runbooks and deploy
	// templates, which have no tags and whose names are traits).
	OwnerExtra Ownership = "extra"
	// OwnerNone: no marker, and no adoption: a resource is only ever the CR's by status.id.
	OwnerNone Ownership = "none"
)

// field is one field of spec.resource as the generated plugin and CRD declare it.
type field struct {
	JSON string // the OpenStack attribute, e.g. "ip_version"
	Go   string // the Go field, e.g. "IPVersion"
	Kind string // string, bool, int or strings
	// Required: a create must send it (a non-pointer Go field, required in the CRD).
	Required bool
	// Mutable: an update may change it; otherwise it is fixed at creation.
	Mutable bool
	Doc     string
	// Filter: the list API filters by it (it may be part of spec.import.filter).
	Filter bool
	rules  osapi.Field
}

// GoType is the field's type in Spec: optional scalars are pointers, so "not set" leaves what
// OpenStack holds alone.
func (f field) GoType() string {
	t := f.ObservedType()
	if !f.Required && f.Kind != "strings" && !f.isJSON() {
		return "*" + t
	}
	return t
}

// ObservedType is the field's type in the resource as read.
func (f field) ObservedType() string {
	return map[string]string{"string": "string", "bool": "bool", "int": "int", "strings": "[]string", "object": "map[string]any",
		"objects": "[]map[string]any"}[f.Kind]
}

var identifier = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// initialisms are written in capitals in Go names.
var initialisms = map[string]string{"id": "ID", "ip": "IP", "mtu": "MTU", "url": "URL", "cidr": "CIDR", "uuid": "UUID", "dns": "DNS"}

func goName(json string) string {
	var b strings.Builder
	for _, w := range strings.Split(json, "_") {
		if up, ok := initialisms[w]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

func kindOf(t osapi.Type) (string, bool) {
	switch t {
	case osapi.String, osapi.UUID:
		return "string", true
	case osapi.Boolean:
		return "bool", true
	case osapi.Integer:
		return "int", true
	case osapi.Strings, osapi.CIDRs:
		return "strings", true
	case osapi.Object:
		return "object", true
	case osapi.Objects:
		return "objects", true
	}
	return "", false
}

// resourceFields are the fields of spec.resource: what a create may send, as Go and CRDs can
// name it. Tags are the generated plugin's own business (tags field), the owner attribute the
// one the resource's map names.
func resourceFields(r *osapi.Resource) []field {
	var out []field
	for _, f := range r.Fields {
		kind, ok := kindOf(f.Type)
		switch {
		case !ok, f.Create == osapi.No, f.AdminOnly, !identifier.MatchString(f.Name), f.Name == "tags":
			continue
		case (kind == "object" || kind == "objects") && !r.JSONPatch:
			// Free-form objects (Keystone's options) stay the author's to add; Ironic's steps and
			// extra are what its resources are.
			continue
		case r.JSONPatch && f.Name == r.ID():
			// Ironic takes a uuid on create; the plugin lets Ironic choose it.
			continue
		case f.Since != "" && !osapi.VersionAtLeast(r.MinVersion, f.Since):
			// Ironic accepts it at the plugin's microversion and drops it.
			continue
		case (f.Name == "tenant_id" || f.Name == "project_id") && r.ProjectKey != "" && f.Name != "project_id":
			// Neutron takes either name; the spec offers the current one.
			continue
		}
		// The name is how the plugin and a person find the resource again: the plugin requires
		// one even where the service would make do without.
		// Ironic lists filter by nothing; the plugin filters by name itself.
		filter := f.Filter || r.JSONPatch && f.Name == "name"
		out = append(out, field{JSON: f.Name, Go: goName(f.Name), Kind: kind, Required: f.Create == osapi.Required || f.Name == "name",
			Mutable: f.Update != osapi.No, Doc: f.Doc, Filter: filter && kind == "string", rules: f})
	}
	// name first: it is how the plugin and a person find the resource again.
	slices.SortStableFunc(out, func(a, b field) int {
		switch {
		case a.JSON == "name":
			return -1
		case b.JSON == "name":
			return 1
		}
		return 0
	})
	return out
}

// genericResource is a Neutron resource the embedded cloud does not know: a name and a
// description, served generically by the conformance kit.
func genericResource(path, key string) *osapi.Resource {
	name := path[strings.LastIndex(path, "/")+1:]
	return &osapi.Resource{Service: osapi.Network, Name: name, Path: path, Key: key, Plural: strings.ReplaceAll(name, "-", "_"),
		Noun: strings.ReplaceAll(key, "_", " "), Update: "PUT", Fields: []osapi.Field{
			{Name: "id", Type: osapi.UUID},
			{Name: "name", Type: osapi.String, Create: osapi.Required, Update: osapi.Optional, MaxLen: 255, Filter: true,
				Doc: "Human-readable name."},
			{Name: "description", Type: osapi.String, Create: osapi.Optional, Update: osapi.Optional, MaxLen: 255, Filter: true,
				Doc: "Free text."},
		}}
}

// serviceOf reads a service given as a catalog type or its project's name.
func serviceOf(s string) (string, error) {
	switch s {
	case "identity", "keystone":
		return osapi.Identity, nil
	case "network", "neutron":
		return osapi.Network, nil
	case "baremetal", "ironic":
		return osapi.Baremetal, nil
	}
	return "", fmt.Errorf("service %q: want identity (keystone), network (neutron) or baremetal (ironic)", s)
}

// hasField reports whether the resource has the named field.
func hasField(r *osapi.Resource, name string) bool {
	_, ok := r.Field(name)
	return ok
}

// defaultOwnership is the best marker the resource can hold: a tag, else the description, else
// the name.
func defaultOwnership(r *osapi.Resource) Ownership {
	switch {
	case r.Tags != osapi.TagsNone:
		return OwnerTag
	case hasField(r, "description"):
		if f, _ := r.Field("description"); f.Update != osapi.No {
			return OwnerDescription
		}
	}
	if f, ok := r.Field("extra"); ok && f.Type == osapi.Object && f.Update != osapi.No {
		return OwnerExtra
	}
	return OwnerNamePrefix
}

// traitNames reports whether the resource's names must be custom traits (CUSTOM_[A-Z0-9_]+).
func traitNames(r *osapi.Resource) bool {
	f, ok := r.Field("name")
	return ok && strings.HasPrefix(f.Pattern, "^CUSTOM_")
}
