// Package demo runs complete shell-operator hook passes of the real host binary and plugins
// against an in-process OpenStack (fakecloud) and Kubernetes (fakekube) seeded from examples/,
// and prints what each pass did: `make demo`.
//
// The acts are those an operator lives through: create (the Synchronization at start-up), converge
// (a Schedule run that must write nothing), edit a CR (an Event Modified), and delete a CR with
// prune on (Modified with deletionTimestamp, the finalizer released after cleanup, then Deleted).
// After each act the demo settles: it keeps delivering the events the hooks' own writes caused, as
// shell-operator would, until none are left.
package demo

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube/shelloperator"
	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
)

// Options say where the demo finds its parts.
type Options struct {
	// Host is the production openstack-sync binary run for each hook; default "openstack-sync"
	// next to the running executable (make demo builds both into bin/).
	Host string
	// PluginsDir holds <name>.wasm; default bin/plugins.
	PluginsDir string
	// ExamplesDir holds the Secret and CRs to seed; default examples.
	ExamplesDir string
	// CRDsDir holds the CRDs to serve; default crds.
	CRDsDir string
	// Verbose prints every hook log line, not only warnings and errors.
	Verbose bool
	// ReadMetadata reads a module's metadata; default loading it with the wasm host.
	ReadMetadata MetadataReader
}

// maxSettleRounds bounds event feedback: a hook whose own writes kept firing it would loop.
const maxSettleRounds = 6

// Main is the `openstack-sync-dev demo` subcommand: it parses flags, runs the demo and returns the
// exit code (0 success, 1 failed act, 2 usage).
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Host, "host", "", "openstack-sync binary to run as the hook (default: openstack-sync next to this executable)")
	fs.StringVar(&o.PluginsDir, "plugins", "bin/plugins", "directory of <plugin>.wasm files")
	fs.StringVar(&o.ExamplesDir, "examples", "examples", "directory of example Secret and CR manifests")
	fs.StringVar(&o.CRDsDir, "crds", "crds", "directory of CustomResourceDefinitions")
	fs.BoolVar(&o.Verbose, "v", false, "print every hook log line")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "demo: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := Run(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	return 0
}

type runningHook struct {
	hookSetup
	sim *shelloperator.Simulator
}

type driver struct {
	out      io.Writer
	verbose  bool
	kube     *fakekube.Server
	cloud    *fakecloud.Cloud
	hooks    []*runningHook
	runs     int
	failures []string
	// failing is set during an act whose hook runs are meant to fail.
	failing bool
	// touched are the status-table keys of the CRs the last edit or break act changed, and
	// brokenClouds their original cloud names.
	touched      []string
	brokenClouds map[string]string
	// nautobot is the source of truth of the CRs that name one; nil when none does.
	nautobot *demoNautobot
}

