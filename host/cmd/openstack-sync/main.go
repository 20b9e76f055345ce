// Command openstack-sync is the host binary: shell-operator runs `openstack-sync hook --plugin
// <file.wasm> [--config]` for each plugin. This is the one place that wires the concrete parts
// (plugin loader, Kubernetes client, OpenStack connector) into the framework. It links no test
// fake: the demo and the in-process cloud and Kubernetes live in openstack-sync-dev.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/lease"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/plugincmd"
	"github.com/openstack-sync/openstack-sync/host/internal/runcmd"
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
		return hook.Main(ctx, deps(), args[1:], os.LookupEnv, stdout, stderr)
	case "plugin":
		return plugincmd.Main(ctx, args[1:], stdout, stderr)
	case "run":
		return runcmd.Main(ctx, args[1:], stdout, stderr)
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

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func deps() hook.Deps {
	return hook.Deps{
		LoadPlugin: func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Plugin, error) {
			return wasm.Load(ctx, path, wasm.Options{EnvPrefix: o.EnvPrefix, LookupEnv: o.LookupEnv, Logger: o.Logger,
				Metrics: o.Metrics})
		},
		ReadMetadata: func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Metadata, error) {
			return wasm.ReadMetadata(ctx, path, wasm.Options{EnvPrefix: o.EnvPrefix, LookupEnv: o.LookupEnv, Logger: o.Logger})
		},
		NewKube: func() (hook.Kube, error) { return kube.New() },
		NewLeaseStore: func() (lease.Store, error) {
			c, err := kube.New()
			if err != nil {
				return nil, err
			}
			return c.Leases(), nil
		},
		NewConnector: func(s hook.SecretReader, o hook.ConnectorOptions, l *slog.Logger) plugin.Connector {
			return openstack.NewConnector(s, openstack.Options{Logger: l, Plugin: o.Plugin,
				RateLimit: rate.Limit(o.Rate), RateBurst: o.Burst, Metrics: o.Metrics})
		},
		// Metrics go to shell-operator's METRICS_PATH; Events through the client above.
		NewMetrics: func() hook.MetricsFile { return metrics.NewFile() },
		Events:     true,
	}
}
