package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube/shelloperator"
	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// benchPlugin is one shipped CR plugin: its env prefix and how to write the i-th CR's spec so that
// every CR claims its own OpenStack resource: Spec the small spec of the first benchmarks, Site
// one shaped as a real site writes them (objects.go).
type benchPlugin struct {
	Name      string
	EnvPrefix string
	Spec      func(i int) map[string]any
	// Site is Spec as a site writes it; nil: the same as Spec.
	Site func(i int) map[string]any
	// Nautobot: the i-th CR references the i-th prefix of the bench's Nautobot, which the plugin
	// reads through the host (docs/abi.md section 8); the rows then count its requests too.
	Nautobot bool
}

var benchPlugins = []benchPlugin{
	{Name: "ironic-runbooks", EnvPrefix: "IRONIC_RUNBOOK", Spec: func(i int) map[string]any {
		// Traits are required by the CRD; below Ironic 1.112 (the fake's and the harness's 1.96)
		// the plugin reports them as a note instead of applying them.
		return map[string]any{"runbookName": fmt.Sprintf("CUSTOM_BENCH_%05d", i), "public": false,
			"traits": []any{fmt.Sprintf("CUSTOM_BENCH_%05d", i)},
			"steps": []any{
				map[string]any{"interface": "bios", "step": "apply_configuration", "order": 10,
					"args": map[string]any{"settings": []any{map[string]any{"name": "LogicalProc", "value": "Enabled"}}}},
				map[string]any{"interface": "management", "step": "clear_job_queue", "order": 5},
			},
			"extra": map[string]any{"team": "metal"}}
	}, Site: siteRunbook},
	{Name: "neutron-segment-ranges", EnvPrefix: "NEUTRON_SEGMENT_RANGE", Spec: func(i int) map[string]any {
		// Far above the cloud's default ranges, ten ids each, so no two overlap.
		lo := 100000 + 10*i
		return map[string]any{"name": fmt.Sprintf("bench-%05d", i), "network_type": "vxlan", "minimum": lo, "maximum": lo + 9}
	}, Site: siteSegmentRange},
	{Name: "neutron-router-flavors", EnvPrefix: "NEUTRON_ROUTER_FLAVOR", Spec: func(i int) map[string]any {
		return map[string]any{"name": fmt.Sprintf("bench-%05d", i), "description": "bench flavor",
			"service_profiles": []any{map[string]any{
				"driver":      "neutron.services.l3_router.service_providers.single_node.SingleNodeDriver",
				"description": "single node L3"}}}
	}, Site: siteRouterFlavor},
	{Name: "neutron-subnet-pools", EnvPrefix: "NEUTRON_SUBNET_POOL", Nautobot: true, Spec: func(i int) map[string]any {
		// One scope for every pool (found once per group), one /24 of its own per pool.
		return map[string]any{"name": fmt.Sprintf("bench-%05d", i), "address_scope": map[string]any{"name": "bench-scope"},
			"minimum_prefix_length": 26, "default_prefix_length": 28, "maximum_prefix_length": 30,
			"nautobot": map[string]any{"tokenSecretRef": map[string]any{"secretName": benchTokenSecret, "key": "token"},
				"prefix_refs": []any{map[string]any{"id": benchPrefixID(i)}}, "require": map[string]any{"type": "pool"}}}
	}},
}

// The bench's Nautobot: its site, the Secret of its token, and the i-th prefix.
const (
	benchSite        = "bench-site"
	benchTokenSecret = "bench-nautobot"
)

func benchPrefixID(i int) string { return fmt.Sprintf("b0000000-0000-4000-8000-%012d", i) }

// ensureNautobot starts the bench's Nautobot on first use and seeds the prefixes of n CRs.
func (e *env) ensureNautobot(n int) {
	if e.nautobot == nil {
		e.nautobot = fakenautobot.New()
		e.nautobot.AddLocation(fakenautobot.Location{Name: benchSite})
		e.nbToken = "0123456789abcdef0123456789abcdef01234567"
		e.nautobot.AddToken(fakenautobot.Token{Key: e.nbToken})
	}
	for ; e.nbSeeded < n; e.nbSeeded++ {
		i := e.nbSeeded
		e.nautobot.AddPrefix(fakenautobot.Prefix{ID: benchPrefixID(i), Prefix: fmt.Sprintf("10.%d.%d.0/24", i/256, i%256),
			Type: "pool", Status: "Active", Namespace: "Global", Locations: []string{benchSite}})
	}
}

