// Package hook is the shell-operator entry point of one plugin: `openstack-sync hook --plugin
// <file> [--config]`. It prints the configuration, or reads the binding context, plans and runs a
// pass, and turns everything that can go wrong into a logged line and an exit code (docs/contract.md §1.6).
//
// The concrete parts (the wasm loader, the Kubernetes client, the OpenStack connector) come in
// through Deps, so tests drive the entry point with doubles and the command wires the real ones.
package hook

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime/debug"
	"runtime/trace"
	"strings"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/lease"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/replay"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
	"github.com/openstack-sync/openstack-sync/host/internal/status"
)

// LoadOptions tell a loader how to start a plugin.
type LoadOptions struct {
	// EnvPrefix overrides the plugin's default prefix ("" keeps it); a loader hands the plugin only
	// its own <prefix>_* variables.
	EnvPrefix string
	LookupEnv hookenv.LookupFunc
	// Logger carries no plugin attribute: the loader adds the plugin's name itself.
	Logger *slog.Logger
	// Metrics receives compile times and sandbox refusals; nil records nothing.
	Metrics metrics.Recorder
	// KnownMetadata, when set, is called once the loader knows the plugin's metadata without
	// running it (wasm: a module this node loaded before), before the load is done; a loader MAY
	// never call it, MUST call it before LoadPlugin returns, and MUST NOT call it with metadata
	// other than what the loaded plugin reports.
	KnownMetadata func(plugin.Metadata)
}

