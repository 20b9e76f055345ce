// Command openstack-sync-dev holds what a developer runs and production never should: the demo,
// with its in-process OpenStack (fakecloud), Kubernetes (fakekube) and shell-operator simulator,
// and `run --embedded-cloud`, one hook pass against the in-process OpenStack (with
// --embedded-nautobot, the in-process Nautobot too).
// It drives the production binary, openstack-sync, as the hook; keeping the fakes here keeps them
// out of that binary.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/openstack-sync/openstack-sync/host/internal/demo"
	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/runcmd"
)

// embeddedCloud starts the in-process cloud for `run --embedded-cloud`, with the author's own
// collections and what a previous run saved; its admin cloud is the default, as the first-party
// plugins need an admin.
func embeddedCloud(collections []string, saved []byte) (runcmd.Embedded, error) {
	var cols []fakecloud.Collection
	for _, s := range collections {
		col, known, err := fakecloud.ParseCollection(s)
		if err != nil {
			return runcmd.Embedded{}, fmt.Errorf("--collection: %w", err)
		}
		if !known {
			cols = append(cols, col)
		}
	}
	c := fakecloud.New(fakecloud.Options{})
	if saved != nil {
		if err := c.Restore(saved); err != nil {
			c.Close()
			return runcmd.Embedded{}, fmt.Errorf("--state: %w", err)
		}
	}
	for _, col := range cols {
		if err := c.AddCollection(col); err != nil && !(saved != nil && strings.Contains(err.Error(), "already registered")) {
			c.Close()
			return runcmd.Embedded{}, fmt.Errorf("--collection: %w", err)
		}
	}
	return runcmd.Embedded{CloudsYAML: []byte(c.CloudsYAML()), Cloud: fakecloud.AdminCloud, Save: c.Save, Stop: c.Close}, nil
}

const usage = `usage: openstack-sync-dev <command> [arguments]

commands:
  demo [--plugins DIR] [--examples DIR] [--crds DIR] [--host BINARY] [-v]
          complete hook passes of the openstack-sync binary against an in-process cloud and
          Kubernetes
  run --plugin <file> --embedded-cloud [--state FILE] [--collection SERVICE:PATH:KEY[:notags]]... [--dry-run] CR.yaml...
          openstack-sync run (one hook pass without Kubernetes) against a fresh in-process cloud
          (Keystone projects, domains, groups and roles, Neutron address scopes, address
          groups, security groups and networks, and Ironic runbooks and deploy templates are
          always served, with the real services' rules; --collection describes any other
          resource, generically); --clouds works as
          well; --embedded-nautobot SEED.yaml serves the subnet pools' Nautobot
  nautobot --seed SEED.yaml --token-file FILE
          serve the IPAM of SEED.yaml from an in-process Nautobot on loopback, accepting the token
          in FILE, until interrupted; its URL is the first line of the output (the e2e tier's)
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
		return 2
	}
	switch args[0] {
	case "demo":
		return demo.Main(ctx, args[1:], stdout, stderr)
	case "run":
		return runcmd.MainWithNautobot(ctx, args[1:], stdout, stderr, embeddedCloud, embeddedNautobot)
	case "nautobot":
		return serveNautobot(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "openstack-sync-dev: unknown command %q\n%s", args[0], usage)
	return 2
}
