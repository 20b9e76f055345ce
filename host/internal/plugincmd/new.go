package plugincmd

import (
	"fmt"
	"io"

	"github.com/openstack-sync/openstack-sync/host/internal/scaffold"
)

func newPlugin(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("new", stderr)
	var o scaffold.Options
	dir := fs.String("dir", "", "where to write the module (default ./NAME); must not exist or be empty")
	fs.StringVar(&o.Module, "module", "", "the Go module path (default example.org/NAME)")
	fs.StringVar(&o.Group, "group", "", "the CRD's API group (default example.org)")
	fs.StringVar(&o.Kind, "kind", "", "the CRD's kind (default from NAME, e.g. NeutronAddressScope)")
	fs.StringVar(&o.Path, "path", "", "the Neutron collection to manage (default from NAME, e.g. v2.0/address-scopes)")
	fs.StringVar(&o.Key, "key", "", "the collection's singular body key (default from the path, e.g. address_scope)")
	fs.StringVar(&o.PDK, "pdk", "", "replace path of the PDK module, relative to the module (default ./third_party/openstack-sync/pdk)")
	fs.StringVar(&o.HostModule, "host-module", "", "replace path of the openstack-sync module (default ./third_party/openstack-sync)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "openstack-sync plugin new: want exactly one NAME, e.g. neutron-address-scopes")
		return exitUsage
	}
	o.Name = fs.Arg(0)
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
	fmt.Fprintf(stdout, "next: check out openstack-sync where go.mod's replace lines point, then\n  cd %s && go mod tidy && make test build\n", *dir)
	return exitOK
}
