// Package osapitest is an in-memory osapi.Service for the plugins' unit tests: a handler plays
// the cloud and every request is recorded, so tests can count requests and spot writes.
package osapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/osapi"
)

// Request is one recorded call.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	// Body is the JSON the plugin sent, nil when it sent none.
	Body []byte
}

// String renders "METHOD path?query" for assertion messages.
func (r Request) String() string {
	if len(r.Query) == 0 {
		return r.Method + " " + r.Path
	}
	return r.Method + " " + r.Path + "?" + r.Query.Encode()
}

// Handler plays the cloud: it returns the status code and a JSON-encodable body (nil for none).
type Handler func(r Request) (int, any)

// Service records every request and answers it with Handle.
type Service struct {
	Handle   Handler
	Requests []Request
}

var _ osapi.Service = (*Service)(nil)

// Call implements osapi.Service the way the PDK adapter does: JSON in, JSON out, non-2xx as an
// *osapi.HTTPError built from the body.
func (s *Service) Call(method, path string, query url.Values, body, out any) error {
	req := Request{Method: method, Path: path, Query: query}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode %s %s body: %w", method, path, err)
		}
		req.Body = b
	}
	s.Requests = append(s.Requests, req)
	status, resp := s.Handle(req)
	var raw []byte
	if resp != nil {
		b, err := json.Marshal(resp)
		if err != nil {
			return fmt.Errorf("fake cloud cannot encode its answer to %s: %w", req, err)
		}
		raw = b
	}
	if status < 200 || status > 299 {
		return osapi.NewHTTPError(method, path, status, raw)
	}
	if out != nil && raw != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// Writes returns the requests that could change the cloud (anything but GET and HEAD).
func (s *Service) Writes() []Request {
	var w []Request
	for _, r := range s.Requests {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w = append(w, r)
		}
	}
	return w
}

// WriteLines renders the writes as "METHOD path?query" and, in the same order, the JSON bodies
// they sent: the two lists a reconcile test holds its expected writes against.
func (s *Service) WriteLines() (lines, bodies []string) {
	for _, w := range s.Writes() {
		lines = append(lines, w.String())
		bodies = append(bodies, string(w.Body))
	}
	return lines, bodies
}

// Lines renders the recorded requests as "METHOD path?query" strings.
func (s *Service) Lines() []string {
	var out []string
	for _, r := range s.Requests {
		out = append(out, r.String())
	}
	return out
}

// Reset forgets the recorded requests.
func (s *Service) Reset() { s.Requests = slices.Delete(s.Requests, 0, len(s.Requests)) }

// ReportConvergedRequests runs reconcileGroup once per benchmark iteration against a freshly reset
// svc, fails the benchmark when a run writes (the group is meant to be converged already) and
// reports the requests one run cost as requests/group, the figure docs/plugins/README.md quotes.
func ReportConvergedRequests(b *testing.B, svc *Service, reconcileGroup func() error) {
	b.Helper()
	requests := 0
	for b.Loop() {
		svc.Reset()
		if err := reconcileGroup(); err != nil {
			b.Fatal(err)
		}
		if w := svc.Writes(); len(w) > 0 {
			b.Fatalf("a converged group wrote: %v", w)
		}
		requests = len(svc.Requests)
	}
	b.ReportMetric(float64(requests), "requests/group")
}

// Fault is a JSON error body in Neutron's shape, the one osapi.ErrorMessage reads first. The
// Ironic fake answers in Ironic's own error_message shape instead, so that path is exercised too.
func Fault(message string) any {
	return map[string]any{"NeutronError": map[string]any{"type": "Fault", "message": message, "detail": ""}}
}
