package hook_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// authenticating hands out sessions that record Authenticate in the journal, as the OpenStack
// sessions get their token ahead of the first request.
type authenticating struct {
	plugin.Connector
	mu      sync.Mutex
	entries *[]string
}

type authSession struct {
	plugin.Session
	c *authenticating
}

func (s authSession) Authenticate(context.Context) error {
	s.c.note("authenticate")
	return nil
}

func (c *authenticating) note(e string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.entries = append(*c.entries, e)
}

func (c *authenticating) seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(*c.entries)
}

func (c *authenticating) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	c.note("connect " + creds.SecretName)
	s, err := c.Connector.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	return authSession{Session: s, c: c}, nil
}

// While the plugin loads, a run that knows the plugin's metadata early connects and authenticates
// its first credential group, and the runner then uses that session: one connection, as before.
// Nothing that the load could still refuse is written, and a run that elects a leader, a
// disabled hook and a loader that reports other metadata do not use what was prepared.
func TestTheFirstGroupConnectsWhileThePluginLoads(t *testing.T) {
	widgets := plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets"}
	tests := []struct {
		name  string
		setup func(h *harness)
		// known is what the loader tells early; nil tells nothing.
		known   *plugin.Metadata
		loadErr error
		// ahead: the group is connected and authenticated before the load returns.
		ahead   bool
		code    int
		connect int
		stderr  string
	}{
		{name: "connected and authenticated ahead, used by the runner", known: &widgets, ahead: true, connect: 1,
			stderr: `msg="Finished reconciling" plugin=widgets kind=Widget`},
		{name: "a loader that tells nothing connects after the load", connect: 1},
		{name: "a refused module leaves nothing written", known: &widgets, loadErr: errors.New("digest mismatch"),
			ahead: true, code: 1, connect: 1, stderr: "loading plugin widgets.wasm: digest mismatch"},
		{name: "a replica that may not be the leader connects only after the load", known: &widgets, connect: 0,
			// This harness has no lease store: the run stops at the lease, after the load.
			code: 1, stderr: "has no lease store",
			setup: func(h *harness) {
				h.env["OPENSTACK_SYNC_LEASE_NAME"] = "oso"
				h.env["OPENSTACK_SYNC_LEASE_NAMESPACE"] = "ops"
				h.env["OPENSTACK_SYNC_LEASE_HOLDER"] = "pod-a"
			}},
		{name: "a disabled hook connects to nothing", known: &widgets, connect: 0,
			setup: func(h *harness) { delete(h.env, "WIDGET_ENABLED") }, stderr: `msg="The hook is disabled"`},
		{name: "metadata other than the plugin's is dropped", connect: 2, ahead: true,
			known:  &plugin.Metadata{Name: "gadgets", Noun: "gadget", EnvPrefix: "WIDGET", BindingName: "widgets"},
			stderr: `msg="Finished reconciling" plugin=widgets kind=Widget`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.enable().contexts(syncOf(widget("a")))
			h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a"), widget("a"))
			if tt.setup != nil {
				tt.setup(h)
			}
			var entries []string
			conn := &authenticating{Connector: h.conn, entries: &entries}
			var atLoad []string
			code := h.mainWith(func(d *hook.Deps) {
				d.NewConnector = func(hook.SecretReader, hook.ConnectorOptions, *slog.Logger) plugin.Connector { return conn }
				load := d.LoadPlugin
				d.LoadPlugin = func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Plugin, error) {
					if tt.known != nil && o.KnownMetadata != nil {
						o.KnownMetadata(*tt.known)
					}
					if tt.ahead {
						// The compile's stand-in: the load returns once the work ahead is done.
						require.Eventually(t, func() bool { return slices.Contains(conn.seen(), "authenticate") },
							5*time.Second, time.Millisecond, "the group connects while the plugin loads")
					}
					atLoad = conn.seen()
					if tt.loadErr != nil {
						return nil, tt.loadErr
					}
					return load(ctx, path, o)
				}
			}, "--plugin", "widgets.wasm")
			assert.Equal(t, tt.code, code, h.stderr.String())
			assert.Contains(t, h.stderr.String(), tt.stderr)
			if !tt.ahead {
				assert.Empty(t, atLoad, "nothing connected before the load returned")
			}
			connects := 0
			for _, e := range conn.seen() {
				if strings.HasPrefix(e, "connect ") {
					connects++
				}
			}
			assert.Equal(t, tt.connect, connects, "connections: %v\n%s", conn.seen(), h.stderr.String())
			if tt.loadErr != nil {
				assert.Empty(t, h.plugin.Journal.Entries()[1:], "nothing reconciled")
				assert.NotContains(t, h.stderr.String(), "Found CRs to reconcile")
			}
		})
	}
}

// The plan and the connection's set-up are built beside the load, not before it: the module's
// compile starts at once (with 1,000 CRs the plan took as long as the compile). Here the
// connector's set-up, which follows the plan, waits for the load to return; a run that built
// the plan before loading would wait for ever (the test gives it ten seconds).
func TestThePlanIsBuiltWhileThePluginLoads(t *testing.T) {
	widgets := plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets"}
	h := newHarness(t)
	h.enable().contexts(syncOf(widget("a")))
	h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a"), widget("a"))
	loaded := make(chan struct{})
	var mu sync.Mutex
	var waited []bool
	code := h.mainWith(func(d *hook.Deps) {
		d.NewConnector = func(hook.SecretReader, hook.ConnectorOptions, *slog.Logger) plugin.Connector {
			timer := time.NewTimer(10 * time.Second)
			defer timer.Stop()
			select {
			case <-loaded:
				mu.Lock()
				waited = append(waited, false)
				mu.Unlock()
			case <-timer.C:
				mu.Lock()
				waited = append(waited, true)
				mu.Unlock()
			}
			return h.conn
		}
		load := d.LoadPlugin
		d.LoadPlugin = func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Plugin, error) {
			require.NotNil(t, o.KnownMetadata)
			o.KnownMetadata(widgets)
			defer close(loaded)
			return load(ctx, path, o)
		}
	}, "--plugin", "widgets.wasm")
	assert.Equal(t, 0, code, h.stderr.String())
	assert.Contains(t, h.stderr.String(), `msg="Finished reconciling" plugin=widgets kind=Widget`)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []bool{false}, waited, "one connector, set up ahead, once the load had returned")
}

// A panic while the run is prepared beside the load is the run's logged failure, as a panic
// anywhere else in the run is (docs/contract.md §1.6), not a crash of the process.
func TestAPanicAheadIsTheRunsFailure(t *testing.T) {
	widgets := plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets"}
	h := newHarness(t)
	h.enable().contexts(syncOf(widget("a")))
	code := h.mainWith(func(d *hook.Deps) {
		d.NewConnector = func(hook.SecretReader, hook.ConnectorOptions, *slog.Logger) plugin.Connector {
			panic("connector set-up failed")
		}
		load := d.LoadPlugin
		d.LoadPlugin = func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Plugin, error) {
			o.KnownMetadata(widgets)
			return load(ctx, path, o)
		}
	}, "--plugin", "widgets.wasm")
	assert.Equal(t, hook.ExitFail, code)
	assert.Contains(t, h.stderr.String(), "hook failed: ")
	assert.Contains(t, h.stderr.String(), "preparing the run beside the load: string: connector set-up failed")
	assert.NotContains(t, h.stderr.String(), "Found CRs to reconcile", "nothing reconciled")
}
