// Command openstack-sync-dev holds what a developer runs and production never should: the demo,
// with its in-process OpenStack (fakecloud), Kubernetes (fakekube) and shell-operator simulator.
// It drives the production binary, openstack-sync, as the hook; keeping the fakes here keeps them
// out of that binary.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/openstack-sync/openstack-sync/host/internal/demo"
)

const usage = `usage: openstack-sync-dev <command> [arguments]

commands:
  demo [--plugins DIR] [--examples DIR] [--crds DIR] [--host BINARY] [-v]
          complete hook passes of the openstack-sync binary against an in-process cloud and
          Kubernetes
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
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "openstack-sync-dev: unknown command %q\n%s", args[0], usage)
	return 2
}
