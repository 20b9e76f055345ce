package runcmd

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/source"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
)

// Pass is one hook pass of a plugin without Kubernetes: the hook's own pass (readiness,
// planning, credential groups, finalizers, statuses, prune) with the Kubernetes API replaced by
// the CRs in memory. `openstack-sync run` prints one; the conformance kit runs several.
type Pass struct {
	// Plugin is the module file.
	Plugin string
	// Clouds is the clouds.yaml every credential Secret holds.
	Clouds []byte
	// Cloud, when set, is the cloud of clouds.yaml every CR uses.
	Cloud string
	// Namespace is the namespace of CRs that name none; default "default".
	Namespace string
	// Resource is the CRD's plural; default the kind in lower case plus s.
	Resource string
	// Prune runs with PRUNE=true; DryRun answers writes without sending them.
	Prune, DryRun bool
	// Set are hook settings without the plugin's prefix, as the chart's hook.env.
	Set map[string]string
	// Live are the CRs; Deleted the CRs being deleted (deletion time and finalizer are set).
	// They are completed as the API server would store them, in place.
	Live, Deleted []map[string]any
	// Log receives the hook's log at LogLevel (default info).
	Log      io.Writer
	LogLevel string
	// MemoDir, when set, turns the convergence memo on with its records in that folder, as a
	// hook run has it (docs/abi.md, "The convergence memo"); passes sharing it see each other's.
	MemoDir string
	// Sources are the sources outside OpenStack allow-listed for the plugin (<PREFIX>_SOURCES;
	// docs/abi.md section 8), and Secrets the Secrets a CR may name for their credentials, by
	// name (every other Secret is the credential Secret, holding Clouds).
	Sources []hookenv.Source
	Secrets map[string]map[string][]byte
}

// Outcome is what a pass did.
type Outcome struct {
	// Code is the hook's exit code.
	Code int
	Info wasm.Info
	// CRs are the CRs after the pass (status and finalizers as written), live then deleted.
	CRs []map[string]any
	// Calls are the plugin's OpenStack requests in order.
	Calls []Call
}