// Run starts the in-process cloud and Kubernetes, runs the acts and reports to out. It returns an
// error when a hook run failed, a converged run wrote anything, or events did not settle.
func Run(ctx context.Context, opts Options, out io.Writer) error {
	start := time.Now()
	if opts.Host == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the host binary: %w", err)
		}
		opts.Host = filepath.Join(filepath.Dir(exe), "openstack-sync")
	}
	if opts.ReadMetadata == nil {
		opts.ReadMetadata = readWasmMetadata
	}
	opts.PluginsDir = defaultString(opts.PluginsDir, "bin/plugins")
	opts.ExamplesDir = defaultString(opts.ExamplesDir, "examples")
	opts.CRDsDir = defaultString(opts.CRDsDir, "crds")
	host, err := filepath.Abs(opts.Host)
	if err != nil {
		return err
	}
	if _, err := os.Stat(host); err != nil {
		return fmt.Errorf("host binary (build it with make build, or pass --host): %w", err)
	}

	crds, err := fakekube.LoadCRDs(opts.CRDsDir)
	if err != nil {
		return err
	}
	examples, err := loadExamples(opts.ExamplesDir)
	if err != nil {
		return err
	}
	nautobot, nautobotNotes := startNautobot(examples)
	defer nautobot.close()
	cloud := fakecloud.New(fakecloud.Options{IronicMaxVersion: "1.112"})
	defer cloud.Close()
	kube, err := fakekube.Start(crds...)
	if err != nil {
		return err
	}
	defer kube.Close()
	work, err := os.MkdirTemp("", "openstack-sync-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := kube.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}

	namespace := namespaceOf(examples)
	seedNotes, err := seed(kube, examples, cloud.CloudsYAML(), fakecloud.SystemCloud, fakecloud.AdminCloud, namespace)
	if err != nil {
		return err
	}
	probeSecret, probeCloud := firstCredentials(kube, crds, namespace)
	pluginsDir, err := filepath.Abs(opts.PluginsDir)
	if err != nil {
		return err
	}
	setups, hookNotes, err := planHooks(ctx, opts.ReadMetadata, crds, pluginsDir, hookSettings{
		Host: host, PodNamespace: namespace, ProbeSecret: probeSecret, ProbeCloud: probeCloud,
		Passthrough: []string{"PATH", "HOME", "OPENSTACK_SYNC_CACHE_DIR"}, Nautobot: nautobot,
	})
	if err != nil {
		return err
	}
	if len(setups) == 0 {
		hookNotes = append(hookNotes, "no *.wasm in "+pluginsDir)
		return fmt.Errorf("no plugin to run: %s", strings.Join(hookNotes, "; "))
	}

	d := &driver{out: out, verbose: opts.Verbose, kube: kube, cloud: cloud, nautobot: nautobot}
	fmt.Fprintf(out, "openstack-sync-dev demo: in-process Kubernetes %s, in-process OpenStack %s\n", kube.URL(), cloud.AuthURL())
	fmt.Fprintf(out, "host %s, namespace %s, CRDs from %s, examples from %s\n", host, namespace, opts.CRDsDir, opts.ExamplesDir)
	for _, s := range setups {
		dir := filepath.Join(work, s.Plugin.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		sim, err := shelloperator.New(ctx, kube, shelloperator.Hook{Command: s.Command, Env: s.Env}, kubeconfig, dir)
		if err != nil {
			return fmt.Errorf("plugin %s: %w", s.Plugin.Name, err)
		}
		d.hooks = append(d.hooks, &runningHook{hookSetup: s, sim: sim})
		fmt.Fprintf(out, "hook %-24s %s\n", s.Plugin.Name, describeConfig(sim.Config()))
	}
	printNotes(out, append(append(seedNotes, hookNotes...), nautobotNotes...))

	acts := []struct {
		title, what string
		do          func(context.Context) error
		// failing marks the act whose hook runs are expected to fail; want is the syncStatus the
		// act's CRs must end with.
		failing bool
		want    string
	}{
		{"1. create", "shell-operator starts: onStartup for the probe, then a Synchronization of every existing CR", d.create, false, ""},
		{"2. converge", "the periodic schedule fires; everything is already in place, so nothing may be written", d.converge, false, ""},
		{"3. edit", "one CR of each kind gets a spec change (an Event Modified)", d.edit, false, ""},
		{"4. break", "the same CRs name a cloud their Secret does not define; the runs fail, once each, without a retry loop", d.breakCredentials, true, "Failed"},
		{"5. repair", "the cloud name is restored; the CRs converge again", d.repairCredentials, false, "Synced"},
		{"6. source down", "the subnet pools' source of truth, Nautobot, answers 500; the periodic sync fails those CRs with one line and writes nothing to Neutron", d.sourceDown, true, "Failed"},
		{"7. source back", "Nautobot answers again; the next periodic sync converges them", d.sourceBack, false, "Synced"},
		{"8. delete", "the same CRs are deleted with PRUNE=true (Modified with deletionTimestamp, cleanup, finalizer released, Deleted)", d.delete, false, ""},
	}
	for _, a := range acts {
		fmt.Fprintf(out, "\n=== %s: %s\n", a.title, a.what)
		beforeKube, beforeCloud := d.captureKube(), captureCloud(cloud)
		cloud.ResetRequests()
		kubeMark := len(kube.Requests())
		d.failing = a.failing
		if err := a.do(ctx); err != nil {
			return fmt.Errorf("%s: %w", a.title, err)
		}
		if err := d.settle(ctx); err != nil {
			return fmt.Errorf("%s: %w", a.title, err)
		}
		after := d.captureKube()
		d.report(a.title, beforeKube, after, beforeCloud, captureCloud(cloud), kube.Requests()[kubeMark:])
		if a.want != "" {
			for _, k := range d.touched {
				if row, ok := after[k]; !ok || row.Synced != a.want {
					d.fail("%s: %s is %q, want %s", a.title, k, row.Synced, a.want)
				}
			}
		}
	}

	fmt.Fprintf(out, "\n=== done: %d hook runs in %.1fs\n", d.runs, time.Since(start).Seconds())
	if len(d.failures) > 0 {
		for _, f := range d.failures {
			fmt.Fprintf(out, "FAILED: %s\n", f)
		}
		return fmt.Errorf("%d problem(s); see FAILED lines above", len(d.failures))
	}
	fmt.Fprintln(out, "every hook run exited 0 (the break act's failed as they must), the converge pass wrote nothing, and every event settled")
	return nil
}

func (d *driver) create(ctx context.Context) error {
	for _, h := range d.hooks {
		run, err := h.sim.Startup(ctx)
		if err != nil {
			return err
		}
		if run != nil {
			d.show(h, run)
		}
	}
	return d.runEach(ctx, (*shelloperator.Simulator).Synchronization)
}

func (d *driver) converge(ctx context.Context) error {
	for _, h := range d.hooks {
		for _, s := range h.sim.Config().Schedule {
			run, err := h.sim.Schedule(ctx, s.Name)
			if err != nil {
				return err
			}
			d.show(h, run)
		}
	}
	writes := d.cloud.Writes()
	for _, w := range writes {
		d.fail("converge: the schedule pass wrote to OpenStack: %s", w)
	}
	return nil
}

func (d *driver) edit(ctx context.Context) error {
	for _, h := range d.crHooks() {
		obj, ok := d.firstLive(h.Resource)
		if !ok {
			fmt.Fprintf(d.out, "  (no %s to edit)\n", h.Resource.Kind)
			continue
		}
		if err := d.update(h.Resource, obj, editSpec(obj)); err != nil {
			return err
		}
	}
	return d.deliver(ctx)
}

// brokenCloud is a cloud name no example Secret defines.
const brokenCloud = "no-such-cloud"

func (d *driver) breakCredentials(ctx context.Context) error {
	d.touched, d.brokenClouds = nil, map[string]string{}
	for _, h := range d.crHooks() {
		obj, ok := d.firstLive(h.Resource)
		if !ok {
			continue
		}
		ref, _ := obj["spec"].(map[string]any)["cloudCredentialsRef"].(map[string]any)
		if ref == nil {
			continue
		}
		key := rowOf(h.Resource, obj).key()
		d.brokenClouds[key], _ = ref["cloudName"].(string)
		ref["cloudName"] = brokenCloud
		if err := d.update(h.Resource, obj, cloudNameChange(d.brokenClouds[key], brokenCloud)); err != nil {
			return err
		}
		d.touched = append(d.touched, key)
	}
	return d.deliver(ctx)
}

func (d *driver) repairCredentials(ctx context.Context) error {
	for _, h := range d.crHooks() {
		objs, _ := d.kube.List(h.Resource, "", "")
		for _, obj := range objs {
			key := rowOf(h.Resource, obj).key()
			cloud, ok := d.brokenClouds[key]
			if !ok {
				continue
			}
			obj["spec"].(map[string]any)["cloudCredentialsRef"].(map[string]any)["cloudName"] = cloud
			if err := d.update(h.Resource, obj, cloudNameChange(brokenCloud, cloud)); err != nil {
				return err
			}
		}
	}
	return d.deliver(ctx)
}

// update stores an edited CR and says what the edit was.
func (d *driver) update(r fakekube.Resource, obj map[string]any, change string) error {
	meta := obj["metadata"].(map[string]any)
	if _, err := d.kube.Update(r, meta["namespace"].(string), meta["name"].(string), "", obj); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "  edited %s %s/%s: %s\n", r.Kind, meta["namespace"], meta["name"], change)
	return nil
}

