// Package pdktest runs plugin logic under plain `go test`, without wasm: it gives a handler a
// pdk.Context wired to a fake host that answers OpenStack requests from a script or a handler
// function, serves configuration values, enforces grants like the real host and records every
// request and log line.
package pdktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
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
	// Grants make the fake refuse requests outside them as the real host does, with its words
	// and a permanent *pdk.HostError of kind "grant_denied". nil means the registered plugin's
	// declared grants (when a plugin is registered, as in a plugin's own package tests), so a
	// test fails when the plugin calls something it did not declare; set AllowAll to enforce
	// no grant. A path pdk.CheckPath refuses is refused whatever the grants, as on the host,
	// with kind "invalid_request".
	Grants []pdk.Grant
	// AllowAll disables grant enforcement (for helpers tested without a registered plugin's
	// grants in mind).
	AllowAll bool
	// Script answers requests in order. The test fails when a request does not match the next
	// exchange or when exchanges are left over at the end of the test.
	Script []Exchange
	// Handler answers requests once Script is used up (or when it is empty).
	Handler func(req *pdk.Request) (*pdk.Response, error)
	// Cloud answers requests once Script is used up when Handler is nil: a stateful fake cloud
	// written against Call, with its answer encoded as JSON.
	Cloud Cloud
	// Cache is the group cache the Context starts with (a new map when nil).
	Cache map[string]any
	// Sources are the sources outside OpenStack the operator allow-lists (Context.Source); a
	// request to any other is refused as the host refuses it.
	Sources []Source
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
	calls    []Call
	logs     []LogLine
	evidence [][][]byte
	sources  []SourceCall
	// memo answers experimental.Unchanged (nil: never a hit); memotest.Answer sets it.
	memo func(evidence [][]byte) bool
}

// Call is one recorded request as a fake cloud sees it: the body is the JSON the plugin sent.
type Call struct {
	Service      string
	Method       string
	Path         string
	Query        url.Values
	Microversion string
	// Body is the JSON the plugin sent, nil when it sent none.
	Body []byte
}

// String renders "METHOD path?query" for assertions and messages.
func (c Call) String() string {
	if len(c.Query) == 0 {
		return c.Method + " " + c.Path
	}
	return c.Method + " " + c.Path + "?" + c.Query.Encode()
}

// Cloud plays OpenStack for a test: it answers a call with a status and a body that is encoded as
// JSON (nil for none; []byte and json.RawMessage are sent as is).
type Cloud func(c Call) (status int, body any)

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
	return testhook.NewContext(h, opts.Cache).(*pdk.Context)
}

// Of returns the fake host behind ctx; it fails the test when ctx was not made by New.
func Of(t testing.TB, ctx *pdk.Context) *Host {
	t.Helper()
	h, ok := testhook.HostOf(ctx).(*Host)
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

// Calls returns every request the plugin sent, as a fake cloud saw it, in order.
func (h *Host) Calls() []Call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Call(nil), h.calls...)
}

// Lines renders every request as "METHOD path?query".
func (h *Host) Lines() []string {
	var out []string
	for _, c := range h.Calls() {
		out = append(out, c.String())
	}
	return out
}

// Writes returns the requests that could change the cloud (anything but GET and HEAD).
func (h *Host) Writes() []Call {
	var w []Call
	for _, c := range h.Calls() {
		if c.Method != "GET" && c.Method != "HEAD" {
			w = append(w, c)
		}
	}
	return w
}

// WriteLines renders the writes as "METHOD path?query" and, in the same order, the JSON bodies
// they sent: the two lists a reconcile test holds its expected writes against.
func (h *Host) WriteLines() (lines, bodies []string) {
	for _, w := range h.Writes() {
		lines = append(lines, w.String())
		bodies = append(bodies, string(w.Body))
	}
	return lines, bodies
}

// Reset forgets the recorded requests and evidence (not the logs, nor the position in the script).
func (h *Host) Reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.requests, h.calls, h.evidence, h.sources = h.requests[:0], h.calls[:0], h.evidence[:0], h.sources[:0]
}

