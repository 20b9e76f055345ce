package osapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Caller is who sends a request, as its token says.
type Caller struct {
	// ProjectID is the token's project; "" for a system-scoped token.
	ProjectID string
	// Admin: the token has the admin role.
	Admin bool
	// System: the token is system-scoped.
	System bool
}

// Request is one API request to a collection.
type Request struct {
	// Service is the catalog type of the endpoint it was sent to.
	Service string
	Method  string
	// Path is below the service endpoint, without a leading slash: "v3/projects/abc".
	Path  string
	Query url.Values
	// RawQuery is the query as sent (Keystone echoes it in its links); default Query encoded.
	RawQuery string
	Body     []byte
	// Microversion is the Ironic microversion the request asked for ("1.96"); "" is Ironic's
	// default, 1.1. The embedded cloud resolves "latest" and refuses what is out of range.
	Microversion string
	// Caller is who sent it.
	Caller Caller
}

// Response is the store's answer.
type Response struct {
	Status int
	// Body is the JSON answer; nil sends none (Null sends "null").
	Body any
	Null bool
	// Text, when set, is sent as a plain-text body instead (a server error page).
	Text string
	// Encoded, when set, is the JSON answer already encoded, byte for byte what encoding/json's
	// Marshal makes of the Body it stands for (Body is then nil): an Ironic list page is put
	// together from each object's cached encoding (Store.encoded), where encoding every object
	// of every page again was most of what the embedded cloud spent answering a 20,000-runbook
	// catalog.
	Encoded []byte
}

// JSON is the answer's body as JSON: Encoded, or Body as encoding/json's Marshal encodes it.
func (r Response) JSON() ([]byte, error) {
	if r.Encoded != nil {
		return r.Encoded, nil
	}
	return json.Marshal(r.Body)
}

// Project is a Keystone project the store starts with.
type Project struct {
	ID, Name, Description string
}

// Options configure a Store.
type Options struct {
	// URL returns the endpoint of a service without a trailing slash, for the links Keystone puts
	// in its answers (e.g. "http://127.0.0.1:5000").
	URL func(service string) string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Projects are Keystone's projects at start (the cloud's admin, demo and service projects).
	Projects []Project
	// Roles are Keystone's global roles at start, by name and id.
	Roles map[string]string
}

// Store holds the objects of every known collection and answers requests to them as the real
// services would. It is safe for concurrent use.
type Store struct {
	opts Options
	mu   sync.Mutex
	// objs holds each collection's objects by Resource.Ref, oldest first.
	objs map[string][]map[string]any
	// declared are generic collections declared at run time (Declare).
	declared []*Resource
	// index holds, per collection, the positions in objs of its objects by the string values of
	// the fields lookups key on (indexed), in list order. Ironic looks a runbook up by uuid or name
	// on every create and get, which scanned the whole list: at 20,000 runbooks creating them all
	// took half an hour of the fake's CPU; and a list page starts after its marker's position,
	// which scanning for cost every page as much as the whole collection. Built on first use,
	// extended by insert (which appends, so a position stays true), dropped by anything else that
	// changes a collection (unindex), so a lookup is never answered from a stale index.
	index map[string]map[string][]int
	// shown caches stored objects' encodings as lists show them (encoded), by the object's map.
	shown map[uintptr]*shownObject
	// encodeOnDemand turns the cache off: a list page is answered as a Body, encoded by whoever
	// sends it, as before the cache; the reference the cached pages are tested against.
	encodeOnDemand bool
}

// shownObject is one stored object's cached encodings, by view (the fields shown and the links'
// base). obj holds the object's map itself, so that while the entry lives no other map can be
// made at the address it is keyed by.
type shownObject struct {
	obj   map[string]any
	views map[string][]byte
}

// maxViews bounds the views cached per object: a caller asking for ever other fields does not
// grow the cache without end (the object's views start over). A plugin asks for two or three
// (its catalog in detail, its prune's fields); TestCachedPagesAreTheEncodedOnes shows an object in 8.
const maxViews = 16

// indexed are the fields the index keys on.
var indexed = []string{"uuid", "name"}

// New returns a store holding what a fresh cloud holds: Keystone's default domain, the given
// projects and roles, and nothing else.
func New(o Options) *Store {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.URL == nil {
		o.URL = func(string) string { return "http://localhost" }
	}
	s := &Store{opts: o, objs: map[string][]map[string]any{}}
	s.seedKeystone()
	return s
}

