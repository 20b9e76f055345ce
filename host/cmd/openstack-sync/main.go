// Command openstack-sync is the host binary: shell-operator runs `openstack-sync hook --plugin
// <file.wasm> [--config]` for each plugin. This is the one place that wires the concrete parts
// (plugin loader, Kubernetes client, OpenStack connector) into the framework. It links no test
// fake: the demo and the in-process cloud and Kubernetes live in openstack-sync-dev.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/lease"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugincmd"
	"github.com/openstack-sync/openstack-sync/host/internal/runcmd"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
	"github.com/openstack-sync/openstack-sync/host/internal/source"
	"github.com/openstack-sync/openstack-sync/host/internal/supervise"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
)

// version is set at build time with -ldflags "-X main.version=..."; else the module version.
var version = ""

const usage = `usage: openstack-sync <command> [arguments]

commands:
  hook --plugin <file> [--config] [--env-prefix P] [--binding NAME]
          run one plugin as a shell-operator hook
  run --plugin <file> --clouds <clouds.yaml> [--dry-run] CR.yaml...
          one hook pass without Kubernetes, printing statuses and OpenStack requests
  migrate --plugin <file> --from-crd C --to-crd C [--dry-run]
          move a plugin's CRs and markers from the original operator's names to this project's
  plugin new|inspect|verify|push|pull ...
          write, look into and ship a plugin module without a cluster (openstack-sync plugin help)
  version print the version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return hook.ExitUsage
	}
	switch args[0] {
	case "hook":
		return hookCommand(ctx, args[1:], os.LookupEnv, stdout, stderr)
	case "plugin":
		plugincmd.Version = releaseVersion()
		return plugincmd.Main(ctx, args[1:], stdout, stderr)
	case "run":
		return runcmd.Main(ctx, args[1:], stdout, stderr)
	case "migrate":
		return migrateCommand(ctx, args[1:], os.LookupEnv, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "openstack-sync", versionString())
		return hook.ExitOK
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return hook.ExitOK
	}
	fmt.Fprintf(stderr, "openstack-sync: unknown command %q\n%s", args[0], usage)
	return hook.ExitUsage
}

// releaseVersion is the version of a released binary: set at build time (make release), or the
// module version go install fetched (it then has a checksum). A build in a checkout has none, even
// where go stamps one from git (a commit that may exist nowhere else, or +dirty).
func releaseVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Sum != "" {
		return bi.Main.Version
	}
	return ""
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// hookCommand runs the hook subcommand contained as OPENSTACK_SYNC_WASM_TERMINATION says
// (host/internal/supervise): by default a supervisor process around a child that runs the pass
// without termination checks. --config runs no guest code and is answered in this process.
func hookCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	rep, err := supervise.ChildReporter(lookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync hook:", err)
		return hook.ExitFail
	}
	if rep != nil {
		d := deps(sandbox{watch: reportWatch{rep}})
		d.Journal = reportJournal{rep}
		return hook.Main(ctx, d, args, lookupEnv, stdout, stderr)
	}
	trusted, _ := lookupEnv(wasm.EnvTrustedNoInterrupt)
	mode, err := supervise.ModeFromEnv(lookupEnv, trusted == "true")
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync hook:", err)
		return hook.ExitFail
	}
	path, configOnly, ok := hook.Invocation(args)
	if mode != supervise.Process || configOnly || !ok {
		return hook.Main(ctx, deps(sandbox{trusted: mode == supervise.None}), args, lookupEnv, stdout, stderr)
	}
	log, err := hook.NewLogger(lookupEnv, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return hook.ExitFail
	}
	inProcess := func(ctx context.Context, resume *hook.Resume) int {
		d := deps(sandbox{})
		d.Resume = resume
		return hook.Main(ctx, d, args, lookupEnv, stdout, stderr)
	}
	return supervise.Run(ctx, supervise.Config{
		Args: append([]string{"hook"}, args...), Stdin: os.Stdin, Stdout: stdout, Stderr: stderr, Log: log,
		Unsupervised: func(ctx context.Context) int { return inProcess(ctx, nil) },
		Overrun: func(ctx context.Context, o supervise.Overrun, p supervise.Progress) int {
			// Later runs of this module keep the checks on (wasm.MarkOverrun) until it changes.
			marker, err := wasm.MarkOverrun(path, wasm.Options{LookupEnv: lookupEnv}, wasm.Overrun{Plugin: o.Plugin,
				Entry: o.Entry, Object: o.Object, Timeout: o.Timeout.String(), Time: time.Now().UTC()})
			if err != nil {
				log.Warn("cannot remember the overrun; the next run starts without termination checks again",
					"plugin", o.Plugin, "error", err.Error())
			} else {
				log.Info("later runs of this module keep termination checks on until it changes", "plugin", o.Plugin,
					"marker", marker)
			}
			// The pass runs again from where the child was killed: what it finished is not done
			// again, and the run's budget keeps counting from its start.
			return inProcess(ctx, resumeFrom(p, log))
		},
	})
}

// resumeFrom turns what the killed child reported into the pass's resume.
func resumeFrom(p supervise.Progress, log *slog.Logger) *hook.Resume {
	r := &hook.Resume{Start: p.Start}
	for _, line := range p.Steps {
		var s runner.Step
		if err := json.Unmarshal(line, &s); err != nil {
			// The child is this binary; a line it cannot have written is a bug, and the step is
			// done again as before resuming existed.
			log.Warn("ignoring a step the supervised hook process reported", "step", string(line), "error", err.Error())
			continue
		}
		r.Done = append(r.Done, s)
	}
	return r
}

// reportJournal tells the supervisor about each finished step of the pass.
type reportJournal struct{ r *supervise.Reporter }

func (j reportJournal) Done(s runner.Step) {
	if b, err := json.Marshal(s); err == nil {
		j.r.Done(b)
	}
}

// sandbox is how the hook's wasm plugins are contained in this process.
type sandbox struct {
	// watch reports each stretch of guest code to the supervisor, which stops it from outside
	// (termination checks off).
	watch wasm.Watch
	// trusted turns the checks off with nothing to stop a runaway guest (OPENSTACK_SYNC_WASM_TERMINATION=none).
	trusted bool
}

// reportWatch tells the supervisor about guest code through the child's report pipe.
type reportWatch struct{ r *supervise.Reporter }

func (w reportWatch) Begin(c wasm.WatchedCall) uint64 {
	return w.r.Begin(c.Plugin, c.Entry, c.Object, c.Deadline)
}
func (w reportWatch) End(id uint64) { w.r.End(id) }

// newKube is the run's Kubernetes client within the operator's request limit.
func newKube(l hookenv.KubeLimit) (*kube.Client, error) {
	return kube.New(kube.Limit{QPS: float32(l.QPS), Burst: l.Burst})
}

func deps(sb sandbox) hook.Deps {
	return hook.Deps{
		LoadPlugin: func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Plugin, error) {
			return wasm.Load(ctx, path, wasm.Options{EnvPrefix: o.EnvPrefix, LookupEnv: o.LookupEnv, Logger: o.Logger,
				Metrics: o.Metrics, Watch: sb.watch, TrustedNoInterrupt: sb.trusted, Memo: true, KnownMetadata: o.KnownMetadata})
		},
		ReadMetadata: func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Metadata, error) {
			return wasm.ReadMetadata(ctx, path, wasm.Options{EnvPrefix: o.EnvPrefix, LookupEnv: o.LookupEnv, Logger: o.Logger})
		},
		Identify: func(ctx context.Context, path string, o hook.LoadOptions) (hook.Identity, error) {
			meta, digest, cache, err := wasm.Identify(ctx, path, wasm.Options{EnvPrefix: o.EnvPrefix, LookupEnv: o.LookupEnv, Logger: o.Logger})
			return hook.Identity{Meta: meta, Module: digest, Cache: cache}, err
		},
		NewKube: func(l hookenv.KubeLimit) (hook.Kube, error) { return newKube(l) },
		NewLeaseStore: func(l hookenv.KubeLimit) (lease.Store, error) {
			c, err := newKube(l)
			if err != nil {
				return nil, err
			}
			return c.Leases(), nil
		},
		NewConnector: func(s hook.SecretReader, o hook.ConnectorOptions, l *slog.Logger) plugin.Connector {
			return source.WrapConnector(openstack.NewConnector(s, openstack.Options{Logger: l, Plugin: o.Plugin,
				RateLimit: rate.Limit(o.Rate), RateBurst: o.Burst, Metrics: o.Metrics}),
				s, o.Sources, source.Options{Logger: l, Plugin: o.Plugin, Prefix: o.Prefix})
		},
		// Metrics go to shell-operator's METRICS_PATH; Events through the client above.
		NewMetrics: func() hook.MetricsFile { return metrics.NewFile() },
		Events:     true,
	}
}
