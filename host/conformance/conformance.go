// Package conformance is the plugin conformance kit: it loads a compiled plugin (.wasm, from any
// language) into the real host runtime, runs it against an in-process OpenStack (Keystone,
// Neutron, Ironic and the collections an author registers) through the hook's own passes, and
// checks the contract every plugin must keep:
//
//   - metadata: the module passes every load-time check (`openstack-sync plugin verify`) and
//     names itself (name, noun, env prefix).
//   - converge: the CRs reconcile to Synced, and a second pass over the converged cloud sends no
//     write.
//   - memo: with the convergence memo on, converged CRs stay converged without a write and with
//     the statuses of a full pass, and once what the first CR made is deleted by hand the next
//     pass notices it, so the evidence the plugin gives the memo is the OpenStack state it compares.
//   - cleanup: with PRUNE=true, deleting one CR deletes only resources the plugin created for
//     it; the resources of the other CRs and the unowned resources made by hand stay (the other
//     CRs still converge without a write), and the CR's finalizer is released.
//   - grants: no request of any pass is refused by the plugin's declared grants.
//   - bad specs: an empty spec, an unknown field and a wrong type in each field give an error
//     (or an InvalidConfiguration lifecycle status), a very long string in each string field
//     gives an error or success; none is a trap, panic, timeout or memory exhaustion, and the
//     plugin still reconciles a good spec afterwards.
//
// A connectivity probe (metadata Probe) is checked for metadata, readiness against the
// in-process cloud and grants.
//
// Use it from a Go test of your plugin's module:
//
//	func TestConformance(t *testing.T) {
//		suite, err := conformance.Load("testdata/conformance.yaml")
//		require.NoError(t, err)
//		suite.Plugin = conformance.Build(t, ".")
//		suite.Run(t)
//	}
//
// It lives in the host's module, not the PDK's, because it runs the host runtime and the
// in-process cloud (host/internal/...), which only code under host/ may import; the PDK module
// stays free of the host's dependencies, and only your tests import this package.
package conformance

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
)

// Collection is a resource collection of your own the in-process cloud serves (generic JSON CRUD
// on the Neutron endpoint with names, filters and, unless Tags is false, Neutron's tags), so a
// resource type the cloud does not know can be tested.
type Collection = fakecloud.Collection

// The clouds of the in-process cloud's clouds.yaml.
const (
	// AdminCloud is an admin of the admin project (the default).
	AdminCloud = fakecloud.AdminCloud
	// MemberCloud is a member of the demo project.
	MemberCloud = fakecloud.MemberCloud
	// SystemCloud is an admin with a system-scoped token.
	SystemCloud = fakecloud.SystemCloud
)

// CR is one custom resource of the plugin's kind.
type CR struct {
	Name string `json:"name"`
	// Spec is the CR's spec without cloudCredentialsRef (the kit sets it).
	Spec map[string]any `json:"spec"`
}

// Request is an OpenStack request the kit sends itself, with the suite's cloud, to make a
// resource by hand before the plugin runs.
type Request struct {
	Service string `json:"service"`
	Method  string `json:"method"`
	// Path is relative to the service endpoint, e.g. "v2.0/address-scopes".
	Path         string         `json:"path"`
	Microversion string         `json:"microversion,omitempty"`
	Body         map[string]any `json:"body,omitempty"`
}

// Suite describes the plugin to check. Load reads one from a file.
type Suite struct {
	// Plugin is the compiled module (Build makes one from a Go main package).
	Plugin string `json:"plugin,omitempty"`
	// APIVersion (group/version) and Kind are the plugin's CRD's.
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	// CRs are good CRs, at least two, with distinct OpenStack names: all are created and
	// converged, then the last is deleted. The first is also the good spec the bad ones vary.
	CRs []CR `json:"crs,omitempty"`
	// Cloud is the cloud the CRs use; default AdminCloud.
	Cloud string `json:"cloud,omitempty"`
	// Collections are served by the in-process cloud besides its own resources.
	Collections []Collection `json:"collections,omitempty"`
	// Unowned are requests (POSTs) that make resources by hand before the plugin runs, as an
	// operator would: no CR claims their names, and the plugin must never delete them.
	Unowned []Request `json:"unowned,omitempty"`
	// Settings are hook settings without the plugin's prefix, as the chart's hook.env.
	Settings map[string]string `json:"settings,omitempty"`
	// IronicMaxVersion is the newest Ironic microversion of the in-process cloud (default that
	// of the project's real test cloud).
	IronicMaxVersion string `json:"ironicMaxVersion,omitempty"`
	// LongString is the length of the very long strings of the bad specs; default 256 KiB.
	LongString int `json:"longString,omitempty"`
	// Nautobot, when set, is an in-process Nautobot allow-listed for the plugin (a source
	// outside OpenStack, docs/abi.md section 8) for CRs that name one in spec.nautobot: the kit
	// points their spec.nautobot.url at it and serves the token their tokenSecretRef names.
	Nautobot *Nautobot `json:"nautobot,omitempty"`
}

// Nautobot is the IPAM of the kit's in-process Nautobot (host/internal/fakenautobot): its site
// (the hook's SITE), locations (name, parent) and prefixes (id, prefix, type, status, namespace,
// tags, locations).
type Nautobot = fakenautobot.Seed

// Load reads a suite from a YAML (or JSON) file with the fields of Suite.
func Load(path string) (Suite, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Suite{}, err
	}
	var s Suite
	if err := yaml.UnmarshalStrict(raw, &s); err != nil {
		return Suite{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
