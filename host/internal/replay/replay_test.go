package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// crs reads testdata/crs.json, each object changed by edit first.
func crs(t *testing.T, edit func(i int, o map[string]any)) []*resource.Resource {
	t.Helper()
	raw, err := os.ReadFile("testdata/crs.json")
	require.NoError(t, err)
	v, err := bindingctx.DecodeJSON(raw)
	require.NoError(t, err)
	var out []*resource.Resource
	for i, o := range v.([]any) {
		if edit != nil {
			edit(i, o.(map[string]any))
		}
		r, err := resource.Parse(o, "openstack")
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

func planOf(list []*resource.Resource) planner.Plan {
	return planner.Plan{Reconcile: list, Desired: list, PruneCredentials: []plugin.Credentials{list[0].Credentials}}
}

func md(o map[string]any) map[string]any { return o["metadata"].(map[string]any) }

// Every field of a CR the host or the guest reads changes the digest; so does the CRs' order,
// which is the order the guest sees them in. A plan that deletes, cannot read a CR or is a
// progress run is never replayed.
func TestTheCRDigestCoversWhatARunReads(t *testing.T) {
	base, err := CRDigest(planOf(crs(t, nil)))
	require.NoError(t, err)
	again, err := CRDigest(planOf(crs(t, nil)))
	require.NoError(t, err)
	require.Equal(t, base, again, "the same CRs digest alike")
	touched, err := CRDigest(planOf(crs(t, func(_ int, o map[string]any) {
		md(o)["resourceVersion"] = "99"
		md(o)["labels"] = map[string]any{"touched": "yes"}
	})))
	require.NoError(t, err)
	require.Equal(t, base, touched, "a write to what no run reads (a label, resourceVersion) changes nothing")
	changes := map[string]func(i int, o map[string]any){
		"uid":           func(i int, o map[string]any) { md(o)["uid"] = "u-other" },
		"name":          func(i int, o map[string]any) { md(o)["name"] = "other" },
		"namespace":     func(i int, o map[string]any) { md(o)["namespace"] = "other" },
		"generation":    func(i int, o map[string]any) { md(o)["generation"] = json.Number("3") },
		"no generation": func(i int, o map[string]any) { delete(md(o), "generation") },
		"finalizers":    func(i int, o map[string]any) { md(o)["finalizers"] = []any{} },
		"spec":          func(i int, o map[string]any) { o["spec"].(map[string]any)["runbookName"] = "CUSTOM_X" },
		"a spec's step": func(i int, o map[string]any) {
			if s, ok := o["spec"].(map[string]any)["steps"].([]any); ok {
				s[0].(map[string]any)["step"] = "clear"
			} else {
				o["spec"].(map[string]any)["steps"] = []any{}
			}
		},
		"status":    func(i int, o map[string]any) { o["status"].(map[string]any)["id"] = "rb-9" },
		"no status": func(i int, o map[string]any) { delete(o, "status") },
		"credentials": func(i int, o map[string]any) {
			o["spec"].(map[string]any)["cloudCredentialsRef"].(map[string]any)["cloudName"] = "dev"
		},
	}
	for name, edit := range changes {
		for i := range 2 {
			got, err := CRDigest(planOf(crs(t, func(j int, o map[string]any) {
				if j == i {
					edit(j, o)
				}
			})))
			require.NoError(t, err)
			assert.NotEqual(t, base, got, "%s of CR %d", name, i)
		}
	}
	swapped := crs(t, nil)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	got, err := CRDigest(planOf(swapped))
	require.NoError(t, err)
	assert.NotEqual(t, base, got, "the order")

	list := crs(t, nil)
	for name, p := range map[string]planner.Plan{
		"deleted":    {Reconcile: list[:1], Desired: list[:1], Deleted: list[1:]},
		"unreadable": {Reconcile: list, Desired: list, Unreadable: []string{"openstack/x"}},
		"progress":   {Reconcile: list, Desired: list, Progress: true},
	} {
		_, err := CRDigest(p)
		assert.ErrorIs(t, err, ErrNotReplayable, name)
	}
}

// The answer's digest covers its status, its body and every header a plugin may decide on, and
// leaves out only the headers that differ between identical requests.
func TestTheAnswerDigestLeavesOutOnlyVolatileHeaders(t *testing.T) {
	answer := func(edit func(r *plugin.Response)) [32]byte {
		r := &plugin.Response{StatusCode: 200, Body: []byte(`{"runbooks":[]}`), Header: http.Header{
			"Content-Type": {"application/json"}, "X-Openstack-Ironic-Api-Version": {"1.96"},
			"Date": {"Thu, 03 Dec 2026 10:00:00 GMT"}, "X-Openstack-Request-Id": {"req-1"}}}
		if edit != nil {
			edit(r)
		}
		return Answer(r)
	}
	base := answer(nil)
	for name, tc := range map[string]struct {
		edit func(r *plugin.Response)
		same bool
	}{
		"date":              {edit: func(r *plugin.Response) { r.Header.Set("Date", "Fri, 04 Dec 2026 10:00:00 GMT") }, same: true},
		"request id":        {edit: func(r *plugin.Response) { r.Header.Set("X-Openstack-Request-Id", "req-2") }, same: true},
		"compute id":        {edit: func(r *plugin.Response) { r.Header.Set("X-Compute-Request-Id", "req-3") }, same: true},
		"connection":        {edit: func(r *plugin.Response) { r.Header.Set("Connection", "close") }, same: true},
		"status":            {edit: func(r *plugin.Response) { r.StatusCode = 203 }},
		"one body byte":     {edit: func(r *plugin.Response) { r.Body = []byte(`{"runbooks":[ ]}`) }},
		"microversion":      {edit: func(r *plugin.Response) { r.Header.Set("X-Openstack-Ironic-Api-Version", "1.95") }},
		"a header added":    {edit: func(r *plugin.Response) { r.Header.Set("Location", "v1/runbooks/x") }},
		"a header's values": {edit: func(r *plugin.Response) { r.Header.Add("Content-Type", "charset=utf-8") }},
		"body into header": {edit: func(r *plugin.Response) {
			r.Header.Set("Content-Type", "application/json"+`{"runbooks":[]}`)
			r.Body = nil
		}},
	} {
		assert.Equal(t, tc.same, answer(tc.edit) == base, name)
	}
}

type fakeSession struct {
	answers map[string]*plugin.Response
	err     error
	mu      sync.Mutex
	sent    []string
	// gate, when set, is called with each request before it is answered; an error is the answer.
	gate func(ctx context.Context, path string) error
}

func (s *fakeSession) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	s.mu.Lock()
	s.sent = append(s.sent, req.Method+" "+req.Path)
	s.mu.Unlock()
	if s.gate != nil {
		if err := s.gate(ctx, req.Path); err != nil {
			return nil, err
		}
	}
	if s.err != nil {
		return nil, s.err
	}
	if r, ok := s.answers[req.Path]; ok {
		return r, nil
	}
	return &plugin.Response{StatusCode: 404}, nil
}

func (s *fakeSession) DoSource(_ context.Context, req plugin.SourceRequest) (*plugin.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, req.Method+" source "+req.Source+" "+req.Path)
	return &plugin.Response{StatusCode: 200, Body: []byte(req.URL)}, nil
}

