package hook_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/modulecache"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/replay"
)

// reading is a deterministic plugin double: each reconcile reads its CR's resource, fails when
// OpenStack answers "fail", and reports any other answer but "ok" as a note.
type reading struct {
	*plugintest.Plugin
}

func (p reading) Reconcile(ctx context.Context, s plugin.Session, c plugin.Cache, req plugin.ReconcileRequest) (plugin.Result, error) {
	resp, err := s.Do(ctx, plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/things/" + req.Object.Name})
	if err != nil {
		return plugin.Result{}, err
	}
	if string(resp.Body) == "fail" {
		return plugin.Result{}, errors.New("OpenStack says fail")
	}
	res, err := p.Plugin.Reconcile(ctx, s, c, req)
	if string(resp.Body) != "ok" {
		res.Notes = append(res.Notes, "OpenStack says "+string(resp.Body))
	}
	return res, err
}

// cloud answers the double's reads from a table a test changes between runs.
type cloud struct {
	mu      sync.Mutex
	bodies  map[string]string
	status  int
	date    string
	failGet bool
}

func (c *cloud) respond(_ plugin.Credentials, req plugin.Request) (*plugin.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failGet {
		return nil, errors.New("connection reset")
	}
	body, ok := c.bodies[req.Path]
	if !ok {
		body = "ok"
	}
	return &plugin.Response{StatusCode: c.status, Header: http.Header{"Date": {c.date}, "Content-Type": {"application/json"},
		"X-Openstack-Request-Id": {"req-" + c.date}}, Body: []byte(body)}, nil
}

// replayRig runs the widget hook with a deterministic plugin whose module the loader identifies
// without loading it, over a cache directory that keeps the replay record between runs.
type replayRig struct {
	h       *harness
	cloud   *cloud
	cache   modulecache.Dir
	module  modulecache.Digest
	meta    plugin.Metadata
	now     time.Time
	loads   int
	connect int
	// misses is what the loaded plugin reports of its convergence memo (plugin.MemoReporter).
	misses int
}

// missing is a plugin whose convergence memo missed.
type missing struct {
	reading
	n int
}

func (p missing) MemoMisses() int { return p.n }

func newReplayRig(t *testing.T) *replayRig {
	r := &replayRig{h: newHarness(t), cloud: &cloud{bodies: map[string]string{}, status: 200, date: "Thu, 03 Dec 2026 10:00:00 GMT"},
		cache: modulecache.Dir(t.TempDir()), module: sha256.Sum256([]byte("widgets module")),
		meta: plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets", Deterministic: true},
		now:  time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)}
	r.h.enable().contexts(syncOf(widget("a"), widget("b")))
	// Statuses off: the first run writes nothing, so it is recorded.
	r.h.env["WIDGET_STATUS_ENABLED"] = "false"
	r.h.plugin.Meta = r.meta
	r.h.conn.Respond = r.cloud.respond
	return r
}

func (r *replayRig) run(t *testing.T) (code int, loaded bool, log string) {
	t.Helper()
	r.h.stderr.Reset()
	before := r.loads
	code = r.h.mainWith(func(d *hook.Deps) {
		load := d.LoadPlugin
		d.LoadPlugin = func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Plugin, error) {
			r.loads++
			if _, err := load(ctx, path, o); err != nil {
				return nil, err
			}
			if r.misses > 0 {
				return missing{reading{r.h.plugin}, r.misses}, nil
			}
			return reading{r.h.plugin}, nil
		}
		d.Identify = func(context.Context, string, hook.LoadOptions) (hook.Identity, error) {
			return hook.Identity{Meta: r.meta, Module: r.module, Cache: r.cache}, nil
		}
		newConn := d.NewConnector
		d.NewConnector = func(s hook.SecretReader, o hook.ConnectorOptions, l *slog.Logger) plugin.Connector {
			return counting{Connector: newConn(s, o, l), n: &r.connect}
		}
		d.Environ = func() []string {
			out := []string{}
			for k, v := range r.h.env {
				out = append(out, k+"="+v)
			}
			return out
		}
		d.Now = func() time.Time { return r.now }
	}, "--plugin", "widgets.wasm")
	return code, r.loads > before, r.h.stderr.String()
}

