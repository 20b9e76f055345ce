// Package resource reads one custom resource out of a binding context (docs/contract.md §3).
//
// Reading is total (docs/contract.md Decision 1): any shape the framework cannot trust — metadata that is null, a
// status that is not an object, a wrong type in a field the framework uses — makes that one CR
// unreadable with a reason naming the field, and never affects another CR.
package resource

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
)

// Finalizer is the framework finalizer of this project's profile, held on CRs whose deletion
// needs an OpenStack cleanup; a hook of another profile holds that profile's (profile.Finalizer).
const Finalizer = profile.FinalizerOpenStackSync

// Resource is one readable CR.
type Resource struct {
	APIVersion      string
	Kind            string
	Namespace       string
	Name            string
	UID             string
	ResourceVersion string
	Generation      *int64
	// Spec is the spec without cloudCredentialsRef (plugins never see credentials), as the JSON
	// json.Marshal writes for it: a run holds every CR's spec until its prune, and this is a
	// tenth of the memory of the decoded maps (docs/scaling.md).
	Spec json.RawMessage
	// specName is spec.name as text, the plan's sort key.
	specName string
	// status is the CR's status as JSON, as Spec (nil when absent): decoded when asked for
	// (Status), it decides whether a patch is needed and what the plugin sees.
	status     json.RawMessage
	Finalizers []string
	// Deleting is true when metadata.deletionTimestamp is set.
	Deleting bool
	// Credentials is the group: the Secret lives in the CR's namespace (docs/contract.md Decision 4).
	Credentials plugin.Credentials
}

// Error says why a CR is unreadable; Ref names it as well as its broken shape allows.
type Error struct {
	Ref    string
	Reason string
}

func (e *Error) Error() string { return e.Ref + ": " + e.Reason }

// Parse reads obj. podNamespace is the fallback namespace for the credential Secret when the CR
// has none (a cluster-scoped CRD); without either the Secret is read from "openstack".
func Parse(obj any, podNamespace string) (*Resource, error) {
	fail := func(format string, args ...any) (*Resource, error) {
		return nil, &Error{Ref: Ref(obj), Reason: fmt.Sprintf(format, args...)}
	}
	o, ok := obj.(map[string]any)
	if !ok {
		return fail("the object is %s, not an object", kindOf(obj))
	}
	r := &Resource{}
	var err error
	if r.APIVersion, err = optString(o, "apiVersion"); err != nil {
		return fail("%v", err)
	}
	if r.Kind, err = optString(o, "kind"); err != nil {
		return fail("%v", err)
	}
	md, ok := o["metadata"].(map[string]any)
	if !ok {
		return fail("metadata is missing or not an object")
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &r.Name}, {"namespace", &r.Namespace}, {"uid", &r.UID}, {"resourceVersion", &r.ResourceVersion}} {
		if *f.dst, err = optString(md, f.key); err != nil {
			return fail("metadata.%v", err)
		}
	}
	if g, ok := md["generation"]; ok && g != nil {
		n, err := integer(g)
		if err != nil {
			return fail("metadata.generation %v", err)
		}
		r.Generation = &n
	}
	if fs, ok := md["finalizers"]; ok && fs != nil {
		list, ok := fs.([]any)
		if !ok {
			return fail("metadata.finalizers is %s, not a list", kindOf(fs))
		}
		for i, f := range list {
			s, ok := f.(string)
			if !ok {
				return fail("metadata.finalizers[%d] is %s, not a string", i, kindOf(f))
			}
			r.Finalizers = append(r.Finalizers, s)
		}
	}
	if ts, ok := md["deletionTimestamp"]; ok && ts != nil {
		if _, ok := ts.(string); !ok {
			return fail("metadata.deletionTimestamp is %s, not a string", kindOf(ts))
		}
		r.Deleting = true
	}
	if st, ok := o["status"]; ok && st != nil {
		m, ok := st.(map[string]any)
		if !ok {
			return fail("status is %s, not an object", kindOf(st))
		}
		if r.status, err = canonical(m); err != nil {
			return fail("status cannot be encoded: %v", err)
		}
	}
	spec, ok := o["spec"].(map[string]any)
	if !ok {
		return fail("spec is missing or not an object")
	}
	ref, ok := spec["cloudCredentialsRef"].(map[string]any)
	if !ok {
		return fail("spec.cloudCredentialsRef is missing or not an object")
	}
	secret, sok := ref["secretName"].(string)
	cloud, cok := ref["cloudName"].(string)
	if !sok || !cok || secret == "" || cloud == "" {
		return fail("spec.cloudCredentialsRef must set both secretName and cloudName; got secretName=%s, cloudName=%s",
			repr(ref["secretName"]), repr(ref["cloudName"]))
	}
	plain := maps.Clone(spec)
	delete(plain, "cloudCredentialsRef")
	if r.Spec, err = canonical(plain); err != nil {
		return fail("spec cannot be encoded: %v", err)
	}
	r.specName = specName(plain["name"])
	ns := r.Namespace
	if ns == "" {
		ns = podNamespace
	}
	if ns == "" {
		ns = hookenv.DefaultSecretNamespace
	}
	r.Credentials = plugin.Credentials{Namespace: ns, SecretName: secret, CloudName: cloud}
	return r, nil
}

// Status is the CR's status as read (nil when absent), decoded anew on each call, so the caller
// may keep or change it.
func (r *Resource) Status() map[string]any {
	if r.status == nil {
		return nil
	}
	v, err := bindingctx.DecodeJSON(r.status)
	m, _ := v.(map[string]any)
	if err != nil || m == nil {
		// Parse wrote these bytes from an object.
		panic(fmt.Sprintf("resource: the status of %s does not decode: %v", r.Ref(), err))
	}
	return m
}

