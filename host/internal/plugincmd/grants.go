package plugincmd

import (
	"fmt"
	"os"

	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// readGrants reads an operator grant list as the chart writes it into <PREFIX>_GRANTS.
func readGrants(path string) ([]grant.Grant, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--grants: %w", err)
	}
	gs, err := grant.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("--grants %s: %w", path, err)
	}
	return gs, nil
}
