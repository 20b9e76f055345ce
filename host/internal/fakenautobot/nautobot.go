// Package fakenautobot is an in-process Nautobot: the part of its REST API a plugin reads to find
// IP prefixes (the subnet pools plugin's source of truth), with Nautobot's own shapes, filters and
// answers. Nautobot cannot run on the machines this project tests on (it is not a Debian package,
// and the Python package registry is not reachable), so the facts were read from Nautobot's
// published source, tag v3.1.6 (docs/plugins/neutron-subnet-pools.md lists each one):
//
//   - Token authentication: Authorization: Token <key>. Nautobot's first authentication class is
//     the session's, which offers no challenge, so Django REST framework answers a missing,
//     unknown or expired token with 403, not 401 ({"detail": "Invalid token"}, "Token expired",
//     "Authentication credentials were not provided."); a token whose user may not view prefixes
//     gets 403 "You do not have permission to perform this action.". A 401 comes only from
//     something in front of Nautobot (Fault).
//   - Versions: "Accept: application/json; version=X" (or ?api_version=X) with X one of 2.0-2.4,
//     3.0, 3.1, echoed in the API-Version header; another is 406. Versions 2.0 and 2.1 serialise a
//     prefix's single "location" (412 when it has several), later ones its "locations".
//   - GET /api/ipam/prefixes/ filters by id, location and locations (the named location and its
//     descendants), namespace, status, type, tag and prefix; an unknown filter is 400
//     {"<name>": ["Unknown filter field"]}, an unknown location, namespace, status or tag 400
//     {"<filter>": ["Select a valid choice. <v> is not one of the available choices."]}, a
//     malformed id 400. The list is paginated by limit (50 when unset, at most 1000, 0 meaning
//     1000) and offset, with absolute next and previous links.
//   - depth (0-10, anything else read as 0): at 0 a related object is {"id", "object_type",
//     "url"}, deeper it is the object itself. type is {"value", "label"} at any depth.
//   - GET /api/ipam/prefixes/<id>/ is the prefix, or 404 {"detail": "Not found."}; a path without
//     its trailing slash is redirected to it (301), as Django's APPEND_SLASH does.
package fakenautobot

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Version is the Nautobot release the rules above were read from; /api/status/ reports it.
const Version = "3.1.6"

// apiVersions are the REST API versions Nautobot 3.1 accepts; the newest is the default.
var apiVersions = []string{"2.0", "2.1", "2.2", "2.3", "2.4", "3.0", "3.1"}

// Prefix is an IPAM prefix as a test seeds it. Related objects are named: the server makes the
// status, namespace, tags and locations it needs.
type Prefix struct {
	ID     string `json:"id,omitempty"`
	Prefix string `json:"prefix"`
	// Type is network (the default), pool or container.
	Type string `json:"type,omitempty"`
	// Status is e.g. Active (the default), Reserved, Deprecated.
	Status string `json:"status,omitempty"`
	// Namespace defaults to Global.
	Namespace string   `json:"namespace,omitempty"`
	Tags      []string `json:"tags,omitempty"`
	// Locations name locations (AddLocation); a prefix may have none.
	Locations   []string `json:"locations,omitempty"`
	Description string   `json:"description,omitempty"`
}

// Location is a location of the tree the location filters walk.
type Location struct {
	ID   string `json:"id,omitempty"`
	Name string `json:"name"`
	// Parent names the parent location ("" for a root).
	Parent string `json:"parent,omitempty"`
}

// Seed is the IPAM a server starts with (a file for openstack-sync-dev run --embedded-nautobot,
// a conformance suite's nautobot): its site (the hook's SITE, added as a location), locations
// (parents first) and prefixes.
type Seed struct {
	Site      string     `json:"site,omitempty"`
	Locations []Location `json:"locations,omitempty"`
	Prefixes  []Prefix   `json:"prefixes"`
}

// Load adds a seed's locations and prefixes.
func (s *Server) Load(seed Seed) {
	if seed.Site != "" {
		s.AddLocation(Location{Name: seed.Site})
	}
	for _, l := range seed.Locations {
		s.AddLocation(l)
	}
	for _, p := range seed.Prefixes {
		s.AddPrefix(p)
	}
}

// Token is an API token.
type Token struct {
	Key     string
	Expired bool
	// NoView marks a token whose user may not view prefixes.
	NoView bool
}

