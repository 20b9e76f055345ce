package fakekube

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Object is a stored object as decoded JSON. Numbers are json.Number, so integers survive a
// round trip exactly.
type Object = map[string]any

// EventType is a watch event type as shell-operator reports it in a binding context.
type EventType string

const (
	Added    EventType = "Added"
	Modified EventType = "Modified"
	Deleted  EventType = "Deleted"
)

// Event is one change a watcher of the object would see, in the order the store made them.
type Event struct {
	Type      EventType
	Resource  Resource
	Namespace string
	Name      string
	// Object is the object after the change; for Deleted, the last stored state, as the watch
	// delivers it (so a delete completed by removing the last finalizer still shows it).
	Object Object
}

// Subresource "status" addresses the status subresource; "" the main resource.
const statusSubresource = "status"

type objectKey struct {
	group, plural, namespace, name string
}

func keyOf(r Resource, namespace, name string) objectKey {
	return objectKey{group: r.Group, plural: r.Plural, namespace: namespace, name: name}
}

// Create stores a new object in namespace, like POST to the collection.
func (s *Server) Create(r Resource, namespace string, obj Object) (Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.create(r, namespace, obj)
}

func (s *Server) create(r Resource, namespace string, in Object) (Object, error) {
	obj := deepCopy(in)
	if err := checkTypeMeta(r, obj); err != nil {
		return nil, err
	}
	meta := metadataOf(obj)
	if ns, _ := meta["namespace"].(string); ns != "" && ns != namespace {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	name, _ := meta["name"].(string)
	if name == "" {
		if prefix, _ := meta["generateName"].(string); prefix != "" {
			name = prefix + randomSuffix()
		}
	}
	if name == "" {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: r.Group, Kind: r.Kind}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	k := keyOf(r, namespace, name)
	if _, exists := s.objects[k]; exists {
		return nil, apierrors.NewAlreadyExists(r.GroupResource(), name)
	}
	meta["name"] = name
	meta["namespace"] = namespace
	meta["uid"] = string(uuid.NewUUID())
	meta["creationTimestamp"] = s.now().UTC().Format(time.RFC3339)
	delete(meta, "deletionTimestamp")
	delete(meta, "deletionGracePeriodSeconds")
	if !r.Core {
		meta["generation"] = json.Number("1")
	}
	if r.StatusSubresource {
		// The real server ignores status on create when status is a subresource.
		delete(obj, "status")
	}
	normaliseSecret(r, obj)
	meta["resourceVersion"] = s.nextResourceVersion()
	s.objects[k] = obj
	s.record(Added, r, namespace, name, obj)
	return deepCopy(obj), nil
}

// Get returns a copy of one object.
func (s *Server) Get(r Resource, namespace, name string) (Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objects[keyOf(r, namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(r.GroupResource(), name)
	}
	return deepCopy(obj), nil
}

// List returns copies of the objects of r in namespace ("" for all namespaces) whose labels match
// selector (empty for all), sorted by namespace then name.
func (s *Server) List(r Resource, namespace, selector string) ([]Object, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]objectKey, 0)
	for k := range s.objects {
		if k.group == r.Group && k.plural == r.Plural && (namespace == "" || k.namespace == namespace) {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	out := make([]Object, 0, len(keys))
	for _, k := range keys {
		obj := s.objects[k]
		if sel.Matches(labels.Set(stringMap(metadataOf(obj)["labels"]))) {
			out = append(out, deepCopy(obj))
		}
	}
	return out, nil
}

// Update replaces an object (PUT), on the main resource (subresource "") or on "status".
func (s *Server) Update(r Resource, namespace, name, subresource string, obj Object) (Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.objects[keyOf(r, namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(r.GroupResource(), name)
	}
	return s.commit(r, namespace, name, subresource, old, deepCopy(obj))
}

// Patch content types the fake understands.
const (
	JSONPatchType  = "application/json-patch+json"
	MergePatchType = "application/merge-patch+json"
)

// Patch applies a JSON patch or a merge patch to the current object, then stores the result as an
// update of the main resource or of "status".
func (s *Server) Patch(r Resource, namespace, name, subresource, contentType string, patch []byte) (Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.objects[keyOf(r, namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(r.GroupResource(), name)
	}
	patched, err := applyPatch(contentType, old, patch)
	if err != nil {
		return nil, err
	}
	return s.commit(r, namespace, name, subresource, old, patched)
}

// DeleteOptions holds the preconditions of a delete request.
type DeleteOptions struct {
	UID             string
	ResourceVersion string
}

// Delete removes an object, or, while it carries finalizers, marks it as terminating. deleted
// reports whether the object is gone.
func (s *Server) Delete(r Resource, namespace, name string, opts DeleteOptions) (obj Object, deleted bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := keyOf(r, namespace, name)
	cur, ok := s.objects[k]
	if !ok {
		return nil, false, apierrors.NewNotFound(r.GroupResource(), name)
	}
	meta := metadataOf(cur)
	if uid, _ := meta["uid"].(string); opts.UID != "" && opts.UID != uid {
		return nil, false, apierrors.NewConflict(r.GroupResource(), name,
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", opts.UID, uid))
	}
	if rv, _ := meta["resourceVersion"].(string); opts.ResourceVersion != "" && opts.ResourceVersion != rv {
		return nil, false, apierrors.NewConflict(r.GroupResource(), name,
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s", opts.ResourceVersion, rv))
	}
	if len(finalizersOf(meta)) == 0 {
		delete(s.objects, k)
		meta["resourceVersion"] = s.nextResourceVersion()
		s.record(Deleted, r, namespace, name, cur)
		return deepCopy(cur), true, nil
	}
	if meta["deletionTimestamp"] != nil {
		return deepCopy(cur), false, nil
	}
	next := deepCopy(cur)
	nm := metadataOf(next)
	nm["deletionTimestamp"] = s.now().UTC().Format(time.RFC3339)
	nm["deletionGracePeriodSeconds"] = json.Number("0")
	// The real server bumps generation when it marks an object without graceful deletion as
	// terminating, so a controller sees a new generation to act on.
	if g, ok := int64Of(nm["generation"]); ok && g > 0 {
		nm["generation"] = json.Number(strconv.FormatInt(g+1, 10))
	}
	nm["resourceVersion"] = s.nextResourceVersion()
	s.objects[k] = next
	s.record(Modified, r, namespace, name, next)
	return deepCopy(next), false, nil
}

// commit stores next as the new state of old following the real server's update rules.
func (s *Server) commit(r Resource, namespace, name, subresource string, old, next Object) (Object, error) {
	if subresource != "" && (subresource != statusSubresource || !r.StatusSubresource) {
		return nil, apierrors.NewNotFound(r.GroupResource(), name)
	}
	if err := checkTypeMeta(r, next); err != nil {
		return nil, err
	}
	oldMeta := metadataOf(old)
	nextMeta := metadataOf(next)
	if n, _ := nextMeta["name"].(string); n != "" && n != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, name))
	}
	if ns, _ := nextMeta["namespace"].(string); ns != "" && ns != namespace {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if rv, _ := nextMeta["resourceVersion"].(string); rv != "" && rv != oldMeta["resourceVersion"] {
		return nil, apierrors.NewConflict(r.GroupResource(), name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}

	var result Object
	if subresource == statusSubresource {
		// A status write changes status and nothing else.
		result = deepCopy(old)
		if st, ok := next["status"]; ok {
			result["status"] = st
		} else {
			delete(result, "status")
		}
	} else {
		result = next
		if r.StatusSubresource {
			if st, ok := old["status"]; ok {
				result["status"] = deepCopyValue(st)
			} else {
				delete(result, "status")
			}
		}
		meta := metadataOf(result)
		meta["name"] = name
		meta["namespace"] = namespace
		for _, f := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"} {
			if v, ok := oldMeta[f]; ok {
				meta[f] = deepCopyValue(v)
			} else {
				delete(meta, f)
			}
		}
		if oldMeta["deletionTimestamp"] != nil {
			if added := newEntries(finalizersOf(meta), finalizersOf(oldMeta)); len(added) > 0 {
				return nil, apierrors.NewInvalid(schema.GroupKind{Group: r.Group, Kind: r.Kind}, name, field.ErrorList{
					field.Forbidden(field.NewPath("metadata", "finalizers"),
						fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", added)),
				})
			}
		}
		normaliseSecret(r, result)
		if !r.Core && !jsonEqual(withoutMeta(old, r), withoutMeta(result, r)) {
			g, _ := int64Of(oldMeta["generation"])
			meta["generation"] = json.Number(strconv.FormatInt(g+1, 10))
		}
	}
	meta := metadataOf(result)
	meta["resourceVersion"] = oldMeta["resourceVersion"]
	if jsonEqual(old, result) {
		// The real store skips a write that changes nothing: no new resourceVersion, no event.
		return deepCopy(old), nil
	}
	k := keyOf(r, namespace, name)
	meta["resourceVersion"] = s.nextResourceVersion()
	if meta["deletionTimestamp"] != nil && len(finalizersOf(meta)) == 0 {
		// The real store deletes instead of writing: the caller gets the object it sent, while
		// watchers get the last stored state, finalizers still in it (measured on 1.34).
		gone := deepCopy(old)
		metadataOf(gone)["resourceVersion"] = meta["resourceVersion"]
		delete(s.objects, k)
		s.record(Deleted, r, namespace, name, gone)
		return deepCopy(result), nil
	}
	s.objects[k] = result
	s.record(Modified, r, namespace, name, result)
	return deepCopy(result), nil
}

func (s *Server) nextResourceVersion() string {
	s.revision++
	return strconv.FormatInt(s.revision, 10)
}

func (s *Server) record(t EventType, r Resource, namespace, name string, obj Object) {
	if s.discardEvents {
		return
	}
	s.events = append(s.events, Event{Type: t, Resource: r, Namespace: namespace, Name: name, Object: deepCopy(obj)})
}

// DiscardEvents stops keeping the event log (Events, which the shell-operator simulator reads):
// it holds a copy of every state of every object, which for a harness that never reads it and
// writes 20,000 CRs of 14 KB several times each was gigabytes and most of its collector's work.
func (s *Server) DiscardEvents() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.discardEvents = true
	s.events = nil
}

// Events returns the event log from position from on (0 for all), and the position after it.
func (s *Server) Events(from int) ([]Event, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from < 0 || from > len(s.events) {
		from = len(s.events)
	}
	out := make([]Event, 0, len(s.events)-from)
	for _, e := range s.events[from:] {
		e.Object = deepCopy(e.Object)
		out = append(out, e)
	}
	return out, len(s.events)
}

func checkTypeMeta(r Resource, obj Object) error {
	if v, ok := obj["apiVersion"].(string); ok && v != "" && v != r.APIVersion() {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", v, r.APIVersion()))
	}
	if k, ok := obj["kind"].(string); ok && k != "" && k != r.Kind {
		return apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", k, r.Kind))
	}
	obj["apiVersion"] = r.APIVersion()
	obj["kind"] = r.Kind
	return nil
}

// normaliseSecret folds stringData into data, as the real server does for Secrets.
func normaliseSecret(r Resource, obj Object) {
	if r != SecretResource {
		return
	}
	sd, ok := obj["stringData"].(map[string]any)
	delete(obj, "stringData")
	if !ok || len(sd) == 0 {
		return
	}
	data, _ := obj["data"].(map[string]any)
	if data == nil {
		data = map[string]any{}
	}
	for k, v := range sd {
		str, _ := v.(string)
		data[k] = base64.StdEncoding.EncodeToString([]byte(str))
	}
	obj["data"] = data
}

// metadataOf returns obj's metadata map, creating it when absent or not an object.
func metadataOf(obj Object) map[string]any {
	m, ok := obj["metadata"].(map[string]any)
	if !ok {
		m = map[string]any{}
		obj["metadata"] = m
	}
	return m
}

func finalizersOf(meta map[string]any) []string {
	list, _ := meta["finalizers"].([]any)
	out := make([]string, 0, len(list))
	for _, f := range list {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func newEntries(next, old []string) []string {
	seen := map[string]bool{}
	for _, o := range old {
		seen[o] = true
	}
	var added []string
	for _, n := range next {
		if !seen[n] {
			added = append(added, n)
			seen[n] = true
		}
	}
	sort.Strings(added)
	return added
}

// withoutMeta is the part of an object whose change bumps generation: everything but metadata,
// and but status when status is a subresource.
func withoutMeta(obj Object, r Resource) Object {
	out := Object{}
	for k, v := range obj {
		if k == "metadata" || (k == "status" && r.StatusSubresource) {
			continue
		}
		out[k] = v
	}
	return out
}

func stringMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	out := make(map[string]string, len(m))
	for k, val := range m {
		if s, ok := val.(string); ok {
			out[k] = s
		}
	}
	return out
}

func int64Of(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		return int64(n), true
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

// decodeObject decodes JSON keeping numbers exact.
func decodeObject(data []byte) (Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj Object
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("object is null")
	}
	return obj, nil
}

func deepCopy(obj Object) Object {
	if obj == nil {
		return nil
	}
	c, _ := deepCopyValue(obj).(map[string]any)
	return c
}

// deepCopyValue copies a stored value. Decoded JSON (maps, slices, strings, json.Number, bools,
// nulls) is copied as it is, which is many times cheaper than a round trip through JSON; the
// store copies each object several times per request, and at 20,000 CRs of 14 KB that round trip
// was most of a harness's set-up. Anything else (an int or a []string a Go caller stored) goes
// through JSON, so it is stored as a decoded request would be.
func deepCopyValue(v any) any {
	switch x := v.(type) {
	case nil, string, json.Number, bool:
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopyValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopyValue(e)
		}
		return out
	}
	return jsonCopy(v)
}

func jsonCopy(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakekube: stored value is not JSON: %v", err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		panic(fmt.Sprintf("fakekube: stored value is not JSON: %v", err))
	}
	return out
}

func jsonEqual(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