type counting struct {
	plugin.Connector
	n *int
}

func (c counting) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	*c.n++
	return c.Connector.Connect(ctx, creds)
}

// A converged run of a deterministic plugin is recorded, and the next run whose CRs, settings,
// module and every answer are the same is replayed: the module is not loaded, the plugin not
// called, nothing written, and the log says so. Anything that differs, however small, runs the
// plugin, which records the run again (docs/abi.md, "The run replay").
func TestAConvergedRunIsReplayedUntilAnythingChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, r *replayRig)
		// replayed: the third run is still a replay.
		replayed bool
		// why is what the third run's log says.
		why string
		// reconnects: the full run connects again (the attempt could not keep its session).
		reconnects bool
		// fails: the full run fails before the plugin reconciles anything.
		fails bool
	}{
		{name: "nothing changed", change: func(*testing.T, *replayRig) {}, replayed: true},
		{name: "only volatile headers changed", replayed: true, change: func(_ *testing.T, r *replayRig) {
			r.cloud.date = "Thu, 03 Dec 2026 10:05:00 GMT"
		}},
		{name: "the binding context written otherwise, the same CRs", replayed: true, change: func(t *testing.T, r *replayRig) {
			data, err := json.MarshalIndent(syncOf(widget("a"), widget("b")), "", "  ")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(r.h.env["BINDING_CONTEXT_PATH"], data, 0o600))
		}},
		{name: "one byte of one answer changed", why: "the answer to GET network v2.0/things/b changed", change: func(_ *testing.T, r *replayRig) {
			r.cloud.bodies["v2.0/things/b"] = "ok!"
		}},
		{name: "an answer's status changed", why: "the answer to GET network v2.0/things/a changed", change: func(_ *testing.T, r *replayRig) {
			r.cloud.status = 404
		}},
		{name: "a request got no answer", why: "got no answer", fails: true, change: func(_ *testing.T, r *replayRig) {
			r.cloud.failGet = true
		}},
		{name: "a CR's spec changed", change: func(_ *testing.T, r *replayRig) {
			b := widget("b")
			b["spec"].(map[string]any)["size"] = 2
			r.h.contexts(syncOf(widget("a"), b))
		}},
		{name: "a CR was added", change: func(_ *testing.T, r *replayRig) {
			r.h.contexts(syncOf(widget("a"), widget("b"), widget("c")))
		}},
		{name: "a CR's finalizers changed", change: func(_ *testing.T, r *replayRig) {
			b := widget("b")
			b["metadata"].(map[string]any)["finalizers"] = []any{"example.com/other"}
			r.h.contexts(syncOf(widget("a"), b))
		}},
		{name: "a plugin setting changed", change: func(_ *testing.T, r *replayRig) { r.h.env["WIDGET_FLAVOR"] = "x" }},
		{name: "a host setting changed", change: func(_ *testing.T, r *replayRig) { r.h.env["OPENSTACK_SYNC_WASM_POOL_SIZE"] = "2" }},
		{name: "the module changed", change: func(_ *testing.T, r *replayRig) { r.module = sha256.Sum256([]byte("widgets 2")) }},
		{name: "the record is older than the memo's maximum age", change: func(_ *testing.T, r *replayRig) {
			r.now = r.now.Add(24*time.Hour + time.Second)
		}},
		{name: "a shorter maximum age", change: func(_ *testing.T, r *replayRig) {
			r.h.env["OPENSTACK_SYNC_MEMO_MAX_AGE"] = "1m"
			r.now = r.now.Add(2 * time.Minute)
		}},
		{name: "the record is from the future", change: func(_ *testing.T, r *replayRig) { r.now = r.now.Add(-time.Hour) }},
		{name: "the record is damaged", change: func(t *testing.T, r *replayRig) {
			path := r.cache.Path(modulecache.Replay, "WIDGET")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b[len(b)/2] ^= 1
			require.NoError(t, os.WriteFile(path, b, 0o600))
		}},
		{name: "the replay is off", change: func(_ *testing.T, r *replayRig) { r.h.env["OPENSTACK_SYNC_REPLAY"] = "off" }},
		{name: "the memo is off", change: func(_ *testing.T, r *replayRig) { r.h.env["OPENSTACK_SYNC_MEMO_MAX_AGE"] = "0" }},
		{name: "the credentials are refused", reconnects: true, fails: true, why: "connecting", change: func(_ *testing.T, r *replayRig) {
			r.h.conn.ConnectErrs = map[plugin.Credentials]error{{Namespace: "ns", SecretName: "s", CloudName: "c"}: errors.New("401")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplayRig(t)
			code, loaded, _ := r.run(t)
			require.Equal(t, 0, code)
			require.True(t, loaded, "the first run runs the plugin")
			require.FileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"), "the converged run is recorded")
			reconciles := len(r.h.plugin.Reconciled())
			kubeRequests := len(r.h.srv.Requests())

			code, loaded, log := r.run(t)
			require.Equal(t, 0, code)
			assert.False(t, loaded, "a replay loads no module")
			assert.Len(t, r.h.plugin.Reconciled(), reconciles, "a replay calls no plugin")
			assert.Contains(t, log, `msg="replayed a converged run: every answer unchanged" plugin=widgets kind=Widget crs=2 requests=2`)
			for _, req := range r.h.srv.Requests()[kubeRequests:] {
				assert.Equal(t, http.MethodGet, req.Method, "a replay writes nothing: %s %s", req.Method, req.Path)
			}

			tt.change(t, r)
			connects := r.connect
			code, loaded, log = r.run(t)
			if tt.replayed {
				assert.Equal(t, 0, code)
				assert.False(t, loaded)
				assert.Contains(t, log, "replayed a converged run")
				return
			}
			assert.True(t, loaded, "anything changed runs the plugin")
			assert.NotContains(t, log, "replayed a converged run")
			if !tt.fails {
				assert.Equal(t, 0, code)
				assert.Greater(t, len(r.h.plugin.Reconciled()), reconciles, "the plugin reconciled again")
			}
			if tt.why != "" {
				assert.Contains(t, log, `msg="not replaying the last converged run; running the plugin"`)
				assert.Contains(t, log, tt.why)
			}
			if !tt.reconnects && tt.why != "" {
				assert.Equal(t, connects+1, r.connect, "the full run reuses the session the attempt opened")
			}
		})
	}
}