// Fault changes the answers to requests whose path starts with Path ("" for every request): the
// next Count of them (0: every one) wait Delay, then get Status with Body (when Status is set),
// or a body that is not JSON (Malformed).
type Fault struct {
	Path       string
	Count      int
	Delay      time.Duration
	Status     int
	Body       string
	RetryAfter string
	Malformed  bool
}

// Request is one request the server received.
type Request struct {
	Method, Path string
	Query        url.Values
	// Token is the key the request authenticated with, "" without one.
	Token string
}

// Server is the fake Nautobot. Its zero value is not usable: call New or NewHandler.
type Server struct {
	mu        sync.Mutex
	srv       *httptest.Server
	tokens    map[string]Token
	prefixes  []*Prefix
	locations []*Location
	faults    []*Fault
	requests  []Request
	created   time.Time
}

// NewHandler returns a server that is not listening (serve its Handler yourself).
func NewHandler() *Server {
	return &Server{tokens: map[string]Token{}, created: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)}
}

// New starts a server on loopback. Close it when done.
func New() *Server {
	s := NewHandler()
	s.srv = httptest.NewServer(s.Handler())
	return s
}

// URL is the server's base URL (the Nautobot URL a CR names), without a trailing slash.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server; requests then fail as to a Nautobot that is down.
func (s *Server) Close() {
	if s.srv != nil {
		s.srv.Close()
	}
}

// AddToken lets requests with this key in.
func (s *Server) AddToken(t Token) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[t.Key] = t
}

// AddLocation adds a location (its parent first) and returns it with its id.
func (s *Server) AddLocation(l Location) Location {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.ID == "" {
		l.ID = idFor("location", l.Name)
	}
	rec := l
	s.locations = append(s.locations, &rec)
	return l
}

// AddPrefix adds a prefix and returns it with its id and defaults.
func (s *Server) AddPrefix(p Prefix) Prefix {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.ID == "" {
		p.ID = idFor("prefix", p.Prefix+"/"+strconv.Itoa(len(s.prefixes)))
	}
	if p.Type == "" {
		p.Type = "network"
	}
	if p.Status == "" {
		p.Status = "Active"
	}
	if p.Namespace == "" {
		p.Namespace = "Global"
	}
	rec := p
	rec.Tags, rec.Locations = slices.Clone(p.Tags), slices.Clone(p.Locations)
	s.prefixes = append(s.prefixes, &rec)
	return p
}

// UpdatePrefix changes a prefix in place by id.
func (s *Server) UpdatePrefix(id string, change func(p *Prefix)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prefixes {
		if p.ID == id {
			change(p)
		}
	}
}

// DeletePrefix removes a prefix by id.
func (s *Server) DeletePrefix(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prefixes = slices.DeleteFunc(s.prefixes, func(p *Prefix) bool { return p.ID == id })
}

// SetFault adds a fault; ClearFaults removes them all.
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := f
	s.faults = append(s.faults, &rec)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// Requests returns the requests received, in order; ResetRequests forgets them.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// idFor is a stable UUID for a named object, so a related object's id is the same every time.
