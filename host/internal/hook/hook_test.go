package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin/plugintest"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

type harness struct {
	t        *testing.T
	env      map[string]string
	plugin   *plugintest.Plugin
	conn     *plugintest.Connector
	srv      *kubetest.Server
	loadErr  error
	loaded   []hook.LoadOptions
	connOpts []hook.ConnectorOptions
	kubes    int
	// kubeLimits are the request limits each client was built with.
	kubeLimits []hookenv.KubeLimit
	stdout     bytes.Buffer
	stderr     bytes.Buffer
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, env: map[string]string{}, srv: kubetest.NewServer(t)}
	h.plugin = &plugintest.Plugin{Journal: &plugintest.Journal{}}
	h.conn = &plugintest.Connector{Journal: h.plugin.Journal}
	return h
}

// enable sets the chart's variables for the widget plugin.
func (h *harness) enable() *harness {
	for k, v := range map[string]string{
		"WIDGET_ENABLED": "true", "WIDGET_CRD_API_VERSION": "example.openstack-sync.io/v1alpha1",
		"WIDGET_CRD_KIND": "Widget", "WIDGET_CRD_RESOURCE": "widgets.example.openstack-sync.io",
		"WIDGET_STATUS_ENABLED": "true", "POD_NAMESPACE": "ns",
	} {
		h.env[k] = v
	}
	return h
}

func (h *harness) contexts(v any) *harness {
	path := filepath.Join(h.t.TempDir(), "ctx.json")
	data, err := json.Marshal(v)
	require.NoError(h.t, err)
	require.NoError(h.t, os.WriteFile(path, data, 0o600))
	h.env["BINDING_CONTEXT_PATH"] = path
	return h
}

func (h *harness) main(args ...string) int { return h.mainWith(nil, args...) }

// mainWith runs the hook with the harness's doubles, changed by edit.
func (h *harness) mainWith(edit func(*hook.Deps), args ...string) int {
	deps := hook.Deps{
		LoadPlugin: func(_ context.Context, path string, opts hook.LoadOptions) (plugin.Plugin, error) {
			h.loaded = append(h.loaded, opts)
			if h.loadErr != nil {
				return nil, h.loadErr
			}
			return h.plugin, nil
		},
		NewKube: func(l hookenv.KubeLimit) (hook.Kube, error) {
			h.kubes++
			h.kubeLimits = append(h.kubeLimits, l)
			return kube.NewForConfig(h.srv.Config(), kube.Limit{})
		},
		NewConnector: func(_ hook.SecretReader, o hook.ConnectorOptions, _ *slog.Logger) plugin.Connector {
			h.connOpts = append(h.connOpts, o)
			return h.conn
		},
		Sleep: func(context.Context, time.Duration) error { return nil },
	}
	if edit != nil {
		edit(&deps)
	}
	lookup := func(k string) (string, bool) { v, ok := h.env[k]; return v, ok }
	return hook.Main(context.Background(), deps, args, lookup, &h.stdout, &h.stderr)
}