// Serve answers a request under a known or declared collection; false when the path is not one.
func (s *Store) Serve(req Request) (Response, bool) {
	r, rest, ok := route(req.Service, req.Path, s.declaredResources())
	if !ok {
		return Response{}, false
	}
	if req.Query == nil {
		req.Query = url.Values{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.dialect.serve(s, r, req, rest), true
}

// Declare serves a Neutron collection openstack-sync knows no rules for, generically: Neutron's
// rules for a resource with a name, a description and an owner, and nothing the real resource
// may add. It is what a plugin for such a resource can be tested against, and predicts little.
func (s *Store) Declare(path, key string) (*Resource, error) {
	path = strings.Trim(path, "/")
	if _, _, ok := route(Network, path, s.declaredResources()); ok {
		return nil, fmt.Errorf("osapi: %s is served already", path)
	}
	name := path[strings.LastIndex(path, "/")+1:]
	r := neutronResource(&Resource{Name: name, Key: key, Noun: strings.ReplaceAll(key, "_", " "), PolicyName: key,
		ProjectKey: "project_id", NotFoundType: "HTTPNotFound", NotFound: "The resource " + key + " %s could not be found.",
		Fields: append([]Field{neutronID(), neutronName(), neutronProject("project_id")}, neutronStandard()...)})
	r.Path = path
	s.mu.Lock()
	defer s.mu.Unlock()
	s.declared = append(s.declared, r)
	return r, nil
}

func (s *Store) declaredResources() []*Resource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.declared)
}

// lookup finds a known or declared collection by its reference.
func (s *Store) lookup(ref string) (*Resource, bool) {
	if r, ok := registry[ref]; ok {
		return r, true
	}
	for _, r := range s.declaredResources() {
		if r.Ref() == ref {
			return r, true
		}
	}
	return nil, false
}

// route finds the collection a path is under and the segments below it.
func route(service, path string, declared []*Resource) (*Resource, []string, bool) {
	path = strings.Trim(path, "/")
	for _, r := range slices.Concat(slices.Collect(maps.Values(registry)), declared) {
		if r.Service != service {
			continue
		}
		if rest, ok := strings.CutPrefix(path, r.Path); ok && (rest == "" || rest[0] == '/') {
			rest = strings.Trim(rest, "/")
			if rest == "" {
				return r, nil, true
			}
			return r, strings.Split(rest, "/"), true
		}
	}
	return nil, nil, false
}

// Objects returns copies of a collection's objects ("service:name"), oldest first.
func (s *Store) Objects(ref string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, o := range s.objs[ref] {
		out = append(out, cloneJSON(o))
	}
	return out
}

// Add stores an object in a collection without the API's checks (one made by hand, or no
// operator's), filling what the service fills, and returns it.
func (s *Store) Add(ref string, obj map[string]any) (map[string]any, error) {
	r, ok := s.lookup(ref)
	if !ok {
		return nil, fmt.Errorf("osapi: no collection %s", ref)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := cloneJSON(obj)
	r.dialect.fill(s, r, o, Caller{Admin: true, ProjectID: s.adminProject()})
	s.insert(r, o)
	return cloneJSON(o), nil
}

// MarshalJSON saves every collection's objects, so a later store can carry on (`run --state`).
func (s *Store) MarshalJSON() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return json.Marshal(s.objs)
}

