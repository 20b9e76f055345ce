package runcmd

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// Call is one OpenStack request a plugin made.
type Call struct {
	Cloud, Service, Method, Path string
	// Query is the request's query, encoded ("" when none).
	Query string
	// Microversion is the one the request asked for ("" when none).
	Microversion string
	Status       int    // 0 when no response came back
	Error        string // the session's error
	Sent         bool
	// Body is a write's request body; Planned says what a dry run answered in its place.
	Body, Planned string
	// Created is the id (or uuid) of what a sent POST made, when its answer names one.
	Created string
}

// Target is the path with its query, as the request was sent.
func (c Call) Target() string {
	if c.Query == "" {
		return c.Path
	}
	return c.Path + "?" + c.Query
}

// journal records every request of a run, in order.
type journal struct {
	mu    sync.Mutex
	calls []Call
}

func (j *journal) add(c Call) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, c)
}

func (j *journal) snapshot() []Call {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.calls)
}

// recordingConnector hands out sessions that record every request and, in a dry run, send only
// reads.
type recordingConnector struct {
	plugin.Connector
	j      *journal
	dryRun bool
	// ids numbers the made-up ids of a dry run across every session of the run.
	ids *atomic.Int64
	// world is what the dry run's planned writes changed, for the reads that follow them.
	world *plannedWorld
}

func (c recordingConnector) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	s, err := c.Connector.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	return session{inner: s, j: c.j, dryRun: c.dryRun, cloud: creds.CloudName, plan: planner{inner: s, next: c.ids, world: c.world}}, nil
}

type session struct {
	inner  plugin.Session
	j      *journal
	dryRun bool
	cloud  string
	plan   planner
}

func (s session) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	c := Call{Cloud: s.cloud, Service: req.Service, Method: req.Method, Path: req.Path, Microversion: req.Microversion,
		Query: req.Query.Encode()}
	if isWrite(req.Method) {
		c.Body = string(req.Body)
	}
	if s.dryRun && isWrite(req.Method) {
		resp, planned := s.plan.answer(ctx, req)
		s.plan.world.planned(req, resp)
		c.Status, c.Planned = resp.StatusCode, planned
		s.j.add(c)
		return resp, nil
	}
	if s.dryRun {
		if resp, ok := s.plan.world.read(req); ok {
			c.Status, c.Planned = resp.StatusCode, "answered from the plan"
			s.j.add(c)
			return resp, nil
		}
	}
	resp, err := s.inner.Do(ctx, req)
	if s.dryRun && err == nil && req.Method == http.MethodGet {
		resp = s.plan.world.list(req, resp)
	}
	c.Sent = true
	if err != nil {
		c.Error = err.Error()
	} else {
		c.Status = resp.StatusCode
		if req.Method == http.MethodPost && resp.StatusCode/100 == 2 {
			c.Created = createdID(resp.Body)
		}
	}
	s.j.add(c)
	return resp, err
}

// createdID reads the id of a created resource from its answer, Neutron's ({"flavor": {"id"}})
// or Ironic's ({"uuid"}).
func createdID(body []byte) string {
	obj, _ := decodeObject(body)
	for _, k := range []string{"id", "uuid"} {
		if id, ok := obj[k].(string); ok {
			return id
		}
	}
	return ""
}

func isWrite(method string) bool { return method != http.MethodGet && method != http.MethodHead }