// Only a run that wrote nothing, failed nothing, and ran a plugin that declares itself
// deterministic is recorded; each other run removes the record, which no longer describes the last
// run.
func TestOnlyAConvergedRunOfADeterministicPluginIsRecorded(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *replayRig)
	}{
		{name: "a plugin that does not declare it is deterministic", setup: func(r *replayRig) {
			r.meta.Deterministic = false
			r.h.plugin.Meta = r.meta
		}},
		{name: "a run that wrote a status", setup: func(r *replayRig) { r.h.env["WIDGET_STATUS_ENABLED"] = "true" }},
		{name: "a run that failed a CR", setup: func(r *replayRig) { r.cloud.bodies["v2.0/things/b"] = "fail" }},
		{name: "a run whose request got no answer", setup: func(r *replayRig) { r.cloud.failGet = true }},
		{name: "a run with a CR being deleted", setup: func(r *replayRig) {
			b := widget("b")
			b["metadata"].(map[string]any)["deletionTimestamp"] = "2026-12-03T09:00:00Z"
			r.h.contexts(syncOf(widget("a"), b))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReplayRig(t)
			// A record of an earlier converged run is there to be removed.
			_, _, _ = r.run(t)
			require.FileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"))
			r.now = r.now.Add(time.Minute)
			tt.setup(r)
			_, loaded, _ := r.run(t)
			require.True(t, loaded)
			assert.NoFileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"))
			_, loaded, _ = r.run(t)
			assert.True(t, loaded, "the next run runs the plugin again")
		})
	}
}