func cloudNameChange(from, to string) string {
	return fmt.Sprintf("spec.cloudCredentialsRef.cloudName %q -> %q", from, to)
}

// sourceDown makes Nautobot fail and runs the periodic sync of the hooks whose CRs read it.
func (d *driver) sourceDown(ctx context.Context) error {
	d.touched = nil
	if d.nautobot == nil {
		fmt.Fprintln(d.out, "  (no CR names a source outside OpenStack)")
		return nil
	}
	d.nautobot.srv.SetFault(fakenautobot.Fault{Path: "/api/", Status: 500, Body: "<h1>Server Error (500)</h1>"})
	fmt.Fprintf(d.out, "  Nautobot %s now answers 500 Internal Server Error\n", d.nautobot.srv.URL())
	if err := d.sourceSync(ctx); err != nil {
		return err
	}
	for _, w := range d.cloud.Writes() {
		d.fail("source down: a CR whose prefixes did not resolve wrote to OpenStack: %s", w)
	}
	return nil
}

// sourceBack clears Nautobot's fault and runs the same periodic sync again.
func (d *driver) sourceBack(ctx context.Context) error {
	if d.nautobot == nil {
		fmt.Fprintln(d.out, "  (no CR names a source outside OpenStack)")
		return nil
	}
	d.nautobot.srv.ClearFaults()
	fmt.Fprintf(d.out, "  Nautobot %s answers again\n", d.nautobot.srv.URL())
	return d.sourceSync(ctx)
}

