package hook

import (
	"cmp"
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/events"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/runner"
)

// MetricsFile is the run's metrics: recorded during the run, written to METRICS_PATH at its end.
type MetricsFile interface {
	metrics.Recorder
	Flush(metricsPath, group string) error
}

// RunGrace is how long past its budget a run may finish what it started (a plugin call, a
// prune, the releases) before its context is cancelled.
const RunGrace = 2 * time.Minute

// EventController prefixes the plugin's name in reportingController.
const EventController = "openstack-sync.io/"

// observer measures one run.
type observer struct {
	file  MetricsFile
	start time.Time
	// plugin is the plugin label: the file's base name until the plugin names itself.
	plugin string
	// group is the hook's metric group. It must not depend on anything learnt during the run: a
	// run that ends early would otherwise write the same series under a second group, and
	// shell-operator would then serve them twice.
	group     string
	lookupEnv hookenv.LookupFunc
	// failed: the run failed though it exits 0 (Decision 20); its metrics say so.
	failed bool
}

func startObserving(deps Deps, f flags, name string, lookupEnv hookenv.LookupFunc) *observer {
	o := &observer{start: time.Now(), plugin: name, lookupEnv: lookupEnv,
		group: "openstack-sync/" + filepath.Base(f.plugin)}
	if f.binding != "" {
		o.group += "/" + f.binding
	}
	if deps.NewMetrics != nil {
		o.file = deps.NewMetrics()
	}
	return o
}

// recorder is nil (records nothing) when no metrics are wired.
func (o *observer) recorder() metrics.Recorder {
	if o.file == nil {
		return nil
	}
	return o.file
}

// load loads the plugin and measures how long that took.
func (o *observer) load(ctx context.Context, deps Deps, f flags, lookupEnv hookenv.LookupFunc, root *slog.Logger,
	known func(plugin.Metadata)) (plugin.Plugin, plugin.Metadata, error) {
	withMetrics := deps
	withMetrics.LoadPlugin = func(ctx context.Context, path string, opts LoadOptions) (plugin.Plugin, error) {
		opts.Metrics = o.recorder()
		return deps.LoadPlugin(ctx, path, opts)
	}
	start := time.Now()
	p, meta, err := load(ctx, withMetrics, f, lookupEnv, root, known)
	if err == nil {
		metrics.Observe(o.recorder(), metrics.PluginLoad, time.Since(start).Seconds(), meta.Name)
	}
	return p, meta, err
}

// events is the run's Event recorder, nil when Events are off.
func (o *observer) events(deps Deps, kube *lazyKube, meta plugin.Metadata, lookupEnv hookenv.LookupFunc, log *slog.Logger) runner.EventRecorder {
	if !deps.Events {
		return nil
	}
	host, _ := lookupEnv("HOSTNAME")
	return &events.Recorder{API: kube, Controller: EventController + meta.Name,
		Instance: cmp.Or(host, "openstack-sync"), Log: log, Now: deps.Now}
}

// finish counts the run and writes the metrics file. A metrics failure is logged, never fatal:
// the run's own work is done by then.
func (o *observer) finish(code int, log *slog.Logger) {
	if o.file == nil {
		return
	}
	result := "ok"
	if code != ExitOK || o.failed {
		result = "failed"
	}
	metrics.Add(o.file, metrics.Runs, 1, o.plugin, result)
	metrics.Observe(o.file, metrics.RunDuration, time.Since(o.start).Seconds(), o.plugin)
	path, _ := o.lookupEnv(metrics.PathEnv)
	if err := o.file.Flush(path, o.group); err != nil {
		log.Warn("could not write the run's metrics", "error", err.Error())
	}
}
