package runcmd

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// call is one OpenStack request a plugin made.
type call struct {
	Cloud, Service, Method, Path string
	Status                       int    // 0 when no response came back
	Error                        string // the session's error, or why a write was not sent
	Sent                         bool
}

// journal records every request of a run, in order.
type journal struct {
	mu    sync.Mutex
	calls []call
}

func (j *journal) add(c call) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, c)
}

// recordingConnector hands out sessions that record every request and, in a dry run, send only
// reads.
type recordingConnector struct {
	plugin.Connector
	j      *journal
	dryRun bool
}

func (c recordingConnector) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	s, err := c.Connector.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	return session{inner: s, j: c.j, dryRun: c.dryRun, cloud: creds.CloudName}, nil
}

type session struct {
	inner  plugin.Session
	j      *journal
	dryRun bool
	cloud  string
}

// errDryRun answers a write in a dry run: the plugin sees a failed request (the CR stops there,
// as on any failed write) and the journal keeps the write as planned. It is not permanent, so
// the other CRs of the credential group still run.
var errDryRun = errors.New("dry run: the write was recorded, not sent")

func (s session) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	c := call{Cloud: s.cloud, Service: req.Service, Method: req.Method, Path: req.Path}
	if s.dryRun && req.Method != http.MethodGet && req.Method != http.MethodHead {
		c.Error = errDryRun.Error()
		s.j.add(c)
		return nil, errDryRun
	}
	resp, err := s.inner.Do(ctx, req)
	c.Sent = true
	if err != nil {
		c.Error = err.Error()
	} else {
		c.Status = resp.StatusCode
	}
	s.j.add(c)
	return resp, err
}
