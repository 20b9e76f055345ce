// Package pdktest runs plugin logic under plain `go test`, without wasm: it gives a handler a
// pdk.Context wired to a fake host that answers OpenStack requests from a script or a handler
// function, serves configuration values, enforces grants like the real host and records every
// request and log line.
package pdktest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// Exchange is one scripted OpenStack answer. Method, Service and Path (when non-empty) must equal
// the request's, or the test fails.
type Exchange struct {
	Service string
	Method  string
	Path    string
	// Status is the HTTP status to answer (200 when zero and Err is nil).
	Status int
	// Body is marshalled to JSON; []byte and json.RawMessage are sent as is.
	Body any
	// Err, when set, is returned instead of a response (e.g. a *pdk.HostError).
	Err error
}

// Options configure the fake host.
type Options struct {
	// Config holds the plugin's configuration (keys without the env prefix).
	Config map[string]string
	// Grants make the fake refuse requests outside them with a permanent *pdk.HostError of kind
	// "grant_denied", as the real host does. nil means the registered plugin's declared grants
	// (when a plugin is registered, as in a plugin's own package tests), so a test fails when
	// the plugin calls something it did not declare; set AllowAll to enforce nothing.
	Grants []pdk.Grant
	// AllowAll disables grant enforcement (for helpers tested without a registered plugin's
	// grants in mind).
	AllowAll bool
	// Script answers requests in order. The test fails when a request does not match the next
	// exchange or when exchanges are left over at the end of the test.
	Script []Exchange
	// Handler answers requests once Script is used up (or when it is empty).
	Handler func(req *pdk.Request) (*pdk.Response, error)
	// Cache is the group cache the Context starts with (a new map when nil).
	Cache map[string]any
}

// LogLine is one message the plugin logged.
type LogLine struct {
	Level   pdk.LogLevel
	Message string
}

// Host is the fake host behind a Context made by New.
type Host struct {
	t    testing.TB
	opts Options

	mu       sync.Mutex
	next     int
	requests []pdk.Request
	logs     []LogLine
}

// New returns a Context backed by a fake host configured by opts.
func New(t testing.TB, opts Options) *pdk.Context {
	t.Helper()
	if opts.Grants == nil && !opts.AllowAll {
		if p := pdk.Registered(); p != nil {
			opts.Grants = p.Metadata.Grants
		}
	}
	if opts.AllowAll {
		opts.Grants = nil
	}
	h := &Host{t: t, opts: opts}
	t.Cleanup(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if left := len(h.opts.Script) - h.next; left > 0 {
			t.Errorf("pdktest: %d scripted OpenStack exchange(s) never requested, next: %s %s %s", left,
				h.opts.Script[h.next].Method, h.opts.Script[h.next].Service, h.opts.Script[h.next].Path)
		}
	})
	return pdk.NewContext(h, opts.Cache)
}

// Of returns the fake host behind ctx; it fails the test when ctx was not made by New.
func Of(t testing.TB, ctx *pdk.Context) *Host {
	t.Helper()
	h, ok := ctx.Host().(*Host)
	if !ok {
		t.Fatalf("pdktest.Of: context was not made by pdktest.New")
	}
	return h
}

// Requests returns every request the plugin sent, in order (refused ones included).
func (h *Host) Requests() []pdk.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]pdk.Request(nil), h.requests...)
}

// Logs returns every message the plugin logged, in order.
func (h *Host) Logs() []LogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogLine(nil), h.logs...)
}

// Config implements pdk.Host.
func (h *Host) Config(key string) (string, bool) {
	v, ok := h.opts.Config[key]
	return v, ok
}

// Log implements pdk.Host.
func (h *Host) Log(level pdk.LogLevel, msg string) {
	h.mu.Lock()
	h.logs = append(h.logs, LogLine{Level: level, Message: msg})
	h.mu.Unlock()
	h.t.Logf("plugin log %s: %s", level, msg)
}

// OpenStack implements pdk.Host.
func (h *Host) OpenStack(req *pdk.Request) (*pdk.Response, error) {
	h.t.Helper()
	h.mu.Lock()
	h.requests = append(h.requests, *req)
	h.mu.Unlock()
	if req.Body != nil {
		// The real host sends JSON only: fail here too rather than in production.
		if _, err := bodyBytes(req.Body); err != nil {
			return nil, err
		}
	}
	if h.opts.Grants != nil && !allowed(h.opts.Grants, req) {
		return nil, &pdk.HostError{Kind: "grant_denied", IsPermanent: true,
			Message: fmt.Sprintf("%s %s %s is outside the plugin's grants", req.Method, req.Service, req.Path)}
	}
	h.mu.Lock()
	if h.next < len(h.opts.Script) {
		ex := h.opts.Script[h.next]
		h.next++
		h.mu.Unlock()
		return h.answer(ex, req)
	}
	h.mu.Unlock()
	if h.opts.Handler != nil {
		return h.opts.Handler(req)
	}
	h.t.Errorf("pdktest: unexpected OpenStack request %s %s %s", req.Method, req.Service, req.Path)
	return nil, &pdk.HostError{Kind: "unavailable", Message: "pdktest: no scripted answer for " + req.Method + " " + req.Path}
}

func (h *Host) answer(ex Exchange, req *pdk.Request) (*pdk.Response, error) {
	h.t.Helper()
	if (ex.Service != "" && ex.Service != req.Service) || (ex.Method != "" && ex.Method != req.Method) ||
		(ex.Path != "" && ex.Path != req.Path) {
		h.t.Errorf("pdktest: request %s %s %s does not match the scripted %s %s %s",
			req.Method, req.Service, req.Path, ex.Method, ex.Service, ex.Path)
	}
	if ex.Err != nil {
		return nil, ex.Err
	}
	status := ex.Status
	if status == 0 {
		status = 200
	}
	return JSON(status, ex.Body), nil
}

func allowed(grants []pdk.Grant, req *pdk.Request) bool {
	for _, g := range grants {
		if g.Allows(req.Service, req.Method, req.Path) {
			return true
		}
	}
	return false
}

// JSON builds a response with body marshalled to JSON ([]byte and json.RawMessage as is).
func JSON(status int, body any) *pdk.Response {
	b, err := bodyBytes(body)
	if err != nil {
		panic("pdktest.JSON: " + err.Error())
	}
	return &pdk.Response{StatusCode: status, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: b}
}

func bodyBytes(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encoding body: %w", err)
	}
	return b, nil
}

// Reconcile decodes spec (any JSON-marshallable value) into a ReconcileRequest for obj and runs
// the registered plugin's Reconcile handler, or p's when p is non-nil.
func Reconcile(ctx *pdk.Context, p *pdk.Plugin, obj pdk.Object, spec any) (*pdk.Result, error) {
	if p == nil {
		p = pdk.Registered()
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("pdktest.Reconcile: encoding spec: %w", err)
	}
	return p.Reconcile(ctx, &pdk.ReconcileRequest{Object: obj, Spec: raw})
}