// sourceSync runs the periodic sync of the hooks whose CRs name the demo's Nautobot, and marks
// their live CRs as the act's.
func (d *driver) sourceSync(ctx context.Context) error {
	d.touched = nil
	for _, h := range d.crHooks() {
		if !d.nautobot.kinds[h.Resource.Kind] {
			continue
		}
		objs, _ := d.kube.List(h.Resource, "", "")
		for _, o := range objs {
			if meta, _ := o["metadata"].(map[string]any); meta["deletionTimestamp"] == nil {
				d.touched = append(d.touched, rowOf(h.Resource, o).key())
			}
		}
		for _, s := range h.sim.Config().Schedule {
			run, err := h.sim.Schedule(ctx, s.Name)
			if err != nil {
				return err
			}
			d.show(h, run)
		}
	}
	return nil
}

func (d *driver) delete(ctx context.Context) error {
	for _, h := range d.crHooks() {
		obj, ok := d.firstLive(h.Resource)
		if !ok {
			continue
		}
		meta := obj["metadata"].(map[string]any)
		ns, name := meta["namespace"].(string), meta["name"].(string)
		if _, _, err := d.kube.Delete(h.Resource, ns, name, fakekube.DeleteOptions{}); err != nil {
			return err
		}
		fins, _ := meta["finalizers"].([]any)
		fmt.Fprintf(d.out, "  deleted %s %s/%s (finalizers %v)\n", h.Resource.Kind, ns, name, fins)
	}
	return d.deliver(ctx)
}

// deliver runs every hook once on its pending events.
func (d *driver) deliver(ctx context.Context) error {
	return d.runEach(ctx, (*shelloperator.Simulator).Events)
}

// runEach has every hook's simulator take one step, in hook order, and shows the runs.
func (d *driver) runEach(ctx context.Context, step func(*shelloperator.Simulator, context.Context) ([]*shelloperator.Run, error)) error {
	for _, h := range d.hooks {
		runs, err := step(h.sim, ctx)
		if err != nil {
			return err
		}
		for _, r := range runs {
			d.show(h, r)
		}
	}
	return nil
}