type fakeConnector struct {
	sessions map[plugin.Credentials]*fakeSession
	err      error
	connects int
}

func (c *fakeConnector) Connect(_ context.Context, creds plugin.Credentials) (plugin.Session, error) {
	c.connects++
	if c.err != nil {
		return nil, c.err
	}
	return c.sessions[creds], nil
}

var (
	groupA = plugin.Credentials{Namespace: "a", SecretName: "cloud", CloudName: "prod"}
	groupB = plugin.Credentials{Namespace: "b", SecretName: "cloud", CloudName: "prod"}
)

// record runs reads through a Recorder and returns what it recorded.
func record(t *testing.T, c *fakeConnector, run func(ctx context.Context, r *Recorder)) *Recorder {
	t.Helper()
	r := NewRecorder(c)
	run(context.Background(), r)
	return r
}

// A recorded run is sent again request for request, group by group; the first answer that is not
// the recorded one, or a group that does not connect, misses and says why.
func TestAnAttemptMissesOnTheFirstChange(t *testing.T) {
	cloud := func() *fakeConnector {
		return &fakeConnector{sessions: map[plugin.Credentials]*fakeSession{
			groupA: {answers: map[string]*plugin.Response{"v1/runbooks": {StatusCode: 200, Body: []byte("[1]")}}},
			groupB: {answers: map[string]*plugin.Response{"v1/runbooks": {StatusCode: 200, Body: []byte("[2]")}}},
		}}
	}
	c := cloud()
	rec := record(t, c, func(ctx context.Context, r *Recorder) {
		for _, g := range []plugin.Credentials{groupA, groupB} {
			s, err := r.Connect(ctx, g)
			require.NoError(t, err)
			_, err = s.Do(ctx, plugin.Request{Service: "baremetal", Method: "GET", Path: "v1/runbooks", Microversion: "1.96"})
			require.NoError(t, err)
			_, err = s.(plugin.SourceSender).DoSource(ctx, plugin.SourceRequest{Source: "nautobot", URL: "https://n", Method: "GET",
				Path: "api/ipam/prefixes/", Secret: &plugin.SecretKeyRef{Name: "n", Key: "token"}})
			require.NoError(t, err)
		}
	})
	require.Empty(t, rec.Spoiled())
	record := modulecache.ReplayRecord{Groups: rec.Groups()}
	// Through the file format, as a run reads it.
	record, err := modulecache.DecodeReplay(modulecache.EncodeReplay(record))
	require.NoError(t, err)

	// A group's reads go out up to Concurrency at once, so a miss may have its group's other reads
	// in flight beside it: sent is a range, and never reaches the next group.
	tests := []struct {
		name     string
		cloud    func(c *fakeConnector)
		miss     string
		sent     int
		sentUpTo int
	}{
		{name: "every answer the same", cloud: func(*fakeConnector) {}, sent: 4},
		{name: "the second group's answer changed", sent: 3, sentUpTo: 4, miss: "the answer to GET baremetal v1/runbooks changed",
			cloud: func(c *fakeConnector) { c.sessions[groupB].answers["v1/runbooks"].Body = []byte("[3]") }},
		{name: "the first group's resource is gone", sent: 1, sentUpTo: 2, miss: "the answer to GET baremetal v1/runbooks changed",
			cloud: func(c *fakeConnector) { delete(c.sessions[groupA].answers, "v1/runbooks") }},
		{name: "no answer", sent: 1, sentUpTo: 2, miss: "GET baremetal v1/runbooks got no answer: reset",
			cloud: func(c *fakeConnector) { c.sessions[groupA].err = errors.New("reset") }},
		{name: "a group that does not connect", miss: `connecting namespace="a" secret="cloud" cloud="prod" failed: 401`,
			cloud: func(c *fakeConnector) { c.err = errors.New("401") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cloud()
			tt.cloud(c)
			out := Attempt(context.Background(), c, record)
			assert.Equal(t, tt.miss, out.Miss)
			assert.GreaterOrEqual(t, out.Requests, tt.sent)
			assert.LessOrEqual(t, out.Requests, max(tt.sent, tt.sentUpTo))
			if tt.miss == "" {
				assert.ElementsMatch(t, []string{"GET v1/runbooks", "GET source nautobot api/ipam/prefixes/"}, c.sessions[groupA].sent)
				assert.Equal(t, []plugin.Credentials{groupA, groupB}, out.Groups)
			}
		})
	}
}