func golden(t *testing.T, name string) string {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return string(data)
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		probe  bool
		code   int
		golden string
		stderr string
	}{
		{name: "disabled", golden: "config-disabled.json"},
		{name: "disabled ignores broken values", env: map[string]string{"WIDGET_READY_DELAY": "x", "WIDGET_SYNC_CRONTAB": "* * * * *"},
			golden: "config-disabled.json"},
		{name: "enabled", env: map[string]string{"WIDGET_ENABLED": "true", "WIDGET_CRD_API_VERSION": "example.openstack-sync.io/v1alpha1",
			"WIDGET_CRD_KIND": "Widget", "WIDGET_CRD_RESOURCE": "widgets.example.openstack-sync.io", "POD_NAMESPACE": "openstack",
			"WIDGET_SYNC_CRONTAB": "0 * * * *"}, golden: "config-enabled.json"},
		{name: "overrides", args: []string{"--env-prefix", "GADGET", "--binding", "gadgets"},
			env: map[string]string{"WIDGET_ENABLED": "true", "GADGET_ENABLED": "true", "GADGET_CRD_API_VERSION": "example.openstack-sync.io/v1alpha1",
				"GADGET_CRD_KIND": "Gadget", "GADGET_CRD_RESOURCE": "gadgets.example.openstack-sync.io"}, golden: "config-overrides.json"},
		{name: "probe is always the disabled shape", probe: true, env: map[string]string{"WIDGET_ENABLED": "true"}, golden: "config-disabled.json"},
		{name: "bad bool", env: map[string]string{"WIDGET_ENABLED": "True"}, code: 1, stderr: "WIDGET_ENABLED must be true or false\n"},
		{name: "missing CRD kind", env: map[string]string{"WIDGET_ENABLED": "true", "WIDGET_CRD_API_VERSION": "g/v", "WIDGET_CRD_RESOURCE": "w.g"},
			code: 1, stderr: "WIDGET_CRD_KIND is required but not set; ensure the Helm chart has injected it before the hook runs\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.env = tt.env
			if h.env == nil {
				h.env = map[string]string{}
			}
			h.env["LOG_LEVEL"] = "debug"
			h.plugin.Meta.Probe = tt.probe
			code := h.main(append([]string{"--plugin", "widgets.wasm", "--config"}, tt.args...)...)
			assert.Equal(t, tt.code, code)
			if tt.golden != "" {
				assert.Equal(t, golden(t, tt.golden), h.stdout.String())
				assert.Empty(t, h.stderr.String())
			} else {
				assert.Empty(t, h.stdout.String(), "stdout carries only the document")
				assert.Equal(t, tt.stderr, h.stderr.String(), "one clear line")
			}
			assert.True(t, h.plugin.Closed())
		})
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"--config"}, {"--plugin", "x.wasm", "extra"}, {"--bogus"}} {
		h := newHarness(t)
		assert.Equal(t, hook.ExitUsage, h.main(args...), args)
		assert.Contains(t, h.stderr.String(), "usage: openstack-sync hook --plugin <file>", args)
		assert.Empty(t, h.stdout.String())
		assert.Empty(t, h.loaded, "no plugin is loaded on a usage error")
	}
}

func TestLoadOptions(t *testing.T) {
	h := newHarness(t).contexts([]any{map[string]any{"binding": "gadgets", "type": "Synchronization", "objects": []any{}}})
	h.env["GADGET_ENABLED"] = "false"
	assert.Equal(t, 0, h.main("--plugin", "widgets.wasm", "--env-prefix", "GADGET"))
	require.Len(t, h.loaded, 1)
	assert.Equal(t, "GADGET", h.loaded[0].EnvPrefix)
	v, ok := h.loaded[0].LookupEnv("GADGET_ENABLED")
	assert.True(t, ok)
	assert.Equal(t, "false", v)
	require.NotNil(t, h.loaded[0].Logger)
	h.stderr.Reset()
	h.loaded[0].Logger.With("plugin", "gadgets").Info("from the loader")
	assert.Equal(t, 1, strings.Count(h.stderr.String(), "plugin="), "the loader adds the plugin name itself: %s", h.stderr.String())
}

func syncOf(objects ...any) []any {
	return []any{map[string]any{"binding": "widgets", "type": "Synchronization", "objects": objects}}
}

func widget(name string) map[string]any {
	return map[string]any{"apiVersion": "example.openstack-sync.io/v1alpha1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "ns", "uid": "u-" + name, "resourceVersion": "1", "generation": 1},
		"spec":     map[string]any{"name": name, "cloudCredentialsRef": map[string]any{"secretName": "s", "cloudName": "c"}}}
}