// Run runs the pass.
func (p Pass) Run(ctx context.Context) (Outcome, error) {
	namespace := cmp.Or(p.Namespace, "default")
	logOut := p.Log
	if logOut == nil {
		logOut = io.Discard
	}
	quiet := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	info, err := wasm.Inspect(ctx, p.Plugin, wasm.Options{Logger: quiet, LookupEnv: ShellSandbox(nil)})
	if err != nil {
		return Outcome{}, err
	}
	if info.Probe {
		return Outcome{}, fmt.Errorf("%s is a connectivity probe; it reconciles no CRs", info.Name)
	}
	var all []map[string]any
	for i, group := range [][]map[string]any{p.Live, p.Deleted} {
		for _, obj := range group {
			if err := complete(obj, namespace, p.Cloud, i == 1); err != nil {
				return Outcome{}, fmt.Errorf("CR %v: %w", obj["metadata"], err)
			}
			all = append(all, obj)
		}
	}
	apiVersion, kind, err := oneKind(all)
	if err != nil {
		return Outcome{}, err
	}
	st := &store{objects: map[string]map[string]any{}, clouds: p.Clouds, secrets: p.Secrets}
	items := []any{}
	var keys []string
	for _, obj := range all {
		meta := obj["metadata"].(map[string]any)
		k := key(meta["namespace"].(string), meta["name"].(string))
		if _, dup := st.objects[k]; dup {
			return Outcome{}, fmt.Errorf("two CRs are named %s", k)
		}
		st.objects[k] = obj
		keys = append(keys, k)
		items = append(items, map[string]any{"object": obj})
	}
	binding := info.BindingName
	// A scheduled full run plans as the start-up Synchronization does, and its failures exit 1
	// (a failed Synchronization exits 0 under shell-operator, Decision 20; a pass must not).
	contexts, err := json.Marshal([]any{map[string]any{"binding": hookenv.ScheduleBinding, "type": "Schedule",
		"snapshots": map[string]any{binding: items}}})
	if err != nil {
		return Outcome{}, err
	}
	ctxFile, err := os.CreateTemp("", "openstack-sync-run-*.json")
	if err != nil {
		return Outcome{}, err
	}
	defer os.Remove(ctxFile.Name())
	if _, err := ctxFile.Write(contexts); err != nil {
		ctxFile.Close()
		return Outcome{}, err
	}
	ctxFile.Close()

	prefix := info.EnvPrefix
	group, _, _ := strings.Cut(apiVersion, "/")
	plural := cmp.Or(p.Resource, strings.ToLower(kind)+"s")
	env := map[string]string{
		"BINDING_CONTEXT_PATH": ctxFile.Name(), "POD_NAMESPACE": namespace,
		"LOG_LEVEL":         cmp.Or(p.LogLevel, "info"),
		prefix + "_ENABLED": "true", prefix + "_STATUS_ENABLED": "true", prefix + "_PRUNE": fmt.Sprint(p.Prune),
		prefix + "_CRD_API_VERSION": apiVersion, prefix + "_CRD_KIND": kind, prefix + "_CRD_RESOURCE": plural + "." + group,
		prefix + "_READY_RETRIES": "1", prefix + "_READY_DELAY": "0",
	}
	if len(p.Sources) > 0 {
		env[prefix+hookenv.SourcesSuffix] = hookenv.SourcesJSON(p.Sources)
	}
	for k, v := range p.Set {
		env[prefix+"_"+k] = v
	}
	j := &journal{}
	ids := &atomic.Int64{}
	world := newPlannedWorld()
	deps := hook.Deps{
		LoadPlugin: func(ctx context.Context, path string, lo hook.LoadOptions) (plugin.Plugin, error) {
			return wasm.Load(ctx, path, wasm.Options{EnvPrefix: lo.EnvPrefix, LookupEnv: lo.LookupEnv, Logger: lo.Logger,
				Memo: p.MemoDir != "", MemoDir: p.MemoDir, Environ: environ(env)})
		},
		NewKube: func(hookenv.KubeLimit) (hook.Kube, error) { return st, nil },
		NewConnector: func(s hook.SecretReader, co hook.ConnectorOptions, l *slog.Logger) plugin.Connector {
			return source.WrapConnector(recordingConnector{Connector: openstack.NewConnector(s, openstack.Options{Logger: l, Plugin: co.Plugin,
				RateLimit: rate.Limit(co.Rate), RateBurst: co.Burst}), j: j, dryRun: p.DryRun, ids: ids, world: world},
				s, co.Sources, source.Options{Logger: l, Plugin: co.Plugin, Prefix: co.Prefix})
		},
	}
	code := hook.Main(ctx, deps, []string{"--plugin", p.Plugin}, ShellSandbox(env), io.Discard, logOut)
	out := Outcome{Code: code, Info: info, Calls: j.snapshot()}
	for _, k := range keys {
		out.CRs = append(out.CRs, st.objects[k])
	}
	return out, nil
}

// environ lists env as the process environment would, for the memo's digest of the settings.
func environ(env map[string]string) func() []string {
	return func() []string {
		out := make([]string, 0, len(env))
		for k, v := range env {
			out = append(out, k+"="+v)
		}
		return out
	}
}

// ShellSandbox looks a variable up in env, and only the sandbox settings and the cache location
// in the shell, as the hook would read them: no plugin variable the caller happens to have set
// leaks into the pass.
func ShellSandbox(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		if k == wasm.CacheDirEnv || k == "XDG_CACHE_HOME" || k == "HOME" || strings.HasPrefix(k, "OPENSTACK_SYNC_WASM_") {
			return os.LookupEnv(k)
		}
		return "", false
	}
}
