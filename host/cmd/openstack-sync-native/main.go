// Command openstack-sync-native is the benchmark's native test host (docs/benchmarks.md): the
// production hook (same hook, planner, runner, Kubernetes client and OpenStack sessions) with
// plugins built natively (pdk.ServeNative) instead of sandboxed in wasm, so the benchmark reads
// the sandbox's cost as a ratio. `openstack-sync-native hook --plugin <native executable>`.
// Never ship it: a native plugin is not contained.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/nativeplugin"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/source"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "hook" {
		fmt.Fprintln(os.Stderr, "usage: openstack-sync-native hook --plugin <native plugin> [--config]")
		os.Exit(hook.ExitUsage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := hook.Main(ctx, hook.Deps{
		LoadPlugin: func(ctx context.Context, path string, o hook.LoadOptions) (plugin.Plugin, error) {
			return nativeplugin.Load(ctx, path, wasm.Options{EnvPrefix: o.EnvPrefix, LookupEnv: o.LookupEnv, Logger: o.Logger, Memo: true})
		},
		NewKube: func(l hookenv.KubeLimit) (hook.Kube, error) {
			return kube.New(kube.Limit{QPS: float32(l.QPS), Burst: l.Burst})
		},
		NewConnector: func(s hook.SecretReader, o hook.ConnectorOptions, l *slog.Logger) plugin.Connector {
			return source.WrapConnector(openstack.NewConnector(s, openstack.Options{Logger: l, Plugin: o.Plugin,
				RateLimit: rate.Limit(o.Rate), RateBurst: o.Burst}), s, o.Sources, source.Options{Logger: l, Plugin: o.Plugin, Prefix: o.Prefix})
		},
	}, os.Args[2:], os.LookupEnv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