// SecretReader reads credential Secrets; the OpenStack connector uses it.
type SecretReader interface {
	GetSecretData(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// Kube is the Kubernetes client of a run.
type Kube interface {
	runner.Kube
	SecretReader
}

// Deps are the concrete parts the command wires in.
type Deps struct {
	LoadPlugin func(ctx context.Context, path string, opts LoadOptions) (plugin.Plugin, error)
	// ReadMetadata, when set, answers --config without starting the plugin (the wasm loader reads
	// a record keyed by the module's digest); nil loads the plugin and asks it.
	ReadMetadata func(ctx context.Context, path string, opts LoadOptions) (plugin.Metadata, error)
	// NewKube builds the run's Kubernetes client within the operator's request limit.
	NewKube      func(limit hookenv.KubeLimit) (Kube, error)
	NewConnector func(secrets SecretReader, opts ConnectorOptions, log *slog.Logger) plugin.Connector
	// NewLeaseStore reaches the Leases of high availability (OPENSTACK_SYNC_LEASE_NAME set).
	NewLeaseStore func(limit hookenv.KubeLimit) (lease.Store, error)
	// NewMetrics, when set, starts the run's metrics; they are written to METRICS_PATH when the
	// run ends (observe.go).
	NewMetrics func() MetricsFile
	// Events turns on Kubernetes Events about CRs; the Kubernetes client must then implement
	// events.API.
	Events bool
	// Sleep and Now default to the real clock; tests replace them.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	// Journal hears about each finished step of the pass (the supervised child reports them to
	// its supervisor); nil hears nothing.
	Journal runner.Journal
	// Resume, when set, is a pass of the same run killed before it ended: this pass takes its
	// finished steps as done and keeps its time budget (host/internal/supervise).
	Resume *Resume
	// Identify, when set, names the module and its metadata without loading it (the wasm loader:
	// from the metadata record of a module this node loaded before), so that a run of a
	// deterministic plugin may be replayed without loading it (replay.go); an error means no
	// replay is tried. nil never replays.
	Identify func(ctx context.Context, path string, opts LoadOptions) (Identity, error)
	// Environ lists the environment, for the replay's key; nil is os.Environ.
	Environ func() []string
}

// Resume is what an earlier, killed pass of the same run finished.
type Resume struct {
	// Start is when the run began: <P>_RUN_BUDGET counts from it, not from this pass.
	Start time.Time
	Done  []runner.Step
}

// ConnectorOptions is what the hook tells the OpenStack connector about the plugin it serves.
type ConnectorOptions struct {
	// Plugin names the plugin in the session's log lines and User-Agent.
	Plugin string
	// RequestLimit bounds the plugin's OpenStack requests (<P>_REQUEST_RATE, <P>_REQUEST_BURST).
	hookenv.RequestLimit
	// Metrics counts requests; nil records nothing.
	Metrics metrics.Recorder
	// Sources are the sources outside OpenStack the operator allow-lists for the plugin
	// (<P>_SOURCES); the connector's sessions reach them too (package source).
	Sources []hookenv.Source
	// Prefix is the hook's env prefix, for messages that name its variables.
	Prefix string
}

// Exit codes.
const (
	ExitOK    = 0
	ExitFail  = 1
	ExitUsage = 2
)

// ProbeBinding is the binding a connectivity probe acts on.
const ProbeBinding = "onStartup"

type flags struct {
	plugin, envPrefix, binding string
	config                     bool
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("openstack-sync hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.plugin, "plugin", "", "plugin module to run (required)")
	fs.BoolVar(&f.config, "config", false, "print the shell-operator hook configuration and exit")
	fs.StringVar(&f.envPrefix, "env-prefix", "", "environment variable prefix (default: the plugin's)")
	fs.StringVar(&f.binding, "binding", "", "shell-operator binding and queue name (default: the plugin's)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: openstack-sync hook --plugin <file> [--config] [--env-prefix P] [--binding NAME]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if f.plugin == "" {
		fs.Usage()
		return f, errors.New("--plugin is required")
	}
	return f, nil
}

// Invocation reads what a hook command line asks for, for the command that decides how the run
// is contained (host/internal/supervise): the plugin's file and whether it is --config. ok is
// false when the line does not parse; Main then says why.
func Invocation(args []string) (plugin string, configOnly, ok bool) {
	f, err := parseFlags(args, io.Discard)
	return f.plugin, f.config, err == nil
}

// Main runs the hook subcommand and returns the exit code.
func Main(ctx context.Context, deps Deps, args []string, lookupEnv hookenv.LookupFunc, stdout, stderr io.Writer) (code int) {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync hook:", err)
		return ExitUsage
	}
	defer startProfile(lookupEnv, stderr)()
	if f.config {
		// --config configures no logging: stdout carries only the document, warnings go to stderr.
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		defer recoverPanic(log, &code)
		return printConfig(ctx, deps, f, lookupEnv, log, stdout, stderr)
	}
	tuneGC(lookupEnv)
	root, err := NewLogger(lookupEnv, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFail
	}
	defer recoverPanic(root, &code)
	return run(ctx, deps, f, lookupEnv, root)
}

// recoverPanic turns an unexpected panic into the logged failure of docs/contract.md §1.6.
func recoverPanic(log *slog.Logger, code *int) {
	r := recover()
	if r == nil {
		return
	}
	log.Error(fmt.Sprintf("hook failed: %T: %v", r, r), "stack", string(debug.Stack()))
	*code = ExitFail
}

func load(ctx context.Context, deps Deps, f flags, lookupEnv hookenv.LookupFunc, log *slog.Logger,
	known func(plugin.Metadata)) (plugin.Plugin, plugin.Metadata, error) {
	p, err := deps.LoadPlugin(ctx, f.plugin, LoadOptions{EnvPrefix: f.envPrefix, LookupEnv: lookupEnv, Logger: log,
		KnownMetadata: known})
	if err != nil {
		return nil, plugin.Metadata{}, fmt.Errorf("loading plugin %s: %w", f.plugin, err)
	}
	meta, err := completeMetadata(f, p.Metadata())
	if err != nil {
		closePlugin(ctx, p, log)
		return nil, meta, err
	}
	return p, meta, nil
}

// completeMetadata applies the command line's overrides and checks the hook can be named.
func completeMetadata(f flags, meta plugin.Metadata) (plugin.Metadata, error) {
	meta.EnvPrefix = cmp.Or(f.envPrefix, meta.EnvPrefix)
	meta.BindingName = cmp.Or(f.binding, meta.BindingName)
	if meta.EnvPrefix == "" || (meta.BindingName == "" && !meta.Probe) {
		return meta, fmt.Errorf("plugin %s names no env prefix or binding; pass --env-prefix and --binding", f.plugin)
	}
	return meta, nil
}

// configMetadata is the metadata --config needs, read without starting the plugin when the
// loader can.
func configMetadata(ctx context.Context, deps Deps, f flags, lookupEnv hookenv.LookupFunc, log *slog.Logger) (plugin.Metadata, error) {
	if deps.ReadMetadata == nil {
		p, meta, err := load(ctx, deps, f, lookupEnv, log, nil)
		if err == nil {
			closePlugin(ctx, p, log)
		}
		return meta, err
	}
	meta, err := deps.ReadMetadata(ctx, f.plugin, LoadOptions{EnvPrefix: f.envPrefix, LookupEnv: lookupEnv, Logger: log})
	if err != nil {
		return meta, fmt.Errorf("loading plugin %s: %w", f.plugin, err)
	}
	return completeMetadata(f, meta)
}

func closePlugin(ctx context.Context, p plugin.Plugin, log *slog.Logger) {
	if err := p.Close(ctx); err != nil {
		log.Warn("closing the plugin failed", "error", err.Error())
	}
}

func printConfig(ctx context.Context, deps Deps, f flags, lookupEnv hookenv.LookupFunc, log *slog.Logger, stdout, stderr io.Writer) int {
	meta, err := configMetadata(ctx, deps, f, lookupEnv, log)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return ExitFail
	}
	doc := hookenv.DisabledDocument()
	if !meta.Probe {
		if doc, err = hookenv.ConfigDocument(lookupEnv, meta.EnvPrefix, meta.BindingName, meta.Lifecycle); err != nil {
			fmt.Fprintln(stderr, err)
			return ExitFail
		}
	}
	if _, err := stdout.Write(doc.Marshal()); err != nil {
		fmt.Fprintln(stderr, "writing the configuration:", err)
		return ExitFail
	}
	return ExitOK
}

func run(ctx context.Context, deps Deps, f flags, lookupEnv hookenv.LookupFunc, root *slog.Logger) (code int) {
	// Until the plugin names itself, lines name it by its file.
	name := strings.TrimSuffix(filepath.Base(f.plugin), ".wasm")
	log := root.With("plugin", name)
	obs := startObserving(deps, f, name, lookupEnv)
	defer func() { obs.finish(code, log) }()
	path, _ := lookupEnv("BINDING_CONTEXT_PATH")
	region := trace.StartRegion(ctx, "read binding context")
	doc, err := bindingctx.Read(path)
	region.End()
	if err != nil {
		log.Error(err.Error())
		return ExitFail
	}
	// The plan, the claims and a takeover read their CRs from the file, one at a time.
	defer doc.Close()
	contexts := doc.Contexts
	if len(contexts) == 0 {
		log.Debug("no binding contexts; nothing to do")
		return ExitOK
	}
	if bindingctx.OnlyBinding(contexts, hookenv.ProgressBinding) && !bindingctx.AnySyncStatus(contexts, status.Progressing) {
		// The progress schedule fires every 30 s; with nothing Progressing it must cost no more
		// than reading the binding context: no plugin load, no connection.
		log.Debug("progress run with no Progressing CR; nothing to do")
		return ExitOK
	}
	kubeLimit, err := hookenv.LoadKubeLimit(lookupEnv)
	if err != nil {
		log.Error(err.Error())
		return ExitFail
	}
	kube := &lazyKube{newKube: func() (Kube, error) { return deps.NewKube(kubeLimit) }}
	// A converged run of a deterministic plugin may be the last one again: then it is replayed
	// without loading the module (docs/contract.md, Decision 22).
	region = trace.StartRegion(ctx, "replay")
	rr, code, replayed := startReplay(ctx, deps, f, path, contexts, kube, obs, lookupEnv, root)
	region.End()
	if replayed {
		return code
	}
	// While the module compiles, the plan is built and the first credential group connects
	// (docs/contract.md, Decision 16): ahead holds that work when the loader told the metadata
	// early.
	var pending *pendingAhead
	defer func() { pending.wait() }()
	known := func(m plugin.Metadata) {
		pending = startAhead(func() *ahead { return prepareAhead(ctx, deps, f, m, contexts, kube, obs, lookupEnv, root) })
	}
	if rr != nil && rr.attempted {
		// The replay's attempt connected the groups already.
		known = nil
	}
	// The loader names the plugin on its own lines, so it gets the logger without a plugin attribute.
	region = trace.StartRegion(ctx, "load plugin")
	p, meta, err := obs.load(ctx, deps, f, lookupEnv, root, known)
	region.End()
	if err != nil {
		log.Error(err.Error())
		return ExitFail
	}
	defer closePlugin(ctx, p, log)
	early := pending.result()
	log = root.With("plugin", meta.Name)
	obs.plugin = meta.Name
	if early != nil && !early.meta.Equal(meta) {
		// A loader breaking its promise must not leave the run on another plugin's plan.
		early.wait()
		early = nil
	}
	enabled, err := hookenv.Enabled(lookupEnv, meta.EnvPrefix)
	if err != nil {
		log.Error(err.Error())
		return ExitFail
	}
	limit, sources, err := loadConnection(lookupEnv, meta.EnvPrefix)
	if err != nil {
		log.Error(err.Error())
		return ExitFail
	}
	if rr != nil && !rr.meta.Equal(meta) {
		rr = nil
	}
	var connector plugin.Connector
	switch {
	case rr != nil && rr.attempted:
		connector = replay.NewReuse(rr.connector, rr.sessions)
	case early != nil:
		connector = early.connector
	default:
		connector = newConnector(deps, kube, meta, limit, sources, obs, root)
	}
	if meta.Probe {
		return probe(ctx, p, connector, contexts, enabled, meta.EnvPrefix, lookupEnv, log)
	}
	if !enabled {
		log.Info("The hook is disabled", "variable", meta.EnvPrefix+"_ENABLED")
		return ExitOK
	}
	cfg, err := hookenv.Load(lookupEnv, meta.EnvPrefix, meta.BindingName)
	if err != nil {
		log.Error(err.Error())
		return ExitFail
	}
	if cfg.Lease != nil {
		term, code, ok := acquireLease(ctx, deps, cfg.Lease, kubeLimit, obs.recorder(), meta.Name, log)
		if !ok {
			return code
		}
		defer term.stop()
		ctx = term.ctx
		if contexts = leaseContexts(contexts, cfg.BindingName, term.takeover); len(contexts) == 0 {
			return ExitOK
		}
	}
	if (rr == nil || !rr.checkedProfiles) && otherProfileCRs(ctx, kube, cfg, log) {
		return ExitFail
	}
	var plan planner.Plan
	if early != nil {
		// Built ahead from the same metadata and environment, so from the same options.
		plan = early.plan
	} else {
		region = trace.StartRegion(ctx, "plan")
		plan, err = planner.Build(contexts, planOptions(cfg, meta, log))
		region.End()
		if err != nil {
			log.Error(err.Error())
			return ExitFail
		}
	}
	runConnector, runLog := rr.watch(connector, log)
	rn := &runner.Runner{Plugin: p, Connector: runConnector, Kube: kube, Config: cfg, Log: runLog, Sleep: deps.Sleep, Now: deps.Now,
		Metrics: obs.recorder(), Events: obs.events(deps, kube, meta, lookupEnv, log), Journal: deps.Journal}
	start := obs.start
	if deps.Resume != nil {
		rn.Done, start = deps.Resume.Done, deps.Resume.Start
	}
	if cfg.Shard != nil {
		rn.Spared = spareClaims(contexts, cfg, &plan, log)
	}
	if cfg.RunBudget > 0 {
		var cancel context.CancelFunc
		rn.Deadline = start.Add(cfg.RunBudget)
		ctx, cancel = context.WithDeadline(ctx, rn.Deadline.Add(RunGrace))
		defer cancel()
	}
	code = rn.Run(ctx, plan)
	rr.finish(p, meta, code, kube, log)
	if lostLease(ctx, log) {
		return ExitFail
	}
	if code == ExitFail && onlySynchronization(contexts) {
		// shell-operator retries a failed Synchronization in its main queue, where it holds every
		// hook's start-up and this hook's own events until it succeeds.
		obs.failed = true
		log.Warn(MsgSyncFailed, "kind", cfg.Kind)
		return ExitOK
	}
	return code
}

// MsgSyncFailed ends a start-up Synchronization that had failures (Decision 20).
const MsgSyncFailed = "The start-up Synchronization had failures; exiting 0 so that the other hooks start, retrying the CRs on their next event or scheduled run"

// onlySynchronization: the batch is the start-up Synchronization of the hook's watches, the only
// runs shell-operator makes in its main queue rather than the hook's own.
func onlySynchronization(contexts []bindingctx.Context) bool {
	for _, c := range contexts {
		if c.Type() != "Synchronization" {
			return false
		}
	}
	return len(contexts) > 0
}

// probe validates the default credential once per onStartup context (docs/contract.md §8).
func probe(ctx context.Context, p plugin.Plugin, connector plugin.Connector, contexts []bindingctx.Context,
	enabled bool, prefix string, lookupEnv hookenv.LookupFunc, log *slog.Logger) int {
	for _, c := range contexts {
		if c.Binding() != ProbeBinding {
			continue
		}
		if !enabled {
			log.Info("connectivity check skipped; the probe is disabled", "variable", prefix+"_ENABLED")
			continue
		}
		creds, err := probeCredentials(lookupEnv, prefix)
		if err != nil {
			log.Error(err.Error())
			return ExitFail
		}
		glog := log.With("namespace", creds.Namespace, "secret", creds.SecretName, "cloud", creds.CloudName)
		s, err := connector.Connect(ctx, creds)
		if err == nil {
			err = p.WaitForAPI(ctx, s)
		}
		if err != nil {
			glog.Error("connectivity check FAILED", "error", err.Error())
			return ExitFail
		}
		glog.Info("connectivity check passed")
	}
	return ExitOK
}

func probeCredentials(lookupEnv hookenv.LookupFunc, prefix string) (plugin.Credentials, error) {
	secret, err := hookenv.Required(lookupEnv, prefix+"_DEFAULT_SECRET")
	if err != nil {
		return plugin.Credentials{}, err
	}
	cloud, err := hookenv.Required(lookupEnv, prefix+"_DEFAULT_CLOUD")
	if err != nil {
		return plugin.Credentials{}, err
	}
	ns, _ := lookupEnv("POD_NAMESPACE")
	return plugin.Credentials{Namespace: cmp.Or(ns, hookenv.DefaultSecretNamespace), SecretName: secret, CloudName: cloud}, nil
}
