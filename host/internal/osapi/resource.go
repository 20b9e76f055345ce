// Package osapi holds the rules of the OpenStack resource collections a plugin author may name
// (Keystone projects, Neutron address scopes, ...) and an in-memory store that serves them with
// those rules: the fields each accepts on create and update, which are required, read-only or
// immutable, the update verb, tag rules, name limits, uniqueness, the order of listed items and
// tags, and the real services' error codes and texts. The rules were read from the 2025.1 servers
// the real-parts tier runs (Keystone 27, Neutron 26, Ironic 29) and are proven against them by
// host/internal/openstack/contract, which sends the same valid and invalid requests to this store
// (through fakecloud) and to the real services and fails on any difference.
//
// It has no dependency outside the standard library, so pdk/pdktest carries a generated copy
// (pdk/pdktest/internal/osapi, written by hack/osapi-copy.sh) and a plugin's unit tests meet the
// same rules as the embedded cloud.
package osapi

import (
	"slices"
	"strings"
)

// The services whose collections the store knows, by catalog type.
const (
	Identity  = "identity"
	Network   = "network"
	Baremetal = "baremetal"
)

// Type is the JSON type of a field's values.
type Type string

const (
	String  Type = "string"
	Boolean Type = "boolean"
	Integer Type = "integer"
	// UUID is a string Neutron checks as a UUID.
	UUID Type = "uuid"
	// Strings is a list of strings.
	Strings Type = "strings"
	// CIDRs is a list of IP networks (Neutron address groups).
	CIDRs Type = "cidrs"
	// Object is a JSON object.
	Object Type = "object"
	// Objects is a list of JSON objects (Ironic's steps).
	Objects Type = "objects"
)

// Access says whether a field may be sent on create or update.
type Access int

const (
	// No: sending it is refused (a read-only or immutable field).
	No Access = iota
	// Optional: it may be sent.
	Optional
	// Required: a create must send it.
	Required
)

// Field is one attribute of a resource.
type Field struct {
	Name string
	Type Type
	// Create and Update say whether a create or an update may (or must) send the field.
	Create, Update Access
	// Default is the value a create that does not send the field stores; Omit leaves the field
	// out of the object instead (Keystone's extras).
	Default any
	Omit    bool
	// Nullable accepts null.
	Nullable bool
	// MinLen and MaxLen bound a string's length (in characters); MinItems and MaxItems a list's.
	MinLen, MaxLen, MinItems, MaxItems int
	// Pattern is a regular expression a string must contain a match of (JSON Schema's pattern).
	Pattern string
	// Enum lists the accepted values.
	Enum []any
	// Items are the rules of a list's items; Unique refuses repeated items.
	Items *Field
	// Props are an object's known keys; no other key is accepted.
	Props  []Field
	Unique bool
	// Filter: the field may filter a list. Sort: it may be a sort key.
	Filter, Sort bool
	// Ref names the collection (service:name) whose id the value must be.
	Ref string
	// Samples are valid values: the first is what a generated create sends, the second what an
	// update changes it to.
	Samples []any
	// AdminOnly fields are shown to admins only (Neutron's provider attributes).
	AdminOnly bool
	// Since is the Ironic microversion that shows the field; before it a create accepts it and
	// drops it, and a patch cannot name it.
	Since string
	// Doc is a one-line description, for generated code and CRDs.
	Doc string
}

