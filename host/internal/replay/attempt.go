package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// Check says why rec cannot stand for a run with the key and CR digest given at now; "" when
// it can, once every answer is the same (Attempt).
func Check(rec modulecache.ReplayRecord, key, crs [32]byte, now time.Time, maxAge time.Duration) string {
	switch {
	case rec.Key != key:
		return "the module, a setting or the host changed since the recorded run"
	case rec.CRs != crs:
		return "a CR changed since the recorded run"
	case time.Unix(rec.At, 0).After(now):
		return "the record is dated in the future"
	case !Fresh(rec.At, now, maxAge):
		return fmt.Sprintf("the record is older than %s", maxAge)
	}
	return ""
}

// Outcome is what an Attempt found.
type Outcome struct {
	// Miss says why the run is not the recorded one; "" for a replay.
	Miss string
	// Requests is how many requests were sent; Groups names the groups connected.
	Requests int
	Groups   []plugin.Credentials
	// Sessions are the sessions the attempt opened, which the full run reuses after a miss.
	Sessions map[plugin.Credentials]plugin.Session
}

// Attempt re-sends rec's requests through sessions c opens, group by group in the recorded
// order, and stops at the first answer that is not the recorded one (or no answer, or a session
// that does not connect). The requests are reads: the recorded run sent no other.
func Attempt(ctx context.Context, c plugin.Connector, rec modulecache.ReplayRecord) Outcome {
	out := Outcome{Sessions: map[plugin.Credentials]plugin.Session{}}
	for _, g := range rec.Groups {
		creds := plugin.Credentials{Namespace: g.Namespace, SecretName: g.SecretName, CloudName: g.CloudName}
		s, ok := out.Sessions[creds]
		if !ok {
			var err error
			if s, err = c.Connect(ctx, creds); err != nil {
				out.Miss = fmt.Sprintf("connecting %s failed: %v", creds, err)
				return out
			}
			out.Sessions[creds] = s
			out.Groups = append(out.Groups, creds)
		}
		for _, q := range g.Requests {
			var w wireRequest
			if err := json.Unmarshal(q.Request, &w); err != nil {
				out.Miss = "a recorded request does not decode: " + err.Error()
				return out
			}
			out.Requests++
			resp, err := send(ctx, s, w)
			switch {
			case err != nil:
				out.Miss = fmt.Sprintf("%s got no answer: %v", w, err)
				return out
			case Answer(resp) != q.Answer:
				out.Miss = fmt.Sprintf("the answer to %s changed", w)
				return out
			}
		}
	}
	return out
}

func send(ctx context.Context, s plugin.Session, w wireRequest) (*plugin.Response, error) {
	if w.Method != "GET" && w.Method != "HEAD" {
		return nil, fmt.Errorf("a recorded %s is never sent again", w.Method)
	}
	var resp *plugin.Response
	var err error
	if w.Source == "" {
		resp, err = s.Do(ctx, plugin.Request{Service: w.Service, Method: w.Method, Path: w.Path, Query: w.Query,
			Header: w.Header, Microversion: w.Microversion, Body: w.Body})
	} else if src, ok := s.(plugin.SourceSender); ok {
		resp, err = src.DoSource(ctx, w.sourceRequest())
	} else {
		err = fmt.Errorf("the session reaches no source")
	}
	if err == nil && resp == nil {
		err = fmt.Errorf("no response")
	}
	return resp, err
}

// Reuse is a Connector that answers the first Connect of each group a miss connected with that
// group's session: the full run after a miss connects nothing twice.
type Reuse struct {
	plugin.Connector
	mu       sync.Mutex
	sessions map[plugin.Credentials]plugin.Session
}

// NewReuse hands out sessions before connecting through c.
func NewReuse(c plugin.Connector, sessions map[plugin.Credentials]plugin.Session) *Reuse {
	return &Reuse{Connector: c, sessions: sessions}
}

func (r *Reuse) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	r.mu.Lock()
	s, ok := r.sessions[creds]
	delete(r.sessions, creds)
	r.mu.Unlock()
	if ok {
		return s, nil
	}
	return r.Connector.Connect(ctx, creds)
}