func idFor(kind, name string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func detail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"detail": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Vary", "Accept")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Handler serves the API.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()}
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Token "); ok {
		rec.Token = key
	}
	s.requests = append(s.requests, rec)
	var fault *Fault
	for _, f := range s.faults {
		if strings.HasPrefix(r.URL.Path, f.Path) && f.Count >= 0 {
			fault = f
			if f.Count > 0 {
				if f.Count--; f.Count == 0 {
					f.Count = -1 // spent
				}
			}
			break
		}
	}
	s.mu.Unlock()
	if fault != nil {
		if fault.Delay > 0 {
			select {
			case <-time.After(fault.Delay):
			case <-r.Context().Done():
				return
			}
		}
		switch {
		case fault.Malformed:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"count": 1, "results": [{"id": `))
			return
		case fault.Status != 0:
			if fault.RetryAfter != "" {
				w.Header().Set("Retry-After", fault.RetryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(fault.Status)
			_, _ = w.Write([]byte(fault.Body))
			return
		}
	}
	path := r.URL.Path
	known := path == "/api/" || path == "/api/status/" || path == "/api/ipam/prefixes/" || prefixDetail(path) != ""
	if !known && !strings.HasSuffix(path, "/") && (path+"/" == "/api/" || path+"/" == "/api/status/" ||
		path+"/" == "/api/ipam/prefixes/" || prefixDetail(path+"/") != "") && r.Method == http.MethodGet {
		u := *r.URL
		u.Path += "/"
		http.Redirect(w, r, u.RequestURI(), http.StatusMovedPermanently)
		return
	}
	if !known {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<!DOCTYPE html><html><head><title>Page Not Found</title></head><body><h1>Page Not Found</h1></body></html>"))
		return
	}
	version, ok := s.version(w, r)
	if !ok {
		return
	}
	w.Header().Set("API-Version", version)
	tok, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		detail(w, http.StatusMethodNotAllowed, fmt.Sprintf("Method %q not allowed.", r.Method))
		return
	}
	switch {
	case path == "/api/":
		base := s.base(r)
		writeJSON(w, http.StatusOK, map[string]any{"circuits": base + "/api/circuits/", "dcim": base + "/api/dcim/",
			"extras": base + "/api/extras/", "ipam": base + "/api/ipam/", "status": base + "/api/status/"})
	case path == "/api/status/":
		writeJSON(w, http.StatusOK, map[string]any{"nautobot-version": Version, "django-version": "4.2",
			"python-version": "3.12", "celery-workers-running": 1, "plugins": map[string]any{}})
	case !tok.may():
		detail(w, http.StatusForbidden, "You do not have permission to perform this action.")
	case path == "/api/ipam/prefixes/":
		s.list(w, r, version)
	default:
		s.show(w, r, version, prefixDetail(path))
	}
}

// prefixDetail returns the id of a /api/ipam/prefixes/<id>/ path, "" for any other.
func prefixDetail(path string) string {
	rest, ok := strings.CutPrefix(path, "/api/ipam/prefixes/")
	id, ok2 := strings.CutSuffix(rest, "/")
	if !ok || !ok2 || id == "" || strings.Contains(id, "/") {
		return ""
	}
	return id
}

func (s *Server) base(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// version reads the requested API version: the Accept header's version parameter or api_version.
func (s *Server) version(w http.ResponseWriter, r *http.Request) (string, bool) {
	header := ""
	for _, part := range strings.Split(r.Header.Get("Accept"), ";")[1:] {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && k == "version" {
			header = strings.Trim(v, `"`)
		}
	}
	query := r.URL.Query().Get("api_version")
	switch {
	case header != "" && query != "" && header != query:
		detail(w, http.StatusBadRequest, `Version mismatch between "Accept" header and query parameter.`)
		return "", false
	case header != "" && !slices.Contains(apiVersions, header):
		detail(w, http.StatusNotAcceptable, fmt.Sprintf(`Invalid version "%s" in "Accept" header. Supported versions are: %s`,
			header, strings.Join(apiVersions, ", ")))
		return "", false
	case query != "" && !slices.Contains(apiVersions, query):
		detail(w, http.StatusNotFound, fmt.Sprintf(`Invalid version "%s" in query parameter. Supported versions are: %s`,
			query, strings.Join(apiVersions, ", ")))
		return "", false
	case header != "":
		return header, true
	case query != "":
		return query, true
	}
	return apiVersions[len(apiVersions)-1], true
}

type access struct{ tok *Token }

func (a access) may() bool { return a.tok != nil && !a.tok.NoView }

// authenticate applies token authentication with Nautobot's answers (403, see the package doc).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (access, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		detail(w, http.StatusForbidden, "Authentication credentials were not provided.")
		return access{}, false
	}
	scheme, key, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Token") {
		detail(w, http.StatusForbidden, "Authentication credentials were not provided.")
		return access{}, false
	}
	if key == "" || strings.Contains(key, " ") {
		detail(w, http.StatusForbidden, "Invalid token header. No credentials provided.")
		return access{}, false
	}
	s.mu.Lock()
	t, ok := s.tokens[key]
	s.mu.Unlock()
	switch {
	case !ok:
		detail(w, http.StatusForbidden, "Invalid token")
		return access{}, false
	case t.Expired:
		detail(w, http.StatusForbidden, "Token expired")
		return access{}, false
	}
	return access{tok: &t}, true
}