func TestTheKubernetesClientGetsTheOperatorsRequestLimit(t *testing.T) {
	for _, tt := range []struct {
		name string
		env  map[string]string
		want hookenv.KubeLimit
	}{
		{name: "defaults", want: hookenv.KubeLimit{QPS: hookenv.DefaultKubeQPS, Burst: hookenv.DefaultKubeBurst}},
		{name: "set", env: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "7", "OPENSTACK_SYNC_KUBE_BURST": "9"},
			want: hookenv.KubeLimit{QPS: 7, Burst: 9}},
		{name: "no limit", env: map[string]string{"OPENSTACK_SYNC_KUBE_QPS": "0"},
			want: hookenv.KubeLimit{QPS: 0, Burst: hookenv.DefaultKubeBurst}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.enable().contexts(syncOf(widget("a")))
			h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a"), widget("a"))
			maps.Copy(h.env, tt.env)
			require.Equal(t, hook.ExitOK, h.main("--plugin", "widgets.wasm"), h.stderr.String())
			assert.Equal(t, []hookenv.KubeLimit{tt.want}, h.kubeLimits)
		})
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(h *harness)
		code    int
		stderr  []string
		kubes   int
		loaded  int
		stdout0 bool
	}{
		{name: "no BINDING_CONTEXT_PATH", setup: func(h *harness) { h.enable() }, code: 0, loaded: 0},
		{name: "blank file", setup: func(h *harness) {
			h.enable()
			p := filepath.Join(h.t.TempDir(), "ctx.json")
			require.NoError(h.t, os.WriteFile(p, []byte("  \n"), 0o600))
			h.env["BINDING_CONTEXT_PATH"] = p
		}, code: 0},
		{name: "empty list", setup: func(h *harness) { h.enable().contexts([]any{}) }, code: 0},
		{name: "missing file", setup: func(h *harness) { h.enable().env["BINDING_CONTEXT_PATH"] = "/nonexistent/ctx.json" },
			code: 1, stderr: []string{"failed to read binding context: open /nonexistent/ctx.json"}},
		{name: "not a list", setup: func(h *harness) { h.enable().contexts(map[string]any{}) },
			code: 1, stderr: []string{"failed to parse binding context: Shell-operator binding context must be a list"}},
		{name: "disabled", setup: func(h *harness) { h.contexts(syncOf(widget("a"))) }, code: 0, loaded: 1,
			stderr: []string{`msg="The hook is disabled" plugin=widgets variable=WIDGET_ENABLED`}},
		{name: "bad LOG_LEVEL", setup: func(h *harness) { h.enable().contexts(syncOf(widget("a"))).env["LOG_LEVEL"] = "loud" },
			code: 1, stderr: []string{`LOG_LEVEL must be one of trace, debug, info, warn, error, fatal; got "loud"`}},
		{name: "bad Kubernetes request rate", setup: func(h *harness) { h.enable().contexts(syncOf(widget("a"))).env["OPENSTACK_SYNC_KUBE_QPS"] = "fast" },
			code: 1, stderr: []string{"OPENSTACK_SYNC_KUBE_QPS must be a number of requests per second"}},
		{name: "config error", setup: func(h *harness) { h.enable().contexts(syncOf(widget("a"))).env["WIDGET_READY_RETRIES"] = "many" },
			code: 1, loaded: 1, stderr: []string{"WIDGET_READY_RETRIES must be an integer"}},
		{name: "load error", setup: func(h *harness) {
			h.enable().contexts(syncOf(widget("a")))
			h.loadErr = errors.New("no such module")
		}, code: 1, loaded: 1, stderr: []string{"loading plugin widgets.wasm: no such module"}},
		{name: "binding context error", setup: func(h *harness) {
			h.enable().contexts([]any{map[string]any{"binding": "periodic sync", "type": "Schedule"}})
		}, code: 1, loaded: 1, stderr: []string{"does not contain widgets event, snapshot, or synchronization objects"}},
		{name: "a full run", setup: func(h *harness) {
			h.enable().contexts(syncOf(widget("a")))
			h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "a"), widget("a"))
		}, code: 0, loaded: 1, kubes: 1, stderr: []string{`msg="Found CRs to reconcile" plugin=widgets kind=Widget count=1`, `msg="Finished reconciling" plugin=widgets kind=Widget`}},
		{name: "reconcile failure", setup: func(h *harness) {
			h.enable().contexts(eventOf("widgets", "a", "a"))
			h.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
		}, code: 1, loaded: 1, kubes: 1, stderr: []string{`msg="Failed to reconcile" plugin=widgets kind=Widget cr=ns/a name=a error=boom`}},
		{name: "a reconcile failure in a scheduled run", setup: func(h *harness) {
			h.enable().contexts(leaseRun("lease", "a", "a"))
			h.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
		}, code: 1, loaded: 1, kubes: 1, stderr: []string{`msg="Failed to reconcile" plugin=widgets kind=Widget cr=ns/a name=a error=boom`}},
		// shell-operator runs every hook's Synchronization in its main queue and retries a failed
		// one there until it succeeds, so a CR that keeps failing would hold every other hook's
		// start-up (Decision 20).
		{name: "a reconcile failure in the start-up Synchronization", setup: func(h *harness) {
			h.enable().contexts(syncOf(widget("a"), widget("b")))
			h.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
		}, code: 0, loaded: 1, kubes: 1, stderr: []string{`msg="Failed to reconcile" plugin=widgets kind=Widget cr=ns/a name=a error=boom`,
			`level=WARN msg="The start-up Synchronization had failures; exiting 0 so that the other hooks start, retrying the CRs on their next event or scheduled run" plugin=widgets kind=Widget`}},
		{name: "a run with nothing to write never builds a client", setup: func(h *harness) {
			h.enable().contexts(syncOf())
		}, code: 0, loaded: 1, kubes: 0},
		{name: "a progress run with nothing Progressing loads no plugin", setup: func(h *harness) {
			h.enable().contexts([]any{map[string]any{"binding": "progress sync", "type": "Schedule",
				"snapshots": map[string]any{"widgets": []any{map[string]any{"object": widget("a")}}}}})
		}, code: 0, loaded: 0, kubes: 0},
		{name: "a progress run reconciles only the Progressing CRs", setup: func(h *harness) {
			busy := widget("b")
			busy["status"] = map[string]any{"syncStatus": "Progressing"}
			h.plugin.Meta = plugin.Metadata{Name: "widgets", Noun: "widget", EnvPrefix: "WIDGET", BindingName: "widgets", Lifecycle: true}
			h.enable().contexts([]any{map[string]any{"binding": "progress sync", "type": "Schedule",
				"snapshots": map[string]any{"widgets": []any{map[string]any{"object": widget("a")}, map[string]any{"object": busy}}}}})
			h.srv.Put(kubetest.ObjectPath("example.openstack-sync.io", "v1alpha1", "widgets", "ns", "b"), busy)
		}, code: 0, loaded: 1, kubes: 1, stderr: []string{`msg="Found CRs to reconcile" plugin=widgets kind=Widget count=1`}},
		{name: "panic", setup: func(h *harness) {
			h.enable().contexts(syncOf(widget("a")))
			h.plugin.Results = map[string]plugintest.Result{"a": {Panic: errors.New("index out of range")}}
		}, code: 1, loaded: 1, stderr: []string{"hook failed: *errors.errorString: index out of range", "goroutine ", "runtime/debug.Stack"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.setup(h)
			code := h.main("--plugin", "widgets.wasm")
			assert.Equal(t, tt.code, code, h.stderr.String())
			for _, s := range tt.stderr {
				assert.Contains(t, h.stderr.String(), s)
			}
			assert.Empty(t, h.stdout.String(), "a run never writes to stdout")
			for _, line := range strings.Split(h.stderr.String(), "\n") {
				assert.LessOrEqual(t, strings.Count(line, "plugin="), 1, "the plugin is named once: %s", line)
			}
			assert.Len(t, h.loaded, tt.loaded)
			assert.Equal(t, tt.kubes, h.kubes, "one client per run, only when needed")
			if tt.loaded > 0 && tt.name != "load error" {
				assert.True(t, h.plugin.Closed())
			}
		})
	}
}

