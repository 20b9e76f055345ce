// Command openstack-probe is the openstack-sync connectivity probe (docs/contract.md §8): it reconciles no
// CRs; on start-up the host connects with OPENSTACK_PROBE_DEFAULT_SECRET / _DEFAULT_CLOUD and runs
// this plugin's readiness check, which validates the session's Keystone token
// (docs/plugins/openstack-probe.md).
package main

import (
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// tokensPath is Keystone's token resource; the host joins it to the identity endpoint whether or
// not the catalog lists that endpoint with its /v3.
const tokensPath = "v3/auth/tokens"

var metadata = pdk.Metadata{
	Name:      "openstack-probe",
	Noun:      "connectivity probe",
	EnvPrefix: "OPENSTACK_PROBE",
	Probe:     true,
	Grants:    []pdk.Grant{{Service: "identity", Methods: []string{"HEAD"}, Paths: []string{tokensPath}}},
}

func init() {
	pdk.Register(pdk.Plugin{Metadata: metadata, WaitForAPI: validateToken})
}

func main() {}

// validateToken asks Keystone to validate the session's own token (HEAD /v3/auth/tokens). The
// plugin never sees the token: the host authenticates the request and names the same token as the
// subject. Getting a token at all already proves the password; validating it proves Keystone
// accepts what the other plugins will send. A refusal is permanent: waiting will not fix
// credentials.
func validateToken(ctx *pdk.Context) error {
	err := ctx.OpenStack("identity").Head(tokensPath, nil)
	switch pdk.StatusCode(err) {
	case pdk.StatusUnauthorized, pdk.StatusForbidden, pdk.StatusNotFound:
		return pdk.Permanent(fmt.Errorf("Keystone did not accept the token: %w", err))
	}
	return err
}
