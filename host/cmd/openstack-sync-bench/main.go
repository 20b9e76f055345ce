// Command openstack-sync-bench is the whole-hook benchmark behind docs/benchmarks.md (`make
// bench`). It runs the host binary as shell-operator does, one process per hook run with a binding
// context file in and an exit code out, against the in-process cloud (host/internal/fakecloud) over
// loopback and a real kube-apiserver (hack/kube-up.sh, on ports of its own; the in-process fakekube
// only when the tools are not built, and the output says which). For every plugin, size and
// credential-group count it measures all-create, converged and delete-with-prune runs: wall time,
// CPU (user+sys) and peak RSS from wait4, OpenStack requests by method and Kubernetes requests.
//
// It is a command, not a test: timings are read by people, never asserted.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/memo"
)

type config struct {
	repo, host, pluginsDir, native string
	plugins                        []string
	shapes                         []string
	sizes                          []int
	groups                         []string // "SIZExGROUPS"
	workloads                      []string
	runs                           int
	kube                           string
	latency                        time.Duration
	config                         bool
	cold                           bool
	logDir                         string
	portBase                       int
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == launchArg {
		os.Exit(launch(os.Args[2:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var c config
	var plugins, shapes, sizes, groups, workloads string
	fs := flag.NewFlagSet("openstack-sync-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.repo, "repo", ".", "repository root (crds/, hack/)")
	fs.StringVar(&c.host, "host", "bin/openstack-sync", "host binary under test")
	fs.StringVar(&c.pluginsDir, "plugins-dir", "bin/plugins", "folder of the <name>.wasm plugins")
	fs.StringVar(&c.native, "native", "", "native test host binary; when set each row is also run natively "+
		"(plugins from <native-dir>/<name>, next to the binary)")
	fs.StringVar(&plugins, "plugins", "ironic-runbooks,neutron-segment-ranges,neutron-router-flavors,neutron-subnet-pools", "plugins to run")
	fs.StringVar(&shapes, "objects", shapePlain+","+shapeSite, "shapes of CR: plain (the smallest spec, one client) and "+
		"site (a real site's specs, labels, last-applied annotation and managers)")
	fs.StringVar(&sizes, "sizes", "1,100", "CR counts in one credential group (the full matrix: 1,100,1000,5000)")
	fs.StringVar(&groups, "groups", "", "extra SIZExGROUPS cases, e.g. 1000x10")
	fs.StringVar(&workloads, "workloads", "create,converged,delete", "workloads to measure: create, converged, delete, and "+
		workloadShellOperator+" (the real shell-operator's own time and memory for the CRs, with the host's watch and with jqFilter \".\")")
	fs.IntVar(&c.runs, "runs", 3, "measured runs per row (the docs use 5 or more)")
	fs.StringVar(&c.kube, "kube", "auto", "Kubernetes API: auto (real when built), real or fake")
	fs.DurationVar(&c.latency, "latency", 0, "delay every OpenStack answer by this long (e.g. 20ms)")
	fs.BoolVar(&c.config, "config", true, "also time `hook --config`")
	fs.BoolVar(&c.cold, "cold", false, "also time converged runs with an empty compilation cache")
	fs.StringVar(&c.logDir, "log-dir", "", "keep each hook run's log in this folder")
	fs.IntVar(&c.portBase, "kube-ports", 22000, "a real API server's ports: etcd BASE+379 and +380, kube-apiserver BASE+4443 "+
		"(away from the e2e defaults; give two benches different bases)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c.plugins = split(plugins)
	c.workloads = split(workloads)
	c.groups = split(groups)
	c.shapes = split(shapes)
	for _, sh := range c.shapes {
		if sh != shapePlain && sh != shapeSite {
			fmt.Fprintf(stderr, "--objects: %q is neither %s nor %s\n", sh, shapePlain, shapeSite)
			return 2
		}
	}
	for _, s := range split(sizes) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "--sizes: %q is not a positive count\n", s)
			return 2
		}
		c.sizes = append(c.sizes, n)
	}
	if err := bench(ctx, c, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "openstack-sync-bench:", err)
		return 1
	}
	return 0
}

func split(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

type row struct {
	plugin, shape, workload, host string
	size, groups                  int
	samples                       []sample
	// nautobot: the plugin reads the bench's Nautobot, whose requests the row counts.
	nautobot bool
}

func bench(ctx context.Context, c config, stdout, stderr io.Writer) error {
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	if c.logDir != "" {
		if err := os.MkdirAll(c.logDir, 0o755); err != nil {
			return err
		}
	}
	state, err := os.MkdirTemp("", "openstack-sync-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	crdDir := filepath.Join(c.repo, "crds")
	crds, err := fakekube.LoadCRDs(crdDir)
	if err != nil {
		return err
	}
	kube, err := startCluster(ctx, c.kube, c.repo, state, c.portBase, crds, crdDir)
	if err != nil {
		return err
	}
	defer kube.close()
	if err := os.WriteFile(filepath.Join(state, "kubeconfig"), kube.kubeconfig(), 0o600); err != nil {
		return err
	}
	cloudOpts := fakecloud.Options{Latency: c.latency}
	e := &env{kube: kube, cloud: fakecloud.New(cloudOpts), cloudOpts: cloudOpts, state: state,
		cacheDir: filepath.Join(state, "cache"), runs: c.runs, log: logf, logDir: c.logDir}
	defer func() {
		e.cloud.Close()
		if e.nautobot != nil {
			e.nautobot.Close()
		}
	}()

	builds := []hostBuild{{Label: "wasm", Binary: c.host, Plugin: func(n string) string { return filepath.Join(c.pluginsDir, n+".wasm") }}}
	if c.native != "" {
		dir := filepath.Dir(c.native)
		builds = append(builds, hostBuild{Label: "native", Binary: c.native, Plugin: func(n string) string { return filepath.Join(dir, n) }})
	}
	header(stdout, c, kube)

	if c.config {
		for _, name := range c.plugins {
			r, err := timeConfig(ctx, c, name, state)
			if err != nil {
				return err
			}
			printRow(stdout, r)
		}
	}
	cases := make([][2]int, 0, len(c.sizes)+len(c.groups))
	for _, n := range c.sizes {
		cases = append(cases, [2]int{n, 1})
	}
	for _, g := range c.groups {
		a, b, ok := strings.Cut(g, "x")
		n, err1 := strconv.Atoi(a)
		k, err2 := strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || n < k || k < 1 {
			return fmt.Errorf("--groups: %q is not SIZExGROUPS", g)
		}
		cases = append(cases, [2]int{n, k})
	}
	for _, name := range c.plugins {
		i := slices.IndexFunc(benchPlugins, func(p benchPlugin) bool { return p.Name == name })
		if i < 0 {
			return fmt.Errorf("unknown plugin %q", name)
		}
		p := benchPlugins[i]
		j := slices.IndexFunc(crds, func(r fakekube.Resource) bool { return r.Plural == p.plural() })
		if j < 0 {
			return fmt.Errorf("no CRD with plural %s in %s", p.plural(), crdDir)
		}
		for _, shape := range c.shapes {
			for _, cs := range cases {
				s := &scenario{env: e, plugin: p, shape: shape, res: crds[j], size: cs[0], groups: cs[1],
					ns: fmt.Sprintf("bench-%d-%s-%dx%d", i, shape, cs[0], cs[1])}
				got, err := s.measure(ctx, c, builds)
				for _, r := range got {
					printRow(stdout, r)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// measure runs one scenario's workloads for every build, each build on its own state.
func (s *scenario) measure(ctx context.Context, c config, builds []hostBuild) ([]row, error) {
	var rows []row
	s.env.log("%s: %d %s CR(s) in %d group(s): setting up", s.plugin.Name, s.size, s.shape, s.groups)
	if mib, err := chartMemoMiB(filepath.Join(c.repo, chartValues), s.plugin.Name, s.size); err != nil {
		s.env.log("%s: the chart's memo bound is unknown (%v); the hooks run with the host's", s.plugin.Name, err)
	} else {
		s.memoMiB = mib
		if env := s.memoEnv(); env != nil {
			s.env.log("%s: %s, the chart's bound for %d CRs", s.plugin.Name, env[0], s.size)
		}
	}
	if err := s.setup(ctx); err != nil {
		return rows, err
	}
	want := func(w string) bool { return slices.Contains(c.workloads, w) }
	for _, hb := range builds {
		watch, err := s.watch(ctx, hb, s.env.cacheDir)
		if err != nil {
			return rows, err
		}
		run := func(cacheDir string) (sample, error) { return s.runHook(ctx, hb, cacheDir, watch, false) }
		// settle is an unmeasured pass that brings the namespace where the next measurement starts,
		// talking to the API server directly (it needs no request counts). A write dropped under
		// load (an EOF mid-response, seen through the counting proxy at 5,000–20,000 CRs on a busy
		// machine) fails that pass but is only a set-up's; the next pass finishes what it left.
		settle := func() error {
			var err error
			for attempt := 1; attempt <= 3; attempt++ {
				if _, err = s.runHook(ctx, hb, s.env.cacheDir, watch, true); err == nil {
					return nil
				}
				s.env.log("%s: unmeasured pass %d failed; running it again: %s", s.plugin.Name, attempt, tail(err.Error(), 300))
			}
			return err
		}
		mk := func(w string) row {
			return row{plugin: s.plugin.Name, shape: s.shape, workload: w, host: hb.Label, size: s.size, groups: s.groups, nautobot: s.plugin.Nautobot}
		}
		// An unmeasured create run fills the compilation cache and converges everything.
		if err := s.resetForCreate(ctx); err != nil {
			return rows, err
		}
		if err := settle(); err != nil {
			return rows, err
		}
		if want("create") {
			create := mk("create")
			for range s.env.runs {
				if err := s.resetForCreate(ctx); err != nil {
					return rows, err
				}
				smp, err := run(s.env.cacheDir)
				if err != nil {
					return rows, err
				}
				create.samples = append(create.samples, smp)
			}
			rows = append(rows, create)
		}
		if want("converged") {
			// The first pass after a create rewrites each status once (the steady-state message);
			// converged means the pass after that.
			if err := settle(); err != nil {
				return rows, err
			}
			conv := mk("converged")
			for range s.env.runs {
				smp, err := run(s.env.cacheDir)
				if err != nil {
					return rows, err
				}
				conv.samples = append(conv.samples, smp)
			}
			rows = append(rows, conv)
		}
		if want(workloadShellOperator) && hb.Label == builds[0].Label {
			got, err := s.measureShellOperator(ctx, c, hb)
			rows = append(rows, got...)
			if err != nil {
				return rows, err
			}
		}
		if c.cold && want("converged") {
			cold := mk("converged, cold cache")
			for r := range s.env.runs {
				dir := filepath.Join(s.env.state, fmt.Sprintf("cold-%d", r))
				smp, err := run(dir)
				os.RemoveAll(dir)
				if err != nil {
					return rows, err
				}
				cold.samples = append(cold.samples, smp)
			}
			rows = append(rows, cold)
		}
		if want("delete") {
			del := mk("delete+prune")
			for r := range s.env.runs {
				if r > 0 {
					// The previous delete run removed the CRs: create and converge them again.
					if err := s.createCRs(ctx); err != nil {
						return rows, err
					}
					if err := settle(); err != nil {
						return rows, err
					}
				}
				if err := s.deleteCRs(ctx); err != nil {
					return rows, err
				}
				if n, err := s.count(ctx); err != nil || n == 0 {
					// No finalizer held them: the plugin never deletes (its cleanup policy is none),
					// so there is no delete pass to measure.
					if err == nil {
						s.env.log("%s: CRs hold no finalizer; no delete pass to measure", s.plugin.Name)
						err = s.createCRs(ctx)
					}
					if err == nil {
						_, err = run(s.env.cacheDir)
					}
					if err != nil {
						return rows, err
					}
					break
				}
				smp, err := run(s.env.cacheDir)
				if err != nil {
					return rows, err
				}
				del.samples = append(del.samples, smp)
			}
			if len(del.samples) > 0 {
				rows = append(rows, del)
				// Leave the namespace as setup found it, for the next build.
				if err := s.createCRs(ctx); err != nil {
					return rows, err
				}
				if err := settle(); err != nil {
					return rows, err
				}
			}
		}
	}
	return rows, nil
}

// timeConfig times `hook --config` alone, warm cache.
func timeConfig(ctx context.Context, c config, name, state string) (row, error) {
	r := row{plugin: name, workload: "--config", host: "wasm"}
	wasm := filepath.Join(c.pluginsDir, name+".wasm")
	cache := filepath.Join(state, "cache")
	for i := range c.runs + 1 {
		var out strings.Builder
		u, err := measured(ctx, []string{"HOME=" + state, "OPENSTACK_SYNC_CACHE_DIR=" + cache}, &out, &out,
			c.host, "hook", "--plugin", wasm, "--config")
		if err == nil && u.Exit != 0 {
			err = fmt.Errorf("exit status %d", u.Exit)
		}
		if err != nil {
			return r, fmt.Errorf("%s --config: %v\n%s", name, err, out.String())
		}
		if i == 0 {
			continue // fills the cache
		}
		r.samples = append(r.samples, sample{Wall: u.Wall, CPU: u.CPU, RSS: u.RSS})
	}
	return r, nil
}

// byteSize writes a size the way the tables do: bytes below a KB, else KB or MB with one decimal.
func byteSize(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
}

func header(w io.Writer, c config, k *cluster) {
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	fmt.Fprintf(w, "# whole-hook benchmark, %s\n\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "- machine: %s, %d CPUs (%s), %s; load average at start: %s", host, runtime.NumCPU(), cpu,
		runtime.Version(), strings.Join(strings.Fields(string(load))[:3], " "))
	fmt.Fprintf(w, "\n- Kubernetes: %s\n- OpenStack: in-process fakecloud over loopback, latency %s per request\n",
		k.kind, c.latency)
	memoBound := "the chart's for each row's CRs (compilationCache and memory.crs at the row's count)"
	if v, ok := os.LookupEnv(memo.MaxMiBEnv); ok {
		memoBound = memo.MaxMiBEnv + "=" + v
	}
	fmt.Fprintf(w, "- convergence memo bound: %s\n", memoBound)
	fmt.Fprintf(w, "- command: openstack-sync-bench %s\n- %d measured runs per row; median (min–max); warm compilation cache unless said\n\n",
		strings.Join(os.Args[1:], " "), c.runs)
	fmt.Fprintln(w, "| plugin | objects | workload | CRs × groups | host | wall ms | CPU ms | peak RSS MiB | binding context | per CR | OpenStack requests | Kubernetes requests |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
}

func printRow(w io.Writer, r row) {
	if len(r.samples) == 0 {
		return
	}
	stat := func(get func(sample) float64, digits int) string {
		v := make([]float64, len(r.samples))
		for i, s := range r.samples {
			v[i] = get(s)
		}
		slices.Sort(v)
		med := v[len(v)/2]
		if len(v)%2 == 0 {
			med = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		f := "%." + strconv.Itoa(digits) + "f"
		return fmt.Sprintf(f+" ("+f+"–"+f+")", med, v[0], v[len(v)-1])
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	size := "—"
	if r.size > 0 {
		size = fmt.Sprintf("%s × %d", thousands(r.size), r.groups)
	}
	last := r.samples[len(r.samples)-1]
	os := requestSummary(last.OpenStack)
	if n := last.OpenStack["keystone"]; n > 0 {
		os += fmt.Sprintf(" (+%d Keystone)", n)
	}
	if r.nautobot {
		// A source outside OpenStack, counted apart (docs/benchmarks.md, the subnet pools' table).
		os += fmt.Sprintf(" (+%s Nautobot GET, %.2f per CR)", thousands(last.Nautobot), float64(last.Nautobot)/float64(max(r.size, 1)))
	}
	kube := "—"
	if last.Kube != nil {
		kube = requestSummary(last.Kube)
	}
	if last.Note != "" {
		os = last.Note
	}
	shape, context, perCR := "—", "—", "—"
	if r.shape != "" {
		shape = r.shape
	}
	if last.Context > 0 && r.size > 0 {
		context, perCR = byteSize(last.Context), fmt.Sprintf("%s B", thousands(last.Context/r.size))
	}
	fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.plugin, shape, r.workload, size, r.host,
		stat(func(s sample) float64 { return ms(s.Wall) }, 0), stat(func(s sample) float64 { return ms(s.CPU) }, 0),
		stat(func(s sample) float64 { return float64(s.RSS) / (1 << 20) }, 0), context, perCR, os, kube)
}