// Resource is one collection and its rules.
type Resource struct {
	// Service is the catalog type: Identity, Network or Baremetal.
	Service string
	// Name is the collection's name in its path, e.g. "projects", "address-scopes".
	Name string
	// Path is below the service endpoint, e.g. "v3/projects", "v2.0/address-scopes".
	Path string
	// Key is the body key of one object ("project"), Plural the list's ("projects").
	Key, Plural string
	// Noun names one in messages ("project", "address scope").
	Noun string
	// Update is the update verb, PATCH (Keystone, Ironic) or PUT (Neutron).
	Update string
	// JSONPatch: bodies are the bare object and an update is an RFC 6902 JSON Patch list of
	// {op, path, value} (Ironic).
	JSONPatch bool
	// MinVersion is the Ironic microversion the collection needs; a plugin sends at least it.
	MinVersion string
	// SystemScoped: only a system-scoped token may read or write it (Ironic's deploy templates).
	SystemScoped bool
	Fields       []Field
	// Tags is how the resource keeps tags; TagsNone when it has none.
	Tags TagStyle
	// UniqueName makes names unique among the objects that share the values of these fields
	// (Keystone: within a domain); nil when names may repeat.
	UniqueName []string
	// Extra accepts fields the rules do not name and keeps them (Keystone projects).
	Extra bool
	// AdminOnly refuses writes without the admin role.
	AdminOnly bool
	// Volatile fields depend on the cloud's history (allocated segment ids, internal counters);
	// the contract suite does not compare their values.
	Volatile []string
	// NotFound is the text of a 404 for an id (one %s), and NotFoundType Neutron's error type.
	NotFound, NotFoundType string
	// PolicyName is the resource's name in policy rules (create_<PolicyName>).
	PolicyName string
	// DeleteEnabled refuses deleting an enabled object (Keystone domains) with this text.
	DeleteEnabled string
	// ProjectKey is the owner attribute Neutron's attribute map names (tenant_id or project_id);
	// its errors name it, whichever of the two a request sent.
	ProjectKey string
	// createdRevision is a Neutron object's revision_number right after its create (Neutron
	// bumps it while it finishes the object within the create); nil is 0.
	createdRevision func(obj map[string]any) int
	// CreatedOnly are fields only the answer to a create shows, with their values.
	CreatedOnly map[string]any
	// checkCreate and checkUpdate apply the resource's own rules after the generic ones.
	checkCreate func(obj map[string]any, c Caller) *Response
	checkUpdate func(old, changes map[string]any, c Caller) *Response
	// keystone and ironic hold the Keystone or Ironic resource's own ways.
	keystone *keystoneRules
	ironic   *ironicRules
	dialect  dialect
}

// TagStyle is how a resource keeps tags.
type TagStyle int

const (
	// TagsNone: the resource has no tags; a tags field or filter is refused.
	TagsNone TagStyle = iota
	// TagsNeutron: Neutron's standard-attr tags: read-only in the body, set through
	// /{id}/tags; returned sorted; filters tags, tags-any, not-tags, not-tags-any.
	TagsNeutron
	// TagsKeystone: a tags field in create and update bodies (80 at most, no ',' or '/'),
	// and /{id}/tags; returned sorted except in the answer to a create or update.
	TagsKeystone
)

// Field returns the named field.
func (r *Resource) Field(name string) (Field, bool) {
	i := slices.IndexFunc(r.Fields, func(f Field) bool { return f.Name == name })
	if i < 0 {
		return Field{}, false
	}
	return r.Fields[i], true
}

// ExtrasBreakReads reports whether an extra field Keystone stores makes every later answer that
// shows the object fail (Keystone 27's domains): a probe that stores one must delete it at once.
func (r *Resource) ExtrasBreakReads() bool {
	return r.keystone != nil && r.keystone.strictAnswer != nil
}

// ID is the name of the resource's id field: Ironic's is "uuid".
func (r *Resource) ID() string {
	if r.Service == Baremetal {
		return "uuid"
	}
	return "id"
}

// Ref is "service:name", how --collection and Field.Ref name a resource.
func (r *Resource) Ref() string { return r.Service + ":" + r.Name }

// Resources returns every known collection, by service then name.
func Resources() []*Resource {
	out := slices.Concat(identityResources(), networkResources(), baremetalResources())
	slices.SortFunc(out, func(a, b *Resource) int { return strings.Compare(a.Ref(), b.Ref()) })
	return out
}

var registry = func() map[string]*Resource {
	m := map[string]*Resource{}
	for _, r := range Resources() {
		m[r.Ref()] = r
	}
	return m
}()

// Lookup finds a collection by service (a catalog type) and name; the name may also be its
// path ("v2.0/address-scopes") or its body key's plural ("address_scopes").
func Lookup(service, name string) (*Resource, bool) {
	name = strings.Trim(name, "/")
	if r, ok := registry[service+":"+name]; ok {
		return r, true
	}
	for _, r := range registry {
		if r.Service == service && (r.Path == name || r.Plural == name) {
			return r, true
		}
	}
	return nil, false
}

// Names lists "service:name" of every known collection, sorted.
func Names() []string {
	var out []string
	for _, r := range Resources() {
		out = append(out, r.Ref())
	}
	return out
}
