package plugincmd

import (
	"fmt"
	"io"

	"golang.org/x/mod/semver"

	"github.com/openstack-sync/openstack-sync/host/internal/scaffold"
)

func newPlugin(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("new", stderr)
	var o scaffold.Options
	var ownership string
	dir := fs.String("dir", "", "where to write the module (default ./NAME); must not exist or be empty")
	fs.StringVar(&o.Service, "service", "", "the OpenStack service: identity (keystone), network (neutron) or baremetal (ironic) (default NAME's first word)")
	fs.StringVar(&o.Collection, "collection", "", "the collection to manage, e.g. projects or address-scopes (default NAME without its first word)")
	fs.StringVar(&ownership, "ownership", "", "where the plugin marks what it made: tag, name-prefix, description, extra (Ironic) or none (default the best the resource has)")
	fs.StringVar(&o.Module, "module", "", "the Go module path (default example.org/NAME)")
	fs.StringVar(&o.Group, "group", "", "the CRD's API group (default example.org)")
	fs.StringVar(&o.Kind, "kind", "", "the CRD's kind (default from NAME, e.g. KeystoneProject)")
	fs.StringVar(&o.Path, "path", "", "a Neutron collection openstack-sync does not know, e.g. v2.0/widgets (generic: the embedded cloud predicts little)")
	fs.StringVar(&o.Key, "key", "", "with --path: the collection's singular body key (default from the path, e.g. widget)")
	fs.StringVar(&o.PDK, "pdk", "", "replace the PDK module with this path, relative to the module (default, in a binary built from a checkout: ./third_party/openstack-sync/pdk)")
	fs.StringVar(&o.HostModule, "host-module", "", "replace the openstack-sync module with this path (default, in a binary built from a checkout: ./third_party/openstack-sync)")
	// Flags may come after NAME too: parse what follows each name again.
	var names []string
	for {
		if err := fs.Parse(args); err != nil {
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		names = append(names, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(names) != 1 {
		fmt.Fprintln(stderr, "openstack-sync plugin new: want exactly one NAME, e.g. keystone-projects")
		return exitUsage
	}
	o.Name, o.Ownership, o.Version = names[0], scaffold.Ownership(ownership), Version
	if *dir == "" {
		*dir = o.Name
	}
	files, err := scaffold.Write(*dir, o)
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync plugin new:", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "wrote %s:\n", *dir)
	for _, f := range files {
		fmt.Fprintf(stdout, "  %s\n", f)
	}
	if semver.IsValid(o.Version) && o.PDK == "" && o.HostModule == "" {
		fmt.Fprintf(stdout, "next: cd %s && go mod tidy && make test build\n", *dir)
	} else {
		fmt.Fprintf(stdout, "next: put openstack-sync's source where go.mod's replace lines point, then\n  cd %s && go mod tidy && make test build\n", *dir)
	}
	return exitOK
}