// Logs returns every message the plugin logged, in order.
func (h *Host) Logs() []LogLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]LogLine(nil), h.logs...)
}

func init() {
	testhook.SetMemo = func(h any, answer func([][]byte) bool) {
		host := h.(*Host)
		host.mu.Lock()
		host.memo = answer
		host.mu.Unlock()
	}
}

// Unchanged implements the host side of experimental.Unchanged: never a hit unless a test set
// an answer (pdk/experimental/memotest); every call's evidence is kept for Evidence either way.
func (h *Host) Unchanged(evidence [][]byte) bool {
	cp := make([][]byte, len(evidence))
	for i, e := range evidence {
		cp[i] = append([]byte(nil), e...)
	}
	h.mu.Lock()
	h.evidence = append(h.evidence, cp)
	memo := h.memo
	h.mu.Unlock()
	return memo != nil && memo(evidence)
}

// Evidence returns the evidence of every Context.Unchanged call so far, in order.
func (h *Host) Evidence() [][][]byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][][]byte(nil), h.evidence...)
}

// Config implements Backend.
func (h *Host) Config(key string) (string, bool) {
	v, ok := h.opts.Config[key]
	return v, ok
}

// Log implements Backend.
func (h *Host) Log(level pdk.LogLevel, msg string) {
	h.mu.Lock()
	h.logs = append(h.logs, LogLine{Level: level, Message: msg})
	h.mu.Unlock()
	h.t.Logf("plugin log %s: %s", level, msg)
}

// OpenStack implements Backend.
func (h *Host) OpenStack(req *pdk.Request) (*pdk.Response, error) {
	h.t.Helper()
	call := Call{Service: req.Service, Method: req.Method, Path: req.Path, Query: req.Query, Microversion: req.Microversion}
	var bodyErr error
	if req.Body != nil {
		// The real host sends JSON only: fail here too rather than in production.
		call.Body, bodyErr = bodyBytes(req.Body)
		if bodyErr == nil && !json.Valid(call.Body) {
			bodyErr = fmt.Errorf("%s %s %s: body is not valid JSON", req.Method, req.Service, req.Path)
		}
	}
	h.mu.Lock()
	h.requests = append(h.requests, *req)
	h.calls = append(h.calls, call)
	h.mu.Unlock()
	if bodyErr != nil {
		return nil, bodyErr
	}
	// The host's rule and words (pdk/abi/grant; pdk/testdata/grant-rule.json holds the cases).
	if err := pdk.CheckPath(req.Path); err != nil {
		return nil, &pdk.HostError{Kind: "invalid_request", IsPermanent: true,
			Message: fmt.Sprintf("%s %s %s: unsafe path: %v", req.Method, req.Service, req.Path, err)}
	}
	if h.opts.Grants != nil {
		if why := pdk.ExplainRefusal(h.opts.Grants, "the plugin declares", req.Service, req.Method, req.Path); why != "" {
			return nil, &pdk.HostError{Kind: "grant_denied", IsPermanent: true, Message: why}
		}
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
	if h.opts.Cloud != nil {
		status, body := h.opts.Cloud(call)
		return JSON(status, body), nil
	}
	h.t.Errorf("pdktest: unexpected OpenStack request %s %s %s", req.Method, req.Service, req.Path)
	return nil, &pdk.HostError{Kind: "session", Message: "pdktest: no scripted answer for " + req.Method + " " + req.Path}
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
	return p.Reconcile(ctx, &pdk.ReconcileRequest{Object: obj, Spec: raw, Credentials: groupFor(p, pdk.Credentials{})})
}

// NeutronFault is an error body in Neutron's shape ({"NeutronError": {...}}), for fake clouds.
func NeutronFault(message string) any {
	return map[string]any{"NeutronError": map[string]any{"type": "Fault", "message": message, "detail": ""}}
}

// IronicFault is an error body in Ironic's shape: error_message holds the JSON text of a fault.
func IronicFault(message string) any {
	inner, _ := json.Marshal(map[string]any{"faultstring": message, "debuginfo": nil})
	return map[string]any{"error_message": string(inner)}
}
