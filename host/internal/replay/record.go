package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// wireRequest is one recorded request: an OpenStack request, or with Source set a request to a
// source outside OpenStack. It holds what reaches the wire from the plugin's side (the session
// adds the token, the source's credential and the microversion header itself).
type wireRequest struct {
	Service      string      `json:"service,omitempty"`
	Source       string      `json:"source,omitempty"`
	URL          string      `json:"url,omitempty"`
	SecretName   string      `json:"secret_name,omitempty"`
	SecretKey    string      `json:"secret_key,omitempty"`
	HasSecret    bool        `json:"has_secret,omitempty"`
	Method       string      `json:"method"`
	Path         string      `json:"path"`
	Query        url.Values  `json:"query,omitempty"`
	Header       http.Header `json:"header,omitempty"`
	Microversion string      `json:"microversion,omitempty"`
	Body         []byte      `json:"body,omitempty"`
}

func (w wireRequest) String() string {
	if w.Source != "" {
		return w.Method + " source " + w.Source + " " + w.Path
	}
	return w.Method + " " + w.Service + " " + w.Path
}

// Recorder is a Connector that records what each session of a run sends and gets, in the
// order the run opens the groups. A run is recordable only while every request it sent was a read
// (GET or HEAD) that got an answer.
type Recorder struct {
	plugin.Connector

	mu       sync.Mutex
	groups   []*recorded
	spoiled  string
	requests int
}

// NewRecorder records the sessions c opens.
func NewRecorder(c plugin.Connector) *Recorder { return &Recorder{Connector: c} }

type recorded struct {
	creds    plugin.Credentials
	requests []modulecache.ReplayRequest
}

// Connect opens the group's session through the wrapped connector and records it.
func (r *Recorder) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	s, err := r.Connector.Connect(ctx, creds)
	if err != nil {
		r.spoil("connecting a credential group failed")
		return nil, err
	}
	g := &recorded{creds: creds}
	r.mu.Lock()
	r.groups = append(r.groups, g)
	r.mu.Unlock()
	rs := &session{Session: s, r: r, g: g}
	if src, ok := s.(plugin.SourceSender); ok {
		return &sourceSession{session: rs, src: src}, nil
	}
	return rs, nil
}

func (r *Recorder) spoil(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.spoiled == "" {
		r.spoiled = why
	}
}

func (r *Recorder) note(g *recorded, w wireRequest, resp *plugin.Response, err error) {
	switch {
	case err != nil || resp == nil:
		r.spoil(fmt.Sprintf("%s got no answer", w))
		return
	case w.Method != http.MethodGet && w.Method != http.MethodHead:
		r.spoil(fmt.Sprintf("%s may have changed something", w))
		return
	}
	raw, jerr := json.Marshal(w)
	if jerr != nil {
		r.spoil(jerr.Error())
		return
	}
	a := Answer(resp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requests++; r.requests > modulecache.MaxReplayRequests {
		if r.spoiled == "" {
			r.spoiled = "too many requests to record"
		}
		return
	}
	if r.spoiled == "" {
		g.requests = append(g.requests, modulecache.ReplayRequest{Request: raw, Answer: a})
	}
}

// Spoiled says why the run cannot be recorded; "" when it can.
func (r *Recorder) Spoiled() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spoiled
}

// Groups are the recorded groups, in the order the run opened them.
func (r *Recorder) Groups() []modulecache.ReplayGroup {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]modulecache.ReplayGroup, 0, len(r.groups))
	for _, g := range r.groups {
		out = append(out, modulecache.ReplayGroup{Namespace: g.creds.Namespace, SecretName: g.creds.SecretName,
			CloudName: g.creds.CloudName, Requests: g.requests})
	}
	return out
}

// Requests is how many requests were recorded.
func (r *Recorder) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

type session struct {
	plugin.Session
	r *Recorder
	g *recorded
}

func (s *session) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	resp, err := s.Session.Do(ctx, req)
	s.r.note(s.g, wireRequest{Service: req.Service, Method: req.Method, Path: req.Path, Query: req.Query,
		Header: req.Header, Microversion: req.Microversion, Body: req.Body}, resp, err)
	return resp, err
}

// Unwrap is the recorded session, so the sandbox still tells groups apart by their session.
func (s *session) Unwrap() plugin.Session { return s.Session }

type sourceSession struct {
	*session
	src plugin.SourceSender
}

func (s *sourceSession) DoSource(ctx context.Context, req plugin.SourceRequest) (*plugin.Response, error) {
	resp, err := s.src.DoSource(ctx, req)
	s.r.note(s.g, sourceWire(req), resp, err)
	return resp, err
}

func sourceWire(req plugin.SourceRequest) wireRequest {
	w := wireRequest{Source: req.Source, URL: req.URL, Method: req.Method, Path: req.Path, Query: req.Query,
		Header: req.Header, Body: req.Body}
	if req.Secret != nil {
		w.HasSecret, w.SecretName, w.SecretKey = true, req.Secret.Name, req.Secret.Key
	}
	return w
}

func (w wireRequest) sourceRequest() plugin.SourceRequest {
	req := plugin.SourceRequest{Source: w.Source, URL: w.URL, Method: w.Method, Path: w.Path, Query: w.Query,
		Header: w.Header, Body: w.Body}
	if w.HasSecret {
		req.Secret = &plugin.SecretKeyRef{Name: w.SecretName, Key: w.SecretKey}
	}
	return req
}
