// Package plugintest holds Go doubles of the plugin contract: a recording stub Plugin with
// configurable per-CR results, and an in-memory Connector whose Sessions record requests. A shared
// Journal records every call in order, so tests can assert ordering across the plugin, the
// connector and their own Kubernetes double.
package plugintest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// Journal is an ordered, concurrency-safe record of calls.
type Journal struct {
	mu      sync.Mutex
	entries []string
}

// Add records one entry; a nil Journal records nothing.
func (j *Journal) Add(format string, args ...any) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, fmt.Sprintf(format, args...))
}

// Entries returns a copy of the record.
func (j *Journal) Entries() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}

// Group renders credentials as the journal writes them: namespace/secret/cloud.
func Group(c plugin.Credentials) string { return c.Namespace + "/" + c.SecretName + "/" + c.CloudName }

// Result is the outcome the stub gives one CR.
type Result struct {
	Notes []string
	Extra map[string]any
	// Err fails the reconcile; wrap it with plugin.WithReason to name a reason.
	Err error
	// Panic, when non-nil, makes Reconcile panic with this value (a misbehaving plugin).
	Panic any
	// Lifecycle is the shared lifecycle status the result reports.
	Lifecycle *plugin.Lifecycle
}

// Plugin is a recording stub. Zero values behave: every CR reconciles with no notes, the API is
// ready, prune succeeds, and the policy is FINALIZED_PRUNE with PRUNE=true, else NONE.
type Plugin struct {
	Meta plugin.Metadata
	// Policy overrides the cleanup policy for a PRUNE setting.
	Policy func(prune bool) plugin.CleanupPolicy
	// Results by CR metadata.name.
	Results map[string]Result
	// Deletes are the per-CR delete results by CR metadata.name (Meta.HasDelete); a CR without
	// one is deleted with reason Success.
	Deletes map[string]Result
	// WaitErrs are returned by successive readiness probes of a group; when used up, nil.
	WaitErrs map[plugin.Credentials][]error
	// PruneErrs fail the prune of a group.
	PruneErrs map[plugin.Credentials]error
	// CacheErr fails NewCache.
	CacheErr error
	Journal  *Journal

	mu         sync.Mutex
	caches     []*Cache
	reconciles []plugin.ReconcileRequest
	deletes    []plugin.ReconcileRequest
	prunes     []plugin.PruneRequest
	closed     bool
}

var (
	_ plugin.Plugin  = (*Plugin)(nil)
	_ plugin.Deleter = (*Plugin)(nil)
)

// Metadata returns Meta, defaulting to the "widget" test plugin.
func (p *Plugin) Metadata() plugin.Metadata {
	m := p.Meta
	if m.Name == "" {
		m = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets", Probe: m.Probe}
	}
	return m
}

// CleanupPolicy applies Policy, else the default rule.
func (p *Plugin) CleanupPolicy(prune bool) plugin.CleanupPolicy {
	if p.Policy != nil {
		return p.Policy(prune)
	}
	if prune {
		return plugin.CleanupFinalizedPrune
	}
	return plugin.CleanupNone
}

func sessionGroup(s plugin.Session) string {
	// The runner wraps a session to count what a prune deletes; the group is the wrapped one's.
	if w, ok := s.(interface{ Unwrap() plugin.Session }); ok {
		s = w.Unwrap()
	}
	if ss, ok := s.(*Session); ok {
		return Group(ss.Credentials)
	}
	return fmt.Sprintf("%T", s)
}

// WaitForAPI pops the group's next configured error.
func (p *Plugin) WaitForAPI(_ context.Context, s plugin.Session) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Journal.Add("wait %s", sessionGroup(s))
	ss, ok := s.(*Session)
	if !ok {
		return nil
	}
	errs := p.WaitErrs[ss.Credentials]
	if len(errs) == 0 {
		return nil
	}
	p.WaitErrs[ss.Credentials] = errs[1:]
	return errs[0]
}

// NewCache starts a numbered cache.
func (p *Plugin) NewCache(context.Context) (plugin.Cache, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.CacheErr != nil {
		p.Journal.Add("cache error")
		return nil, p.CacheErr
	}
	c := &Cache{ID: len(p.caches) + 1, journal: p.Journal}
	p.caches = append(p.caches, c)
	p.Journal.Add("cache %d", c.ID)
	return c, nil
}