func (p benchPlugin) plural() string { return strings.ReplaceAll(p.Name, "-", "") }

// hostBuild is one way of running a plugin: the wasm host binary with a .wasm, or the native test
// host with a native build of the same plugin.
type hostBuild struct {
	Label  string // "wasm" or "native"
	Binary string
	Plugin func(name string) string
}

// env is everything a scenario's hook runs share.
type env struct {
	kube      *cluster
	cloud     *fakecloud.Cloud
	cloudOpts fakecloud.Options
	state     string
	cacheDir  string
	runs      int
	log       func(format string, args ...any)
	// logDir, when set, keeps every hook run's log.
	logDir string
	logSeq int
	// nautobot serves the plugins that read one (benchPlugin.Nautobot); nbSeeded prefixes so far.
	nautobot *fakenautobot.Server
	nbToken  string
	nbSeeded int
}

// scenario is one plugin at one size and group count, with CRs of one shape, in its own namespace.
type scenario struct {
	env    *env
	plugin benchPlugin
	shape  string // shapePlain or shapeSite
	res    fakekube.Resource
	size   int
	groups int
	ns     string
	// memoMiB is the memo bound the chart gives this many CRs (chartMemoMiB); 0: the host's own.
	memoMiB int
}

func (s *scenario) secret(g int) string { return fmt.Sprintf("bench-credentials-%d", g) }

func (s *scenario) crName(i int) string { return fmt.Sprintf("bench-%05d", i) }

// object is the i-th CR; its group is i mod groups.
func (s *scenario) object(i int) *unstructured.Unstructured {
	spec := s.plugin.Spec(i)
	if s.shape == shapeSite && s.plugin.Site != nil {
		spec = s.plugin.Site(i)
	}
	if nb, _ := spec["nautobot"].(map[string]any); nb != nil {
		nb["url"] = s.env.nautobot.URL()
	}
	spec["cloudCredentialsRef"] = map[string]any{"secretName": s.secret(i % s.groups), "cloudName": fakecloud.AdminCloud}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": s.res.APIVersion(), "kind": s.res.Kind,
		"metadata": map[string]any{"name": s.crName(i), "namespace": s.ns},
		"spec":     spec,
	}}
	if s.shape == shapeSite {
		siteMetadata(obj)
	}
	return obj
}

// setup creates the namespace, the Secrets and the CRs (none converged yet).
func (s *scenario) setup(ctx context.Context) error {
	if s.plugin.Nautobot {
		s.env.ensureNautobot(s.size)
	}
	if err := s.env.kube.ensureNamespace(ctx, s.ns); err != nil {
		return err
	}
	if err := s.writeSecrets(ctx); err != nil {
		return err
	}
	return s.createCRs(ctx)
}

func (s *scenario) writeSecrets(ctx context.Context) error {
	for g := range s.groups {
		if err := s.env.kube.putSecret(ctx, s.ns, s.secret(g), s.env.cloud.CloudsYAML()); err != nil {
			return fmt.Errorf("secret %s: %w", s.secret(g), err)
		}
	}
	if s.plugin.Nautobot {
		return s.env.kube.putSecretData(ctx, s.ns, benchTokenSecret, map[string]any{"token": s.env.nbToken})
	}
	return nil
}

func (s *scenario) createCRs(ctx context.Context) error {
	if fake := s.env.kube.fake; fake != nil {
		// In process: the store as a POST leaves it, without 20,000 requests' TLS and decoding.
		for i := range s.size {
			if _, err := fake.Create(s.res, s.ns, s.object(i).Object); err != nil && !strings.Contains(err.Error(), "already exists") {
				return fmt.Errorf("creating %s: %w", s.crName(i), err)
			}
		}
		return nil
	}
	api := s.env.kube.dyn.Resource(s.res.GVR()).Namespace(s.ns)
	opts := metav1.CreateOptions{}
	if s.shape == shapeSite {
		opts.FieldManager = siteManager
	}
	return parallel(s.size, func(i int) error {
		_, err := api.Create(ctx, s.object(i), opts)
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			return fmt.Errorf("creating %s: %w", s.crName(i), err)
		}
		return nil
	})
}