// The plugin's request rate limit reaches the OpenStack connector; a bad value is a configuration
// error naming the variable.
func TestRequestLimit(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want hookenv.RequestLimit
		code int
		err  string
	}{
		{name: "unlimited by default", want: hookenv.RequestLimit{Rate: 0, Burst: 1}},
		{name: "set", env: map[string]string{"WIDGET_REQUEST_RATE": "2.5", "WIDGET_REQUEST_BURST": "4"},
			want: hookenv.RequestLimit{Rate: 2.5, Burst: 4}},
		{name: "bad rate", env: map[string]string{"WIDGET_REQUEST_RATE": "fast"}, code: 1, err: "WIDGET_REQUEST_RATE must be a number"},
		{name: "negative rate", env: map[string]string{"WIDGET_REQUEST_RATE": "-1"}, code: 1,
			err: "WIDGET_REQUEST_RATE must be a number of requests per second, 0 or more (0: unlimited)"},
		{name: "zero burst", env: map[string]string{"WIDGET_REQUEST_BURST": "0"}, code: 1, err: "WIDGET_REQUEST_BURST must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.enable().contexts(syncOf())
			for k, v := range tt.env {
				h.env[k] = v
			}
			code := h.main("--plugin", "widgets.wasm")
			assert.Equal(t, tt.code, code, h.stderr.String())
			if tt.err != "" {
				assert.Contains(t, h.stderr.String(), tt.err)
				assert.Empty(t, h.connOpts, "no connector for a misconfigured hook")
				return
			}
			require.Len(t, h.connOpts, 1)
			assert.Equal(t, hook.ConnectorOptions{Plugin: "widgets", RequestLimit: tt.want, Prefix: "WIDGET"}, h.connOpts[0])
		})
	}
}