// Reconcile records the request and returns the CR's configured result.
func (p *Plugin) Reconcile(_ context.Context, s plugin.Session, c plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := 0
	if cc, ok := c.(*Cache); ok {
		id = cc.ID
	}
	p.Journal.Add("reconcile %s/%s via %s cache %d", req.Object.Namespace, req.Object.Name, sessionGroup(s), id)
	p.reconciles = append(p.reconciles, req)
	r := p.Results[req.Object.Name]
	if r.Panic != nil {
		panic(r.Panic)
	}
	if r.Err != nil {
		return plugin.Result{}, r.Err
	}
	return plugin.Result{Notes: r.Notes, ExtraStatus: r.Extra, Lifecycle: r.Lifecycle}, nil
}

// Delete records the request and returns the CR's configured delete result.
func (p *Plugin) Delete(_ context.Context, s plugin.Session, _ plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Journal.Add("delete %s/%s via %s", req.Object.Namespace, req.Object.Name, sessionGroup(s))
	p.deletes = append(p.deletes, req)
	r, ok := p.Deletes[req.Object.Name]
	if !ok {
		r.Lifecycle = &plugin.Lifecycle{Available: "False", Reason: plugin.ReasonSuccess}
	}
	if r.Err != nil {
		return plugin.Result{}, r.Err
	}
	return plugin.Result{Notes: r.Notes, ExtraStatus: r.Extra, Lifecycle: r.Lifecycle}, nil
}

// Deleted returns the per-CR delete requests in call order.
func (p *Plugin) Deleted() []plugin.ReconcileRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deletes)
}

// Prune records the request and returns the group's configured error.
func (p *Plugin) Prune(_ context.Context, s plugin.Session, req plugin.PruneRequest) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(req.DesiredSpecs))
	for _, raw := range req.DesiredSpecs {
		var spec map[string]any
		_ = json.Unmarshal(raw, &spec)
		names = append(names, fmt.Sprint(spec["name"]))
	}
	p.Journal.Add("prune %s via %s desired=[%s] authoritative=%t", Group(req.Credentials), sessionGroup(s),
		strings.Join(names, " "), req.AuthoritativeEmpty)
	p.prunes = append(p.prunes, req)
	return p.PruneErrs[req.Credentials]
}

// Close marks the plugin closed.
func (p *Plugin) Close(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.Journal.Add("close plugin")
	return nil
}

// Reconciled returns the reconcile requests in call order.
func (p *Plugin) Reconciled() []plugin.ReconcileRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reconciles)
}

// Pruned returns the prune requests in call order.
func (p *Plugin) Pruned() []plugin.PruneRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.prunes)
}

// Caches returns the caches started, in order.
func (p *Plugin) Caches() []*Cache {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.caches)
}

// Closed reports whether Close was called.
func (p *Plugin) Closed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Cache is a numbered group cache that knows whether it was closed.
type Cache struct {
	ID      int
	Closed  bool
	journal *Journal
}

// Close marks the cache closed.
func (c *Cache) Close(context.Context) error {
	c.Closed = true
	c.journal.Add("close cache %d", c.ID)
	return nil
}

// Connector is an in-memory OpenStack: Connect hands out recording Sessions.
type Connector struct {
	// ConnectErrs fail Connect for a group.
	ConnectErrs map[plugin.Credentials]error
	// Respond answers requests; nil answers 200 with an empty body.
	Respond func(creds plugin.Credentials, req plugin.Request) (*plugin.Response, error)
	Journal *Journal

	mu       sync.Mutex
	sessions []*Session
}

var _ plugin.Connector = (*Connector)(nil)

// Connect records the call and returns a new Session for creds.
func (c *Connector) Connect(_ context.Context, creds plugin.Credentials) (plugin.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Journal.Add("connect %s", Group(creds))
	if err := c.ConnectErrs[creds]; err != nil {
		return nil, err
	}
	s := &Session{Credentials: creds, respond: c.Respond}
	c.sessions = append(c.sessions, s)
	return s, nil
}

// Sessions returns the sessions handed out, in order.
func (c *Connector) Sessions() []*Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sessions)
}

// Session records requests of one credential group.
type Session struct {
	Credentials plugin.Credentials
	respond     func(plugin.Credentials, plugin.Request) (*plugin.Response, error)

	mu       sync.Mutex
	requests []plugin.Request
}

// Do records req and answers it.
func (s *Session) Do(_ context.Context, req plugin.Request) (*plugin.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if s.respond != nil {
		return s.respond(s.Credentials, req)
	}
	return &plugin.Response{StatusCode: 200, Header: map[string][]string{}}, nil
}

// Requests returns the recorded requests.
func (s *Session) Requests() []plugin.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}
