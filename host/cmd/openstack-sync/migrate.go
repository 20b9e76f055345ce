package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"golang.org/x/time/rate"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kube"
	"github.com/openstack-sync/openstack-sync/host/internal/migrate"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
)

const migrateUsage = `usage: openstack-sync migrate --plugin <file> --from-crd <plural>.<group>/<version> --to-crd <plural>.<group>/<version>
                              [--from understack] [--to openstack-sync] [--namespace NS] [--env-prefix P] [--dry-run]

Moves a plugin's CRs, and the ownership markers of the OpenStack resources they claim, from one
profile's identifiers to another's (docs/migrating.md). Stop the operator first. Run --dry-run
first: it prints the plan and has the API server check every write without storing one. A run
stopped anywhere is finished by running it again.
`

// migrateCommand wires the real parts into host/internal/migrate: the Kubernetes client of
// KUBECONFIG (or the pod's service account), the plugin module, and the OpenStack connector
// reading each CR's credentials Secret.
func migrateCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("openstack-sync migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, migrateUsage); fs.PrintDefaults() }
	pluginPath := fs.String("plugin", "", "the plugin module whose CRs move (required)")
	envPrefix := fs.String("env-prefix", "", "the plugin's environment prefix (default: the plugin's)")
	fromCRD := fs.String("from-crd", "", "the CRD the CRs are under, e.g. ironicrunbooks.ironic.understack.rackspace.net/v1alpha1 (required)")
	toCRD := fs.String("to-crd", "", "the CRD they move to, e.g. ironicrunbooks.ironic.openstack-sync.io/v1alpha1 (required)")
	fromName := fs.String("from", string(profile.Understack), "the profile the CRs and resources move from")
	toName := fs.String("to", string(profile.OpenStackSync), "the profile they move to")
	namespace := fs.String("namespace", "", "move only this namespace's CRs (default: every namespace)")
	dryRun := fs.Bool("dry-run", false, "print the plan; the API server checks every write and stores none")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return hook.ExitOK
		}
		return hook.ExitUsage
	}
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "openstack-sync migrate: "+format+"\n", a...)
		fs.Usage()
		return hook.ExitUsage
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	if *pluginPath == "" || *fromCRD == "" || *toCRD == "" {
		return usage("--plugin, --from-crd and --to-crd are required")
	}
	var cfg migrate.Config
	var err error
	if cfg.FromCRD, err = migrate.ParseCRD(*fromCRD); err != nil {
		return usage("--from-crd: %v", err)
	}
	if cfg.ToCRD, err = migrate.ParseCRD(*toCRD); err != nil {
		return usage("--to-crd: %v", err)
	}
	if cfg.From, err = profile.Parse(*fromName); err != nil {
		return usage("--from %v", err)
	}
	if cfg.To, err = profile.Parse(*toName); err != nil {
		return usage("--to %v", err)
	}
	if cfg.From == cfg.To || cfg.FromCRD == cfg.ToCRD {
		return usage("--from and --to, and --from-crd and --to-crd, must differ")
	}
	cfg.Namespace, cfg.DryRun = *namespace, *dryRun

	log, err := hook.NewLogger(lookupEnv, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return hook.ExitFail
	}
	client, err := kube.New(kube.Limit{})
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync migrate:", err)
		return hook.ExitFail
	}
	p, err := wasm.Load(ctx, *pluginPath, wasm.Options{EnvPrefix: *envPrefix, LookupEnv: lookupEnv, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync migrate:", err)
		return hook.ExitFail
	}
	defer p.Close(ctx)
	// The plugin's own request limit (<P>_REQUEST_RATE, _REQUEST_BURST) bounds migrate's
	// OpenStack requests as it bounds the hook's.
	prefix := *envPrefix
	if prefix == "" {
		prefix = p.Metadata().EnvPrefix
	}
	limit, err := hookenv.LoadRequestLimit(lookupEnv, prefix)
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync migrate:", err)
		return hook.ExitFail
	}
	m := &migrate.Migrator{Config: cfg, Kube: client, Plugin: p, Out: stdout, Log: log,
		Connector: openstack.NewConnector(client, openstack.Options{Logger: log, Plugin: p.Metadata().Name,
			RateLimit: rate.Limit(limit.Rate), RateBurst: limit.Burst})}
	return m.Run(ctx)
}