// A group's recorded reads are sent Concurrency at a time (a replay knows them all beforehand),
// and of several that changed the first in recorded order is the one reported.
func TestAnAttemptSendsAGroupsReadsConcurrently(t *testing.T) {
	paths := make([]string, 3*Concurrency)
	answers := map[string]*plugin.Response{}
	for i := range paths {
		paths[i] = fmt.Sprintf("v1/runbooks/rb-%d", i)
		answers[paths[i]] = &plugin.Response{StatusCode: 200, Body: []byte(paths[i])}
	}
	rec := record(t, &fakeConnector{sessions: map[plugin.Credentials]*fakeSession{groupA: {answers: answers}}},
		func(ctx context.Context, r *Recorder) {
			s, err := r.Connect(ctx, groupA)
			require.NoError(t, err)
			for _, p := range paths {
				_, err = s.Do(ctx, plugin.Request{Service: "baremetal", Method: "GET", Path: p})
				require.NoError(t, err)
			}
		})
	record := modulecache.ReplayRecord{Groups: rec.Groups()}

	// The first Concurrency reads are answered only once all of them are in flight: one at a
	// time, the first would wait for ever (the guard below fails the test instead).
	var arrived sync.WaitGroup
	arrived.Add(Concurrency)
	var n atomic.Int32
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	session := &fakeSession{answers: answers, gate: func(context.Context, string) error {
		if n.Add(1) > Concurrency {
			return nil
		}
		arrived.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			t.Error("the first reads were sent one at a time")
		}
		return nil
	}}
	out := Attempt(context.Background(), &fakeConnector{sessions: map[plugin.Credentials]*fakeSession{groupA: session}}, record)
	assert.Empty(t, out.Miss)
	assert.Equal(t, len(paths), out.Requests)
	assert.ElementsMatch(t, func() []string {
		var want []string
		for _, p := range paths {
			want = append(want, "GET "+p)
		}
		return want
	}(), session.sent)

	changed := map[string]*plugin.Response{}
	for k, v := range answers {
		changed[k] = v
	}
	changed[paths[2]] = &plugin.Response{StatusCode: 200, Body: []byte("edited")}
	delete(changed, paths[5])
	out = Attempt(context.Background(), &fakeConnector{sessions: map[plugin.Credentials]*fakeSession{groupA: {answers: changed}}}, record)
	assert.Equal(t, "the answer to GET baremetal "+paths[2]+" changed", out.Miss)

	// A miss cancels the reads recorded after it, never one before it: an earlier read still in
	// flight runs to its answer, and when that answer misses too, it is the miss reported.
	second := map[string]*plugin.Response{}
	for k, v := range answers {
		second[k] = v
	}
	second[paths[1]] = &plugin.Response{StatusCode: 200, Body: []byte("edited")}
	for _, tc := range []struct {
		name        string
		firstMisses bool
		want        string
	}{
		{name: "the earlier read answers as recorded", want: "the answer to GET baremetal " + paths[1] + " changed"},
		{name: "the earlier read misses too", firstMisses: true, want: "the answer to GET baremetal " + paths[0] + " changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := make(chan struct{}) // a read after the miss was cut short: the miss is known
			var laterCut atomic.Bool
			var later sync.WaitGroup // the reads after the miss are in flight
			later.Add(2)
			laterSent := make(chan struct{})
			go func() { later.Wait(); close(laterSent) }()
			resp := maps.Clone(second)
			if tc.firstMisses {
				resp[paths[0]] = &plugin.Response{StatusCode: 404}
			}
			session := &fakeSession{answers: resp, gate: func(ctx context.Context, path string) error {
				switch path {
				case paths[0]:
					// Answers only once the later miss has cut the reads after it short, and only
					// if that did not cut this one short too.
					select {
					case <-cut:
					case <-time.After(10 * time.Second):
						t.Error("the miss cut no later read short")
					}
					if ctx.Err() != nil {
						t.Error("the read before the miss was cut short")
						return ctx.Err()
					}
				case paths[1]:
					// Misses once the reads after it are in flight.
					select {
					case <-laterSent:
					case <-time.After(10 * time.Second):
						t.Error("the reads after the miss were not sent with it")
					}
				case paths[2], paths[3]:
					// Recorded after the miss: in flight with it, and cut short by it.
					later.Done()
					select {
					case <-ctx.Done():
						if !laterCut.Swap(true) {
							close(cut)
						}
						return ctx.Err()
					case <-time.After(10 * time.Second):
						t.Error("a read recorded after the miss was not cut short")
					}
				}
				return nil
			}}
			out := Attempt(context.Background(), &fakeConnector{sessions: map[plugin.Credentials]*fakeSession{groupA: session}}, record)
			assert.Equal(t, tc.want, out.Miss)
			assert.True(t, laterCut.Load(), "the reads after the miss were cancelled")
			assert.Equal(t, Concurrency, out.Requests, "no read is sent after the miss is known")
		})
	}
}