func TestJSONLogs(t *testing.T) {
	h := newHarness(t).enable().contexts(eventOf("widgets", "a", "a"))
	h.env["LOG_TYPE"] = "json"
	h.env["LOG_LEVEL"] = "DEBUG"
	h.plugin.Results = map[string]plugintest.Result{"a": {Err: errors.New("boom")}}
	assert.Equal(t, 1, h.main("--plugin", "widgets.wasm"))
	found := false
	for _, line := range strings.Split(strings.TrimSpace(h.stderr.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["msg"] == runner.MsgReconcileFailed {
			assert.Equal(t, "boom", rec["error"])
			found = true
			assert.Equal(t, "widgets", rec["plugin"])
			assert.Equal(t, "Widget", rec["kind"])
			assert.Equal(t, "ns/a", rec["cr"])
			assert.Equal(t, "ERROR", rec["level"])
		}
	}
	assert.True(t, found)
}

func TestProbe(t *testing.T) {
	startup := []any{map[string]any{"binding": "onStartup", "type": "Synchronization"}}
	tests := []struct {
		name   string
		env    map[string]string
		wait   []error
		conn   error
		code   int
		stderr string
		calls  []string
	}{
		{name: "disabled", env: map[string]string{}, code: 0, stderr: "connectivity check skipped"},
		{name: "passes", env: map[string]string{"WIDGET_ENABLED": "true", "WIDGET_DEFAULT_SECRET": "infra", "WIDGET_DEFAULT_CLOUD": "site"},
			code: 0, stderr: "connectivity check passed", calls: []string{"connect openstack/infra/site", "wait openstack/infra/site"}},
		{name: "pod namespace", env: map[string]string{"WIDGET_ENABLED": "true", "WIDGET_DEFAULT_SECRET": "infra", "WIDGET_DEFAULT_CLOUD": "site", "POD_NAMESPACE": "ops"},
			code: 0, calls: []string{"connect ops/infra/site", "wait ops/infra/site"}},
		{name: "wait fails once, no retry", env: map[string]string{"WIDGET_ENABLED": "true", "WIDGET_DEFAULT_SECRET": "infra", "WIDGET_DEFAULT_CLOUD": "site"},
			wait: []error{errors.New("401 Unauthorized"), nil}, code: 1, stderr: `msg="connectivity check FAILED" plugin=probe namespace=openstack secret=infra cloud=site error="401 Unauthorized"`,
			calls: []string{"connect openstack/infra/site", "wait openstack/infra/site"}},
		{name: "connect fails", env: map[string]string{"WIDGET_ENABLED": "true", "WIDGET_DEFAULT_SECRET": "infra", "WIDGET_DEFAULT_CLOUD": "site"},
			conn: errors.New("secret infra not found"), code: 1, stderr: `msg="connectivity check FAILED" plugin=probe namespace=openstack secret=infra cloud=site error="secret infra not found"`,
			calls: []string{"connect openstack/infra/site"}},
		{name: "missing secret name", env: map[string]string{"WIDGET_ENABLED": "true", "WIDGET_DEFAULT_CLOUD": "site"},
			code: 1, stderr: "WIDGET_DEFAULT_SECRET is required but not set"},
		{name: "bad enabled", env: map[string]string{"WIDGET_ENABLED": "yes"}, code: 1, stderr: "WIDGET_ENABLED must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t).contexts(startup)
			for k, v := range tt.env {
				h.env[k] = v
			}
			h.plugin.Meta = plugin.Metadata{Name: "probe", Noun: "probe", EnvPrefix: "WIDGET", Probe: true}
			creds := plugin.Credentials{Namespace: "openstack", SecretName: "infra", CloudName: "site"}
			h.plugin.WaitErrs = map[plugin.Credentials][]error{creds: tt.wait}
			h.conn.ConnectErrs = map[plugin.Credentials]error{creds: tt.conn}
			assert.Equal(t, tt.code, h.main("--plugin", "probe.wasm"))
			assert.Contains(t, h.stderr.String(), tt.stderr)
			assert.Equal(t, append(tt.calls, "close plugin"), h.plugin.Journal.Entries())
		})
	}
}

