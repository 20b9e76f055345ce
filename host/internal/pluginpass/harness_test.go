package pluginpass

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/source"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

const namespace = "openstack"

// credentialGroup is the group the scenarios' CRs name (cloudCredentialsRef below, on the admin
// cloud), as the first-party plugins' markers record it.
const credentialGroup = namespace + "/openstack-credentials/" + fakecloud.AdminCloud

// repoRoot is where crds/, examples/ and hack/ are.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// pluginsDir holds the compiled plugins (wasmtest.Plugins).
var pluginsDir string

func TestMain(m *testing.M) {
	var err error
	if pluginsDir, err = wasmtest.Plugins(repoRoot()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := buildCPlugins(); err != nil {
		fmt.Fprintln(os.Stderr, "building the C plugins failed:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// backend is the OpenStack a scenario runs against: the in-process fake (clouds nil) or the real
// servers of hack/os-harness.sh, reached through the clouds.yaml in clouds.
type backend struct {
	clouds []byte
}

var fake = backend{}

// env is one plugin hooked to an in-process Kubernetes and an OpenStack (fake or real), driven like
// shell-operator drives it: a binding-context file in, Kubernetes patches and cloud state out.
type env struct {
	t *testing.T
	// cloud is the fake OpenStack; nil on the real cloud, where only the API is there to look at.
	cloud  *fakecloud.Cloud
	clouds []byte
	kube   *fakekube.Server
	res    fakekube.Resource
	plugin string
	vars   map[string]string
	logs   bytes.Buffer
	// sfx makes every name this env creates its own: the real cloud is shared between runs.
	sfx      string
	rec      *recorder
	sessions map[string]plugin.Session
	// failStatus makes every status write of the next runs fail, as an API server outage would.
	failStatus bool
	// sourceTimeout bounds one request to a source outside OpenStack (0: the host's default).
	sourceTimeout time.Duration
}

// failingStatus is a Kubernetes client whose status writes fail.
type failingStatus struct{ hook.Kube }

func (failingStatus) MergePatchStatus(context.Context, kubeapi.Target, []byte) error {
	return errors.New("injected: the API server refused the status write")
}

type setup struct {
	plugin, crd, prefix, kind string
	prune                     bool
	ironicMax                 string
}

func (e *env) real() bool { return e.cloud == nil }

func newEnv(t *testing.T, b backend, s setup) *env {
	t.Helper()
	crds, err := fakekube.LoadCRDs(filepath.Join(repoRoot(), "crds"))
	require.NoError(t, err)
	srv, err := fakekube.Start(crds...)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	sfx := make([]byte, 3)
	_, _ = rand.Read(sfx)
	e := &env{t: t, kube: srv, plugin: s.plugin, clouds: b.clouds, sfx: strings.ToUpper(hex.EncodeToString(sfx)),
		sessions: map[string]plugin.Session{}}
	e.rec = &recorder{guard: b.clouds != nil}
	if b.clouds == nil {
		e.cloud = fakecloud.New(fakecloud.Options{IronicMaxVersion: s.ironicMax})
		t.Cleanup(e.cloud.Close)
		e.clouds = []byte(e.cloud.CloudsYAML())
	} else {
		// Registered before any resource exists, so it runs last: after the test's own cleanups.
		t.Cleanup(e.cleanupReal)
	}
	if s.crd != "" {
		r, ok := srv.ResourceFor(s.crd, s.kind)
		require.True(t, ok, "the CRDs serve %s %s", s.crd, s.kind)
		e.res = r
	}
	_, err = srv.Create(fakekube.SecretResource, namespace, fakekube.Object{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "openstack-credentials", "namespace": namespace},
		"data":     map[string]any{"clouds.yaml": e.clouds},
	})
	require.NoError(t, err)
	p := s.prefix
	e.vars = map[string]string{
		p + "_ENABLED": "true", p + "_STATUS_ENABLED": "true", p + "_PRUNE": fmt.Sprint(s.prune),
		p + "_READY_RETRIES": "1", p + "_READY_DELAY": "0", "POD_NAMESPACE": namespace, "LOG_LEVEL": "debug",
	}
	if s.crd != "" {
		e.vars[p+"_CRD_API_VERSION"] = s.crd
		e.vars[p+"_CRD_KIND"] = s.kind
		e.vars[p+"_CRD_RESOURCE"] = e.res.Plural + "." + e.res.Group
	}
	return e
}

// name makes a resource name unique to this env (suffix "-SFX"), so runs on the shared real cloud
// never meet each other's resources.
func (e *env) name(base string) string { return base + "-" + e.sfx }

// traitName is name for Ironic, whose runbook names must be trait names (CUSTOM_[A-Z0-9_]+).
func (e *env) traitName(base string) string { return base + "_" + e.sfx }

// apply creates a CR from YAML (spec only; credentials added).
func (e *env) apply(name, specYAML string) {
	e.t.Helper()
	var spec map[string]any
	require.NoError(e.t, yaml.Unmarshal([]byte(specYAML), &spec))
	spec["cloudCredentialsRef"] = map[string]any{"secretName": "openstack-credentials", "cloudName": cloudFor(spec)}
	_, err := e.kube.Create(e.res, namespace, fakekube.Object{
		"apiVersion": e.res.APIVersion(), "kind": e.res.Kind,
		"metadata": map[string]any{"name": name, "namespace": namespace}, "spec": spec,
	})
	require.NoError(e.t, err)
}

// cloudFor lets a spec pick its cloud with a "_cloud" key (removed), default the admin project.
func cloudFor(spec map[string]any) string {
	c, ok := spec["_cloud"].(string)
	delete(spec, "_cloud")
	if !ok {
		return fakecloud.AdminCloud
	}
	return c
}

func (e *env) get(name string) fakekube.Object {
	e.t.Helper()
	obj, err := e.kube.Get(e.res, namespace, name)
	require.NoError(e.t, err)
	return obj
}

func (e *env) status(name string) map[string]any {
	st, _ := e.get(name)["status"].(map[string]any)
	return st
}

func (e *env) finalizers(name string) []any {
	md, _ := e.get(name)["metadata"].(map[string]any)
	f, _ := md["finalizers"].([]any)
	return f
}

// synchronize runs the hook with a Synchronization context holding every CR, as shell-operator does
// at start-up and (with a Schedule) periodically. It returns the exit code.
func (e *env) synchronize() int {
	e.t.Helper()
	items := []any{}
	if e.res.Plural != "" {
		objs, err := e.kube.List(e.res, namespace, "")
		require.NoError(e.t, err)
		for _, o := range objs {
			items = append(items, map[string]any{"object": o})
		}
	}
	binding := e.plugin
	// A scheduled full run: its failures exit 1 (a start-up Synchronization's exit 0, Decision 20).
	ctxs := []any{map[string]any{"binding": "periodic sync", "type": "Schedule",
		"snapshots": map[string]any{binding: items}}}
	return e.run(ctxs)
}

// startup runs the hook with the onStartup context (the probe's only binding).
func (e *env) startup() int {
	return e.run([]any{map[string]any{"binding": hook.ProbeBinding, "type": "onStartup"}})
}

func (e *env) run(ctxs []any) int {
	e.t.Helper()
	raw, err := json.Marshal(ctxs)
	require.NoError(e.t, err)
	path := filepath.Join(e.t.TempDir(), "context.json")
	require.NoError(e.t, os.WriteFile(path, raw, 0o600))
	vars := map[string]string{"BINDING_CONTEXT_PATH": path}
	for k, v := range e.vars {
		vars[k] = v
	}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	deps := hook.Deps{
		LoadPlugin: func(ctx context.Context, path string, lo hook.LoadOptions) (plugin.Plugin, error) {
			p, err := wasm.Load(ctx, path, wasm.Options{EnvPrefix: lo.EnvPrefix, LookupEnv: lo.LookupEnv, Logger: lo.Logger,
				CacheDir: filepath.Join(os.TempDir(), "openstack-sync-test-wazero")})
			if err != nil || !e.real() {
				return p, err
			}
			return &sharedCloudPlugin{Plugin: p, e: e}, nil
		},
		NewKube: func(hookenv.KubeLimit) (hook.Kube, error) {
			k, err := kube.NewForConfig(e.kube.RESTConfig(), kube.Limit{})
			if err != nil || !e.failStatus {
				return k, err
			}
			return failingStatus{k}, nil
		},
		NewConnector: func(secrets hook.SecretReader, co hook.ConnectorOptions, log *slog.Logger) plugin.Connector {
			return source.WrapConnector(recordingConnector{openstack.NewConnector(secrets, openstack.Options{Logger: log, Plugin: e.plugin, MaxAttempts: 1}), e.rec, true},
				secrets, co.Sources, source.Options{Logger: log, Plugin: e.plugin, Prefix: co.Prefix, MaxAttempts: 1, RequestTimeout: e.sourceTimeout})
		},
		Sleep: func(context.Context, time.Duration) error { return nil },
	}
	var stdout bytes.Buffer
	e.logs.Reset()
	code := hook.Main(ctx, deps, []string{"--plugin", pluginFile(e.t, e.plugin)}, lookup, &stdout, &e.logs)
	e.t.Logf("hook %s exited %d; log:\n%s", e.plugin, code, e.logs.String())
	return code
}

// writes returns the plugin's write requests as "METHOD /path" lines.
func (e *env) writes() []string {
	var out []string
	for _, c := range e.rec.snapshot() {
		if c.Method != "GET" && c.Method != "HEAD" {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

// requests returns the plugin's requests to one service as "METHOD /path" lines.
func (e *env) requests(service string) []string {
	var out []string
	for _, c := range e.rec.snapshot() {
		if c.Service == service {
			out = append(out, c.Method+" "+c.Path)
		}
	}
	return out
}

// kubeWrites counts the Kubernetes API writes (status and finalizer patches) the runs made.
func (e *env) kubeWrites() []string {
	var out []string
	for _, r := range e.kube.Requests() {
		if r.Method != "GET" && r.Method != "LIST" && r.Method != "WATCH" && !strings.HasSuffix(r.Path, "/secrets") {
			out = append(out, r.Method+" "+r.Path)
		}
	}
	return out
}