// A run is recordable only while every request was a read that got an answer.
func TestARunThatMayHaveWrittenIsNotRecorded(t *testing.T) {
	for name, tc := range map[string]struct {
		run  func(ctx context.Context, s plugin.Session) error
		want string
	}{
		"a POST": {want: "POST network v2.0/flavors may have changed something", run: func(ctx context.Context, s plugin.Session) error {
			_, err := s.Do(ctx, plugin.Request{Service: "network", Method: "POST", Path: "v2.0/flavors"})
			return err
		}},
		"a DELETE after reads": {want: "DELETE network v2.0/flavors/x may have changed something", run: func(ctx context.Context, s plugin.Session) error {
			if _, err := s.Do(ctx, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/flavors"}); err != nil {
				return err
			}
			_, err := s.Do(ctx, plugin.Request{Service: "network", Method: "DELETE", Path: "v2.0/flavors/x"})
			return err
		}},
		"a source PATCH": {want: "PATCH source nautobot api/x may have changed something", run: func(ctx context.Context, s plugin.Session) error {
			_, err := s.(plugin.SourceSender).DoSource(ctx, plugin.SourceRequest{Source: "nautobot", Method: "PATCH", Path: "api/x"})
			return err
		}},
	} {
		c := &fakeConnector{sessions: map[plugin.Credentials]*fakeSession{groupA: {}}}
		r := record(t, c, func(ctx context.Context, r *Recorder) {
			s, err := r.Connect(ctx, groupA)
			require.NoError(t, err)
			require.NoError(t, tc.run(ctx, s))
		})
		assert.Equal(t, tc.want, r.Spoiled(), name)
	}
	c := &fakeConnector{sessions: map[plugin.Credentials]*fakeSession{groupA: {err: errors.New("reset")}}}
	r := record(t, c, func(ctx context.Context, r *Recorder) {
		s, _ := r.Connect(ctx, groupA)
		_, err := s.Do(ctx, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/flavors"})
		require.Error(t, err)
	})
	assert.Equal(t, "GET network v2.0/flavors got no answer", r.Spoiled())
}

// A record stands for a run only with the same key and CRs, no older than the maximum age and not
// dated in the future.
func TestARecordStandsOnlyForTheSameRunWithinItsAge(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	key, crs := [32]byte{1}, [32]byte{2}
	rec := modulecache.ReplayRecord{Key: key, CRs: crs, At: now.Add(-time.Hour).Unix()}
	for name, tc := range map[string]struct {
		edit func(r *modulecache.ReplayRecord)
		want string
	}{
		"the same run":    {edit: func(*modulecache.ReplayRecord) {}},
		"another key":     {edit: func(r *modulecache.ReplayRecord) { r.Key[0] = 9 }, want: "the module, a setting or the host changed since the recorded run"},
		"another CR":      {edit: func(r *modulecache.ReplayRecord) { r.CRs[0] = 9 }, want: "a CR changed since the recorded run"},
		"too old":         {edit: func(r *modulecache.ReplayRecord) { r.At = now.Add(-25 * time.Hour).Unix() }, want: "the record is older than 24h0m0s"},
		"from the future": {edit: func(r *modulecache.ReplayRecord) { r.At = now.Add(time.Minute).Unix() }, want: "the record is dated in the future"},
	} {
		r := rec
		tc.edit(&r)
		assert.Equal(t, tc.want, Check(r, key, crs, now, 24*time.Hour), name)
	}
}

// The replay's switches: on by default, off by its own variable or the memo's; the record's
// bound the host's 32 MiB unless the chart gives a smaller one.
func TestTheReplayIsOnUnlessTurnedOff(t *testing.T) {
	for name, tc := range map[string]struct {
		env  map[string]string
		want Config
		err  string
	}{
		"default":          {want: Config{MaxAge: 24 * time.Hour, MaxBytes: 32 << 20}},
		"on":               {env: map[string]string{Env: "on"}, want: Config{MaxAge: 24 * time.Hour, MaxBytes: 32 << 20}},
		"off":              {env: map[string]string{Env: "off"}, want: Config{MaxBytes: 32 << 20}},
		"the memo's age":   {env: map[string]string{"OPENSTACK_SYNC_MEMO_MAX_AGE": "1h"}, want: Config{MaxAge: time.Hour, MaxBytes: 32 << 20}},
		"the memo off":     {env: map[string]string{"OPENSTACK_SYNC_MEMO_MAX_AGE": "0"}, want: Config{MaxBytes: 32 << 20}},
		"a bound":          {env: map[string]string{MaxMiBEnv: " 3 "}, want: Config{MaxAge: 24 * time.Hour, MaxBytes: 3 << 20}},
		"the largest":      {env: map[string]string{MaxMiBEnv: "32"}, want: Config{MaxAge: 24 * time.Hour, MaxBytes: 32 << 20}},
		"a value not read": {env: map[string]string{Env: "yes"}, err: "OPENSTACK_SYNC_REPLAY must be on or off"},
		"a bad memo's age": {env: map[string]string{"OPENSTACK_SYNC_MEMO_MAX_AGE": "-1h"}, err: "OPENSTACK_SYNC_MEMO_MAX_AGE must be a positive duration"},
		"no bound":         {env: map[string]string{MaxMiBEnv: "0"}, err: "OPENSTACK_SYNC_REPLAY_MAX_MIB must be a whole number of MiB from 1 to 32, got \"0\""},
		"past the host's":  {env: map[string]string{MaxMiBEnv: "33"}, err: "OPENSTACK_SYNC_REPLAY_MAX_MIB must be a whole number of MiB from 1 to 32"},
		"not a number":     {env: map[string]string{MaxMiBEnv: "4Mi"}, err: "OPENSTACK_SYNC_REPLAY_MAX_MIB must be a whole number of MiB from 1 to 32, got \"4Mi\""},
	} {
		got, err := Settings(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, name)
			continue
		}
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, got, name)
	}
}

// A run's warnings are recorded with their attributes and repeated by a replay; an error line
// keeps the run from being recorded.
func TestLinesRecordWarningsAndRefuseErrors(t *testing.T) {
	var out bytes.Buffer
	var l Lines
	log := l.Wrap(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelError}))).With("plugin", "p", "kind", "K")
	log.Info("Found CRs to reconcile", "count", 2)
	log.Warn("Converged but needs manual action", "cr", "ns/a", "notes", "traits not applied")
	assert.Empty(t, l.Spoiled())
	require.Len(t, l.Recorded(), 1)
	assert.Empty(t, out.String(), "the run's own level still decides what it writes")

	var again bytes.Buffer
	Repeat(context.Background(), slog.New(slog.NewTextHandler(&again, nil)).With("plugin", "p"), l.Recorded())
	assert.Contains(t, again.String(), `level=WARN msg="Converged but needs manual action" plugin=p kind=K cr=ns/a notes="traits not applied" replayed=true`)

	log.Error("Failed to reconcile", "cr", "ns/b")
	assert.Equal(t, "the run logged an error", l.Spoiled())
}