// --config asks the loader's ReadMetadata when it has one and never starts the plugin; the command
// line's overrides still apply.
func TestConfigReadsMetadataWithoutLoading(t *testing.T) {
	h := newHarness(t)
	h.env = map[string]string{"GADGET_ENABLED": "true", "GADGET_CRD_API_VERSION": "example.openstack-sync.io/v1alpha1",
		"GADGET_CRD_KIND": "Gadget", "GADGET_CRD_RESOURCE": "gadgets.example.openstack-sync.io", "WIDGET_SYNC_CRONTAB": "0 * * * *"}
	var asked []hook.LoadOptions
	deps := hook.Deps{
		LoadPlugin: func(context.Context, string, hook.LoadOptions) (plugin.Plugin, error) {
			t.Fatal("--config started the plugin")
			return nil, nil
		},
		ReadMetadata: func(_ context.Context, path string, o hook.LoadOptions) (plugin.Metadata, error) {
			asked = append(asked, o)
			if path == "broken.wasm" {
				return plugin.Metadata{}, errors.New("not a module")
			}
			return h.plugin.Metadata(), nil
		},
	}
	lookup := func(k string) (string, bool) { v, ok := h.env[k]; return v, ok }
	code := hook.Main(context.Background(), deps, []string{"--plugin", "widgets.wasm", "--config", "--env-prefix", "GADGET",
		"--binding", "gadgets"}, lookup, &h.stdout, &h.stderr)
	assert.Equal(t, hook.ExitOK, code, h.stderr.String())
	assert.Equal(t, golden(t, "config-overrides.json"), h.stdout.String())
	require.Len(t, asked, 1)
	assert.Equal(t, "GADGET", asked[0].EnvPrefix)

	h.stdout.Reset()
	code = hook.Main(context.Background(), deps, []string{"--plugin", "broken.wasm", "--config"}, lookup, &h.stdout, &h.stderr)
	assert.Equal(t, hook.ExitFail, code)
	assert.Empty(t, h.stdout.String())
	assert.Contains(t, h.stderr.String(), "loading plugin broken.wasm: not a module")
}

