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

// Concurrency is how many of a group's recorded reads an Attempt has in flight at once. The
// recorded run read them one at a time from the guest, but a replay knows them all beforehand:
// 20,000 runbooks are ~400 list pages, ~8 s one after another at 20 ms a page and ~2 s four at a
// time (docs/benchmarks.md). Four stays well inside a session's request rate limit and a cloud's
// patience; the session's limiter still applies to each.
const Concurrency = 4

// Attempt re-sends rec's requests through sessions c opens, group by group in the recorded
// order, up to Concurrency of a group's at once, and stops at the first answer that is not the
// recorded one (or no answer, or a session that does not connect). The requests are reads: the
// recorded run sent no other.
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
		sent, miss := resend(ctx, s, g.Requests)
		out.Requests += sent
		if miss != "" {
			out.Miss = miss
			return out
		}
	}
	return out
}

// resend sends one group's recorded requests, up to Concurrency at once, and says why the first
// of them in recorded order that missed did. Each read has its own context: a miss cancels only
// the reads recorded after it, whose answers no longer matter, and sends no more; the reads
// before it run to their answer, because one of them may miss too and is then the one to report
// (a read cut short is not a miss of its own).
func resend(ctx context.Context, s plugin.Session, reqs []modulecache.ReplayRequest) (sent int, miss string) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   = len(reqs) // the earliest read that missed, in recorded order
		why     string
		cancels = make([]context.CancelFunc, len(reqs))
	)
	slots := make(chan struct{}, Concurrency)
	for i, q := range reqs {
		slots <- struct{}{}
		mu.Lock()
		if i > first {
			mu.Unlock()
			<-slots
			break
		}
		rctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		mu.Unlock()
		sent++
		wg.Add(1)
		go func() {
			defer func() { cancel(); <-slots; wg.Done() }()
			w := check(rctx, s, q)
			if w == "" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if i < first {
				first, why = i, w
				for _, c := range cancels[i+1:] {
					if c != nil {
						c()
					}
				}
			}
		}()
	}
	wg.Wait()
	return sent, why
}

// check sends one recorded request and says why its answer is not the recorded one; "" when it is.
func check(ctx context.Context, s plugin.Session, q modulecache.ReplayRequest) string {
	var w wireRequest
	if err := json.Unmarshal(q.Request, &w); err != nil {
		return "a recorded request does not decode: " + err.Error()
	}
	resp, err := send(ctx, s, w)
	switch {
	case err != nil:
		return fmt.Sprintf("%s got no answer: %v", w, err)
	case Answer(resp) != q.Answer:
		return fmt.Sprintf("the answer to %s changed", w)
	}
	return ""
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