// resetForCreate makes every CR new again: an empty cloud (a fresh in-process one, so the Secrets
// are rewritten for its ports), no finalizer, no status.
func (s *scenario) resetForCreate(ctx context.Context) error {
	s.env.cloud.Close()
	s.env.cloud = fakecloud.New(s.env.cloudOpts)
	if err := s.writeSecrets(ctx); err != nil {
		return err
	}
	api := s.env.kube.dyn.Resource(s.res.GVR()).Namespace(s.ns)
	list, err := api.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	// Only the CRs a hook has written need writing back: fresh ones (the first set-up) have
	// neither, and 2 × 20,000 patches that change nothing cost the set-up tens of seconds.
	var dirty []string
	for _, it := range list.Items {
		if _, st := it.Object["status"]; st || len(it.GetFinalizers()) > 0 {
			dirty = append(dirty, it.GetName())
		}
	}
	return parallel(len(dirty), func(i int) error {
		if _, err := api.Patch(ctx, dirty[i], types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`),
			metav1.PatchOptions{}); err != nil {
			return err
		}
		_, err := api.Patch(ctx, dirty[i], types.MergePatchType, []byte(`{"status":null}`), metav1.PatchOptions{}, "status")
		return err
	})
}

// deleteCRs asks the API server to delete every CR; their finalizers hold them, terminating.
func (s *scenario) deleteCRs(ctx context.Context) error {
	api := s.env.kube.dyn.Resource(s.res.GVR()).Namespace(s.ns)
	return parallel(s.size, func(i int) error { return api.Delete(ctx, s.crName(i), metav1.DeleteOptions{}) })
}

// count is how many of the scenario's CRs exist.
func (s *scenario) count(ctx context.Context) (int, error) {
	list, err := s.env.kube.dyn.Resource(s.res.GVR()).Namespace(s.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// sample is one measured hook process.
type sample struct {
	Wall, CPU time.Duration
	RSS       int64 // bytes
	Exit      int
	OpenStack map[string]int
	Kube      map[string]int
	// Context is the size of the binding context the run was handed, in bytes.
	Context int
	// Nautobot counts the requests the bench's Nautobot received.
	Nautobot int
	// Note replaces the request columns of a row that makes no requests of its own.
	Note string
}

// watch is the CR watch the host under test configures (`hook --config` in the scenario's
// environment): how shell-operator would keep and hand over each CR for it.
func (s *scenario) watch(ctx context.Context, hb hostBuild, cacheDir string) (shelloperator.KubernetesBinding, error) {
	env, err := s.hookEnv(cacheDir)
	if err != nil {
		return shelloperator.KubernetesBinding{}, err
	}
	var out, errs strings.Builder
	u, err := measured(ctx, env, &out, &errs, hb.Binary, "hook", "--plugin", hb.Plugin(s.plugin.Name), "--config")
	if err == nil && u.Exit != 0 {
		err = fmt.Errorf("exit status %d: %s", u.Exit, errs.String())
	}
	if err != nil {
		return shelloperator.KubernetesBinding{}, fmt.Errorf("%s %s --config: %w", hb.Label, s.plugin.Name, err)
	}
	cfg, err := shelloperator.ParseConfig([]byte(out.String()))
	if err != nil {
		return shelloperator.KubernetesBinding{}, err
	}
	if len(cfg.Kubernetes) == 0 {
		return shelloperator.KubernetesBinding{}, fmt.Errorf("%s %s --config watches nothing", hb.Label, s.plugin.Name)
	}
	return cfg.Kubernetes[0], nil
}

// runHook runs one hook process over the namespace's current CRs, handed over as w keeps them, and
// measures it. A set-up pass talks to the API server directly, not through the counting proxy.
func (s *scenario) runHook(ctx context.Context, hb hostBuild, cacheDir string, w shelloperator.KubernetesBinding, setup bool) (sample, error) {
	bc, n, err := s.env.kube.bindingContext(ctx, s.res, s.ns, s.plugin.Name, w)
	if err != nil {
		return sample{}, err
	}
	if n != s.size {
		return sample{}, fmt.Errorf("%s: %d CRs in %s, want %d", s.plugin.Name, n, s.ns, s.size)
	}
	bcPath := filepath.Join(s.env.state, "binding-context.json")
	if err := os.WriteFile(bcPath, bc, 0o600); err != nil {
		return sample{}, err
	}
	s.env.cloud.ResetRequests()
	if s.env.nautobot != nil {
		s.env.nautobot.ResetRequests()
	}
	s.env.kube.take()
	env, err := s.hookEnv(cacheDir)
	if err != nil {
		return sample{}, err
	}
	env = append(env, "BINDING_CONTEXT_PATH="+bcPath)
	if setup {
		env = append(env, "KUBECONFIG="+s.env.kube.setup)
	}
	var stderr strings.Builder
	u, err := measured(ctx, env, nil, &stderr, hb.Binary, "hook", "--plugin", hb.Plugin(s.plugin.Name))
	out := sample{Wall: u.Wall, CPU: u.CPU, RSS: u.RSS, Exit: u.Exit, OpenStack: s.env.cloud.RequestCounts(), Kube: s.env.kube.take(),
		Context: len(bc)}
	if s.plugin.Nautobot {
		out.Nautobot = len(s.env.nautobot.Requests())
	}
	if s.env.logDir != "" {
		s.env.logSeq++
		name := fmt.Sprintf("%03d-%s-%s-%s-%d", s.env.logSeq, hb.Label, s.plugin.Name, s.shape, s.size)
		_ = os.WriteFile(filepath.Join(s.env.logDir, name+".log"), []byte(stderr.String()), 0o644)
		// The scenario's last binding context, to read what the hook was handed.
		_ = os.WriteFile(filepath.Join(s.env.logDir, fmt.Sprintf("%s-%s-%s-%d.context.json", hb.Label, s.plugin.Name, s.shape, s.size)), bc, 0o644)
	}
	if err != nil {
		return out, err
	}
	if out.Exit != 0 {
		return out, fmt.Errorf("%s %s exited %d:\n%s", hb.Label, s.plugin.Name, out.Exit, tail(stderr.String(), 3000))
	}
	return out, nil
}

// hookEnv is the environment of every hook process of the scenario, but BINDING_CONTEXT_PATH.
func (s *scenario) hookEnv(cacheDir string) ([]string, error) {
	p := s.plugin.EnvPrefix
	env := []string{
		"HOME=" + s.env.state, "PATH=" + os.Getenv("PATH"),
		"LOG_LEVEL=info", "POD_NAMESPACE=" + s.ns,
		"KUBECONFIG=" + filepath.Join(s.env.state, "kubeconfig"),
		"OPENSTACK_SYNC_CACHE_DIR=" + cacheDir,
		p + "_ENABLED=true",
		p + "_CRD_API_VERSION=" + s.res.APIVersion(),
		p + "_CRD_KIND=" + s.res.Kind,
		p + "_CRD_RESOURCE=" + s.res.ResourceName(),
		p + "_STATUS_ENABLED=true",
		p + "_PRUNE=true",
		p + "_READY_RETRIES=1",
		p + "_READY_DELAY=0",
	}
	if s.plugin.Nautobot {
		src, err := hookenv.SourceURL(s.env.nautobot.URL())
		if err != nil {
			return nil, err
		}
		env = append(env, p+hookenv.SourcesSuffix+"="+hookenv.SourcesJSON([]hookenv.Source{{Name: "nautobot", URL: src}}), p+"_SITE="+benchSite)
	}
	env = append(env, s.memoEnv()...)
	for _, v := range os.Environ() {
		// Knobs of the host under test pass through (sandbox tuning, profiling).
		if strings.HasPrefix(v, "OPENSTACK_SYNC_WASM_") || strings.HasPrefix(v, "OPENSTACK_SYNC_MEMO_") ||
			strings.HasPrefix(v, "OPENSTACK_SYNC_REPLAY=") ||
			strings.HasPrefix(v, "OPENSTACK_SYNC_KUBE_") ||
			strings.HasPrefix(v, "OPENSTACK_SYNC_CPUPROFILE=") || strings.HasPrefix(v, "OPENSTACK_SYNC_TRACE=") ||
			strings.HasPrefix(v, "OPENSTACK_SYNC_NATIVE_CPUPROFILE=") || strings.HasPrefix(v, "GOGC=") ||
			strings.HasPrefix(v, "GOMEMLIMIT=") || strings.HasPrefix(v, "GODEBUG=") {
			env = append(env, v)
		}
	}
	return env, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// requestSummary writes counts as "GET 1,000 POST 2".
func requestSummary(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
		if m[k] > 0 {
			parts = append(parts, k+" "+thousands(m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