// StatusJSON is the CR's status as the JSON Parse keeps (nil when absent): the bytes a digest of
// the CR's input covers, without decoding them (host/internal/replay).
func (r *Resource) StatusJSON() json.RawMessage { return r.status }

// WithStatus is r with the status st, for tests and for a CR built in code.
func (r Resource) WithStatus(st map[string]any) *Resource {
	r.status = nil
	if st != nil {
		var err error
		if r.status, err = canonical(st); err != nil {
			panic(err)
		}
	}
	return &r
}

// Identity collapses events about one CR: the UID, else namespace/name (a CR deleted and
// recreated in one batch has two identities).
func (r *Resource) Identity() string {
	if r.UID != "" {
		return r.UID
	}
	return r.Namespace + "/" + r.Name
}

// Ref is namespace/name, the way logs name the CR.
func (r *Resource) Ref() string { return joinRef(r.Namespace, r.Name) }

// SpecName is spec.name as text ("" when absent); plans are sorted by it.
func (r *Resource) SpecName() string { return r.specName }

func specName(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// Display is the human name: spec.name, else metadata.name.
func (r *Resource) Display() string {
	if n := r.SpecName(); n != "" {
		return n
	}
	if r.Name != "" {
		return r.Name
	}
	return "<unknown>"
}

// FinalizerIndex is the position of the finalizer name, -1 when absent.
func (r *Resource) FinalizerIndex(name string) int { return slices.Index(r.Finalizers, name) }

// HasFinalizer reports whether the CR carries the finalizer name.
func (r *Resource) HasFinalizer(name string) bool { return r.FinalizerIndex(name) >= 0 }

// Object is the identity a plugin sees.
func (r *Resource) Object() plugin.Object {
	return plugin.Object{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name,
		UID: r.UID, Generation: r.Generation}
}

// Ref names any object, however malformed: namespace/name, the name alone, or <unnamed>.
func Ref(obj any) string {
	o, _ := obj.(map[string]any)
	md, _ := o["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	ns, _ := md["namespace"].(string)
	return joinRef(ns, name)
}

func joinRef(ns, name string) string {
	if name == "" {
		name = "<unnamed>"
	}
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func optString(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is %s, not a string", key, kindOf(v))
	}
	return s, nil
}

func integer(v any) (int64, error) {
	switch n := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, nil
		}
		return 0, fmt.Errorf("is %s, not an integer", n)
	case float64:
		if n == float64(int64(n)) {
			return int64(n), nil
		}
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	}
	return 0, fmt.Errorf("is %s, not an integer", kindOf(v))
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number, float64, int, int64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// repr quotes strings and names other values by kind, so the log shows what was wrong.
func repr(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	if v == nil {
		return "null"
	}
	return kindOf(v)
}

// Scope is what is known of an unreadable CR's credential group, which decides whose prune it
// must stop (docs/contract.md §7.1): its spec is unknown, so whatever group it belongs to may own
// something it claims.
type Scope struct {
	// Namespace is the namespace of the CR's credential group; "" when even that is unknown.
	Namespace string
	// Group is the whole credential group, when the CR's cloudCredentialsRef is readable.
	Group *plugin.Credentials
}

// ScopeOf reads as much of obj's credential group as its shape allows, the way Parse would:
// metadata.namespace (else podNamespace, else the default namespace), then
// spec.cloudCredentialsRef.
func ScopeOf(obj any, podNamespace string) Scope {
	o, _ := obj.(map[string]any)
	md, ok := o["metadata"].(map[string]any)
	if !ok {
		return Scope{}
	}
	ns, err := optString(md, "namespace")
	if err != nil {
		return Scope{}
	}
	ns = cmp.Or(ns, podNamespace, hookenv.DefaultSecretNamespace)
	s := Scope{Namespace: ns}
	spec, _ := o["spec"].(map[string]any)
	ref, _ := spec["cloudCredentialsRef"].(map[string]any)
	secret, _ := ref["secretName"].(string)
	cloud, _ := ref["cloudName"].(string)
	if secret != "" && cloud != "" {
		s.Group = &plugin.Credentials{Namespace: ns, SecretName: secret, CloudName: cloud}
	}
	return s
}

// Covers reports whether a CR of this scope could belong to credential group c.
func (s Scope) Covers(c plugin.Credentials) bool {
	switch {
	case s.Namespace == "":
		return true
	case s.Group != nil:
		return *s.Group == c
	default:
		return s.Namespace == c.Namespace
	}
}

// Widen is the narrowest scope covering both s and o: two reads of one CR (an event and a
// snapshot) may disagree.
func (s Scope) Widen(o Scope) Scope {
	switch {
	case s.Namespace == "" || o.Namespace == "" || s.Namespace != o.Namespace:
		return Scope{}
	case s.Group != nil && o.Group != nil && *s.Group == *o.Group:
		return s
	default:
		return Scope{Namespace: s.Namespace}
	}
}

// String names the scope in log lines.
func (s Scope) String() string {
	switch {
	case s.Namespace == "":
		return "every credential group"
	case s.Group != nil:
		return "credential group cloud=" + s.Group.CloudName + " secret=" + s.Group.SecretName + " namespace=" + s.Namespace
	default:
		return "every credential group of namespace " + s.Namespace
	}
}