// UnmarshalJSON replaces every collection's objects with saved ones.
func (s *Store) UnmarshalJSON(b []byte) error {
	var objs map[string][]map[string]any
	if err := json.Unmarshal(b, &objs); err != nil {
		return err
	}
	for ref := range objs {
		if _, ok := s.lookup(ref); !ok {
			return fmt.Errorf("osapi: saved state names no known or declared collection %q", ref)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs = objs
	s.index = nil
	s.shown = nil
	return nil
}

// dialect is how one service's API behaves.
type dialect interface {
	// serve answers a request under r; rest are the path segments below the collection.
	serve(s *Store, r *Resource, req Request, rest []string) Response
	// fill completes an object stored without the API (Add) as a create would.
	fill(s *Store, r *Resource, obj map[string]any, c Caller)
}

func (s *Store) list(r *Resource) []map[string]any { return s.objs[r.Ref()] }

func (s *Store) find(r *Resource, id string) map[string]any {
	for _, o := range s.objs[r.Ref()] {
		if o["id"] == id {
			return o
		}
	}
	return nil
}

func (s *Store) insert(r *Resource, obj map[string]any) {
	s.objs[r.Ref()] = append(s.objs[r.Ref()], obj)
	if idx := s.index[r.Ref()]; idx != nil {
		indexObject(idx, obj, len(s.objs[r.Ref()])-1)
	}
}

func (s *Store) remove(r *Resource, id string) {
	s.objs[r.Ref()] = slices.DeleteFunc(s.objs[r.Ref()], func(o map[string]any) bool {
		if o["id"] == id {
			s.touch(o)
			return true
		}
		return false
	})
	s.unindex(r)
}

// touch drops what the store has cached of a stored object's encodings. Everything that changes a
// stored object in place, or removes it from its collection, touches it: a page shows what the
// object holds now, never what it held when it was last shown.
func (s *Store) touch(obj map[string]any) { delete(s.shown, reflect.ValueOf(obj).Pointer()) }

// encoded is a stored object as a list shows it in one view (see shownObject), encoded as
// encoding/json's Marshal encodes show(): from the cache unless the object changed since
// (touch). An object that does not encode (nothing decoded JSON makes) is not cached.
func (s *Store) encoded(obj map[string]any, view string, show func() any) ([]byte, error) {
	at := reflect.ValueOf(obj).Pointer()
	e := s.shown[at]
	if b, ok := e.viewOf(view); ok {
		return b, nil
	}
	b, err := json.Marshal(show())
	if err != nil {
		return nil, err
	}
	if e == nil || len(e.views) >= maxViews {
		e = &shownObject{obj: obj, views: map[string][]byte{}}
		if s.shown == nil {
			s.shown = map[uintptr]*shownObject{}
		}
		s.shown[at] = e
	}
	e.views[view] = b
	return b, nil
}

func (e *shownObject) viewOf(view string) ([]byte, bool) {
	if e == nil {
		return nil, false
	}
	b, ok := e.views[view]
	return b, ok
}

// unindex drops r's index after a change other than insert (a delete, an object changed in place).
func (s *Store) unindex(r *Resource) { delete(s.index, r.Ref()) }

// lookupBy returns r's objects whose field (one of indexed) is the string value, in list order. The
// caller checks the field again: only insert and unindex keep the index, so it holds no object
// missing from it but, if a caller forgot to unindex, maybe one changed since.
func (s *Store) lookupBy(r *Resource, field, value string) []map[string]any {
	list := s.objs[r.Ref()]
	var out []map[string]any
	for _, at := range s.positionsBy(r, field, value) {
		out = append(out, list[at])
	}
	return out
}

// positionsBy is lookupBy as the objects' positions in r's list (s.list), for a caller that
// walks the list from one of them.
func (s *Store) positionsBy(r *Resource, field, value string) []int {
	idx := s.index[r.Ref()]
	if idx == nil {
		idx = map[string][]int{}
		for at, o := range s.objs[r.Ref()] {
			indexObject(idx, o, at)
		}
		if s.index == nil {
			s.index = map[string]map[string][]int{}
		}
		s.index[r.Ref()] = idx
	}
	return idx[field+"\x00"+value]
}

func indexObject(idx map[string][]int, o map[string]any, at int) {
	for _, f := range indexed {
		if v, ok := o[f].(string); ok {
			idx[f+"\x00"+v] = append(idx[f+"\x00"+v], at)
		}
	}
}

// adminProject is the id of the cloud's admin project (the first seeded).
func (s *Store) adminProject() string {
	if len(s.opts.Projects) > 0 {
		return s.opts.Projects[0].ID
	}
	return ""
}

// hexID is a Keystone-shaped id, 32 hex digits.
func hexID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// uuid4 is a random RFC 4122 version 4 UUID, the id shape Neutron uses.
func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func cloneJSON[T any](v T) T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("osapi: not JSON: %v", err))
	}
	var out T
	_ = json.Unmarshal(b, &out)
	return out
}

// copyJSON is cloneJSON(v) without encoding v, for what decoding JSON makes (maps of string to
// any, slices of any, strings, float64s, bools, nil): a list page copies every object it shows,
// and encoding each field took most of a page's time. Anything else (an int, a string that is
// not UTF-8) goes through cloneJSON, which makes it what decoding its JSON would.
func copyJSON(v any) any {
	switch v := v.(type) {
	case nil, float64, bool:
		return v
	case string:
		if utf8.ValidString(v) {
			return v
		}
	case map[string]any:
		if v == nil {
			return nil
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			if !utf8.ValidString(k) {
				return cloneJSON[any](v)
			}
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		if v == nil {
			return nil
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyJSON(e)
		}
		return out
	}
	return cloneJSON(v)
}

// decodeJSON decodes a request body; numbers stay float64 as encoding/json makes them.
func decodeJSON(b []byte) (any, error) {
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}

// ordinal reads an integral JSON number.
func ordinal(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}