// settle delivers the events the hooks' own writes caused until none are left.
func (d *driver) settle(ctx context.Context) error {
	for round := 0; round < maxSettleRounds; round++ {
		pending := 0
		for _, h := range d.hooks {
			pending += h.sim.Pending()
		}
		if pending == 0 {
			return nil
		}
		if err := d.deliver(ctx); err != nil {
			return err
		}
	}
	d.fail("events still pending after %d rounds: the hooks' writes keep re-triggering them", maxSettleRounds)
	return nil
}

func (d *driver) show(h *runningHook, r *shelloperator.Run) {
	d.runs++
	fmt.Fprintf(d.out, "  [%s] %s -> exit %d\n", h.Plugin.Name, r.Describe(), r.ExitCode)
	if r.ExitCode != 0 && !d.failing {
		d.fail("%s: hook run (%s) exited %d", h.Plugin.Name, r.Describe(), r.ExitCode)
	}
	for _, line := range strings.Split(strings.TrimRight(r.Stderr, "\n"), "\n") {
		if line == "" {
			continue
		}
		if d.verbose || r.ExitCode != 0 || strings.Contains(line, "WARN") || strings.Contains(line, "ERROR") {
			fmt.Fprintf(d.out, "      %s\n", trimmed(line, 220))
		}
	}
}

func (d *driver) fail(format string, args ...any) {
	d.failures = append(d.failures, fmt.Sprintf(format, args...))
}

func (d *driver) crHooks() []*runningHook {
	var out []*runningHook
	for _, h := range d.hooks {
		if !h.Plugin.Probe {
			out = append(out, h)
		}
	}
	return out
}

// firstLive is the first CR of r by namespace/name that is not terminating.
func (d *driver) firstLive(r fakekube.Resource) (map[string]any, bool) {
	objs, _ := d.kube.List(r, "", "")
	for _, o := range objs {
		if meta, _ := o["metadata"].(map[string]any); meta["deletionTimestamp"] == nil {
			return o, true
		}
	}
	return nil, false
}

// firstCredentials is the credential of the first CR, which the probe validates; without CRs it
// is the first Secret with the first cloud of the in-process clouds.yaml.
func firstCredentials(kube *fakekube.Server, crds []fakekube.Resource, namespace string) (string, string) {
	for _, r := range crds {
		objs, _ := kube.List(r, namespace, "")
		for _, o := range objs {
			spec, _ := o["spec"].(map[string]any)
			ref, _ := spec["cloudCredentialsRef"].(map[string]any)
			s, _ := ref["secretName"].(string)
			c, _ := ref["cloudName"].(string)
			if s != "" && c != "" {
				return s, c
			}
		}
	}
	secrets, _ := kube.List(fakekube.SecretResource, namespace, "")
	for _, s := range secrets {
		return s["metadata"].(map[string]any)["name"].(string), fakecloud.AdminCloud
	}
	return "cloud-credentials", fakecloud.AdminCloud
}

func describeConfig(c shelloperator.Config) string {
	var parts []string
	if c.OnStartup != nil {
		parts = append(parts, fmt.Sprintf("onStartup %d", *c.OnStartup))
	}
	for _, k := range c.Kubernetes {
		parts = append(parts, fmt.Sprintf("watches %s %s (queue %s)", k.APIVersion, k.Kind, k.Queue))
	}
	for _, s := range c.Schedule {
		parts = append(parts, fmt.Sprintf("schedule %q %q", s.Name, s.Crontab))
	}
	return strings.Join(parts, "; ")
}

func printNotes(out io.Writer, notes []string) {
	if len(notes) == 0 {
		return
	}
	sort.Strings(notes)
	fmt.Fprintln(out, "notes:")
	for _, n := range notes {
		fmt.Fprintf(out, "  - %s\n", n)
	}
}

func defaultString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
