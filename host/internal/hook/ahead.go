package hook

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// ahead is the work a run does while its plugin's module compiles, once the loader has told the
// metadata (LoadOptions.KnownMetadata): the plan, and the first credential group's session,
// connected (its Secret read) and authenticated. A converged single-CR run spends most of its
// wall time compiling from the cache on one core; against a real cloud the Keystone round trip
// alone is tens of milliseconds that no longer add to it.
//
// Nothing here writes anything or runs guest code, so a load that fails afterwards leaves
// nothing behind but a token. Runs that elect a leader, probe plugins and disabled hooks do
// nothing ahead: a replica that is not the leader must not connect, and the others connect to
// nothing.
type ahead struct {
	meta      plugin.Metadata
	plan      planner.Plan
	connector *aheadConnector
}

func prepareAhead(ctx context.Context, deps Deps, f flags, known plugin.Metadata, contexts []bindingctx.Context,
	kube *lazyKube, obs *observer, lookupEnv hookenv.LookupFunc, root *slog.Logger) *ahead {
	meta, err := completeMetadata(f, known)
	if err != nil || meta.Probe {
		return nil
	}
	// Every refusal below is the run's to report, after the load, exactly as without ahead.
	if enabled, err := hookenv.Enabled(lookupEnv, meta.EnvPrefix); err != nil || !enabled {
		return nil
	}
	limit, sources, err := loadConnection(lookupEnv, meta.EnvPrefix)
	if err != nil {
		return nil
	}
	cfg, err := hookenv.Load(lookupEnv, meta.EnvPrefix, meta.BindingName)
	if err != nil || cfg.Lease != nil {
		return nil
	}
	plan, err := planner.Build(contexts, planOptions(cfg, meta, root.With("plugin", meta.Name)))
	if err != nil {
		return nil
	}
	a := &ahead{meta: meta, plan: plan,
		connector: &aheadConnector{Connector: newConnector(deps, kube, meta, limit, sources, obs, root), done: make(chan struct{})}}
	var first *plugin.Credentials
	for _, cr := range plan.Reconcile {
		if first == nil || cr.Credentials.Compare(*first) < 0 {
			first = &cr.Credentials
		}
	}
	if first == nil {
		close(a.connector.done)
		return a
	}
	a.connector.creds, a.connector.pending = *first, true
	go a.connector.connect(ctx)
	return a
}

// wait returns once the work ahead is done, so that no request of it outlives the run.
func (a *ahead) wait() {
	if a != nil {
		<-a.connector.done
	}
}

// pendingAhead is prepareAhead running beside the loader, so that the module's compile starts
// at once: the plan of a large binding context is CPU that the compile, on one core, need not
// wait for (1,000 site runbooks: ~70 ms before the compile began; docs/benchmarks.md, "Start-up
// of a hook run").
type pendingAhead struct {
	done  chan struct{}
	ahead *ahead
	// panicked is what prepare panicked with, raised again by result on the run's goroutine,
	// where Main turns it into the run's logged failure (docs/contract.md §1.6).
	panicked error
}

func startAhead(prepare func() *ahead) *pendingAhead {
	p := &pendingAhead{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer func() {
			if r := recover(); r != nil {
				p.panicked = fmt.Errorf("preparing the run beside the load: %T: %v\n%s", r, r, debug.Stack())
			}
		}()
		p.ahead = prepare()
	}()
	return p
}

// result waits for the plan (not the connection); nil when nothing was prepared.
func (p *pendingAhead) result() *ahead {
	if p == nil {
		return nil
	}
	<-p.done
	if err := p.panicked; err != nil {
		p.panicked = nil // raised once; the run's deferred wait then finds nothing
		panic(err)
	}
	return p.ahead
}

// wait returns once the whole work ahead is done.
func (p *pendingAhead) wait() { p.result().wait() }

// aheadConnector answers the first Connect of the group it connected ahead with that
// connection's outcome, as if the runner had made it then; every other Connect goes through.
type aheadConnector struct {
	plugin.Connector
	creds   plugin.Credentials
	pending bool // creds are being connected ahead
	done    chan struct{}
	session plugin.Session
	err     error
	once    sync.Once
}

func (c *aheadConnector) connect(ctx context.Context) {
	defer close(c.done)
	c.session, c.err = c.Connector.Connect(ctx, c.creds)
	if a, ok := c.session.(plugin.Authenticator); ok && c.err == nil {
		// A failure is the first request's to meet again, with its own attempts.
		_ = a.Authenticate(ctx)
	}
}

func (c *aheadConnector) Connect(ctx context.Context, creds plugin.Credentials) (plugin.Session, error) {
	first := false
	if c.pending && creds == c.creds {
		c.once.Do(func() { first = true })
	}
	if !first {
		return c.Connector.Connect(ctx, creds)
	}
	select {
	case <-c.done:
		return c.session, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func newConnector(deps Deps, kube *lazyKube, meta plugin.Metadata, limit hookenv.RequestLimit, sources []hookenv.Source,
	obs *observer, root *slog.Logger) plugin.Connector {
	// The session names the plugin on its own lines (and in its User-Agent), so it gets the root logger.
	return deps.NewConnector(kube, ConnectorOptions{Plugin: meta.Name, RequestLimit: limit, Metrics: obs.recorder(),
		Sources: sources, Prefix: meta.EnvPrefix}, root)
}

// loadConnection reads what the plugin's sessions are allowed: the OpenStack request limit and
// the sources outside OpenStack.
func loadConnection(lookupEnv hookenv.LookupFunc, prefix string) (hookenv.RequestLimit, []hookenv.Source, error) {
	limit, err := hookenv.LoadRequestLimit(lookupEnv, prefix)
	if err != nil {
		return hookenv.RequestLimit{}, nil, err
	}
	sources, err := hookenv.LoadSources(lookupEnv, prefix)
	return limit, sources, err
}

func planOptions(cfg hookenv.Config, meta plugin.Metadata, log *slog.Logger) planner.Options {
	opts := planner.Options{Binding: cfg.BindingName, Kind: cfg.Kind, PodNamespace: cfg.PodNamespace, Log: log}
	if meta.Lifecycle {
		opts.ProgressBinding = hookenv.ProgressBinding
	}
	return opts
}