// A run whose convergence memo missed is not recorded: its next run, answered from the records it
// made, reads less, and a replay of it would send reads (a GET per CR) that no full run sends any
// more. The run after it, every CR answered by the memo, is recorded and then replayed.
func TestARunWhoseMemoMissedIsNotRecorded(t *testing.T) {
	r := newReplayRig(t)
	r.h.env["LOG_LEVEL"] = "debug"
	r.misses = 3
	_, loaded, log := r.run(t)
	require.True(t, loaded)
	assert.NoFileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"))
	assert.Contains(t, lineOf(log, "not recording the run for a replay"), "convergence memo had no record for 3 reconciles")
	r.misses = 0
	_, loaded, _ = r.run(t)
	require.True(t, loaded, "nothing recorded: the plugin runs")
	require.FileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"))
	_, loaded, _ = r.run(t)
	assert.False(t, loaded, "the run the memo answered in full is replayed")
}

// A converged run whose record would pass the bound the chart gives (OPENSTACK_SYNC_REPLAY_MAX_MIB,
// the room it keeps in the cache volume) is not recorded, the record of an earlier run goes, and
// the operator is told; within the host's own bound the same run is recorded and then replayed.
func TestARunPastTheReplaysBoundIsNotRecorded(t *testing.T) {
	r := newReplayRig(t)
	_, _, _ = r.run(t)
	require.FileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"))
	// 600 CRs, each with a note as long as a log line keeps (2 KB): the record repeats them, past 1 MiB.
	r.now = r.now.Add(time.Minute)
	var crs []any
	for i := range 600 {
		name := fmt.Sprintf("w%03d", i)
		crs = append(crs, widget(name))
		r.cloud.bodies["v2.0/things/"+name] = strings.Repeat("x", 8<<10)
	}
	r.h.contexts(syncOf(crs...))
	r.h.env[replay.MaxMiBEnv] = "1"
	code, loaded, log := r.run(t)
	require.Equal(t, 0, code)
	require.True(t, loaded)
	assert.NoFileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"))
	line := lineOf(log, hook.MsgReplayTooLarge)
	require.NotEmpty(t, line, log)
	assert.Contains(t, line, "level=WARN")
	assert.Contains(t, line, "plugin=widgets")
	assert.Contains(t, line, "boundMiB=1.0")
	_, loaded, _ = r.run(t)
	assert.True(t, loaded, "nothing recorded: the plugin runs")

	delete(r.h.env, replay.MaxMiBEnv)
	_, loaded, log = r.run(t)
	require.True(t, loaded)
	assert.NotContains(t, log, hook.MsgReplayTooLarge)
	require.FileExists(t, r.cache.Path(modulecache.Replay, "WIDGET"))
	_, loaded, _ = r.run(t)
	assert.False(t, loaded, "recorded within the host's bound: replayed")
}

// The warnings a converged run logs (a CR's notes) are repeated by its replay: an operator sees
// the same drift reported every run, replayed or not.
func TestAReplayRepeatsTheRunsNotes(t *testing.T) {
	r := newReplayRig(t)
	r.cloud.bodies["v2.0/things/b"] = "drifted"
	_, _, first := r.run(t)
	require.Contains(t, first, `msg="Converged but needs manual action"`)
	_, loaded, log := r.run(t)
	require.False(t, loaded)
	line := lineOf(log, "Converged but needs manual action")
	assert.Contains(t, line, `cr=ns/b`)
	assert.Contains(t, line, `notes="OpenStack says drifted"`)
	assert.Contains(t, line, "replayed=true")
}

func lineOf(log, msg string) string {
	for l := range strings.Lines(log) {
		if strings.Contains(l, msg) {
			return l
		}
	}
	return ""
}