// OPENSTACK_SYNC_CPUPROFILE writes a CPU profile of the run; an unwritable path only warns.
func TestCPUProfile(t *testing.T) {
	h := newHarness(t)
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	h.env[hook.ProfileEnv] = prof
	assert.Equal(t, hook.ExitOK, h.main("--plugin", "widgets.wasm", "--config"))
	info, err := os.Stat(prof)
	require.NoError(t, err)
	assert.Positive(t, info.Size(), "a profile was written")

	h = newHarness(t)
	h.env[hook.ProfileEnv] = filepath.Join(t.TempDir(), "missing", "cpu.pprof")
	assert.Equal(t, hook.ExitOK, h.main("--plugin", "widgets.wasm", "--config"))
	assert.Contains(t, h.stderr.String(), hook.ProfileEnv+": not profiling")

	// "%p" is the process id: each run of a benchmark keeps its own profile.
	h = newHarness(t)
	dir := t.TempDir()
	h.env[hook.ProfileEnv] = filepath.Join(dir, "cpu.%p.pprof")
	assert.Equal(t, hook.ExitOK, h.main("--plugin", "widgets.wasm", "--config"))
	_, err = os.Stat(filepath.Join(dir, fmt.Sprintf("cpu.%d.pprof", os.Getpid())))
	require.NoError(t, err)
}

// OPENSTACK_SYNC_TRACE writes an execution trace of the run; an unwritable path only warns.
func TestExecutionTrace(t *testing.T) {
	h := newHarness(t)
	out := filepath.Join(t.TempDir(), "run.trace")
	h.env[hook.TraceEnv] = out
	assert.Equal(t, hook.ExitOK, h.main("--plugin", "widgets.wasm", "--config"))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "go 1."), "a Go execution trace was written: %.16q", b)

	h = newHarness(t)
	h.env[hook.TraceEnv] = filepath.Join(t.TempDir(), "missing", "run.trace")
	assert.Equal(t, hook.ExitOK, h.main("--plugin", "widgets.wasm", "--config"))
	assert.Contains(t, h.stderr.String(), hook.TraceEnv+": not tracing")
}

// The operator's sources reach the connector; a bad <P>_SOURCES fails the run naming the variable
// before anything connects.
func TestSources(t *testing.T) {
	h := newHarness(t)
	h.enable().contexts(syncOf())
	h.env["WIDGET_SOURCES"] = `[{"name":"nautobot","url":"https://Nautobot.example/"}]`
	require.Equal(t, 0, h.main("--plugin", "widgets.wasm"), h.stderr.String())
	require.Len(t, h.connOpts, 1)
	assert.Equal(t, []hookenv.Source{{Name: "nautobot", URL: "https://nautobot.example", Burst: 1,
		Auth: hookenv.SourceAuth{Header: "Authorization", Scheme: "Token"}}}, h.connOpts[0].Sources)

	h = newHarness(t)
	h.enable().contexts(syncOf(widget("a")))
	h.env["WIDGET_SOURCES"] = `[{"name":"nautobot","url":"https://user:pw@nautobot.example"}]`
	assert.Equal(t, 1, h.main("--plugin", "widgets.wasm"))
	assert.Contains(t, h.stderr.String(), `WIDGET_SOURCES entry 0 (nautobot): url: \"https://user:pw@nautobot.example\" must not hold user information`)
	assert.Empty(t, h.connOpts)
}
