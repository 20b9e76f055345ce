package pluginpass

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/fakekube"
	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// The subnet pools plugin on both clouds, with its source of truth, an in-process Nautobot, on
// loopback (Nautobot cannot run here; the fake follows its published REST API).

const (
	poolMarker = "openstack-sync.io/managed-by=neutron-subnet-pools"
	poolGroup  = "openstack-sync.io/credential-group=" + credentialGroup
	nbToken    = "f3a9c0de1b2a4c5d6e7f8091a2b3c4d5e6f70819"
)

// poolsEnv is the plugin's env with a Nautobot allow-listed for it and the token's Secret in the
// CRs' namespace.
func poolsEnv(t *testing.T, b backend, prune bool) (*env, *fakenautobot.Server) {
	e := newEnv(t, b, setup{plugin: "neutron-subnet-pools", crd: "neutron.openstack-sync.io/v1alpha1",
		kind: "NeutronSubnetPool", prefix: "NEUTRON_SUBNET_POOL", prune: prune})
	nb := fakenautobot.New()
	t.Cleanup(nb.Close)
	nb.AddToken(fakenautobot.Token{Key: nbToken})
	nb.AddLocation(fakenautobot.Location{Name: "iad3"})
	nb.AddLocation(fakenautobot.Location{Name: "iad3-dev", Parent: "iad3"})
	u, err := hookenv.SourceURL(nb.URL())
	require.NoError(t, err)
	e.vars["NEUTRON_SUBNET_POOL_SOURCES"] = hookenv.SourcesJSON([]hookenv.Source{{Name: "nautobot", URL: u}})
	e.vars["NEUTRON_SUBNET_POOL_SITE"] = "iad3-dev"
	e.addSecret("nautobot-token", map[string]string{"token": nbToken + "\n"})
	return e, nb
}

func (e *env) addSecret(name string, data map[string]string) {
	e.t.Helper()
	d := map[string]any{}
	for k, v := range data {
		d[k] = []byte(v)
	}
	_, err := e.kube.Create(fakekube.SecretResource, namespace, fakekube.Object{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": name, "namespace": namespace}, "data": d})
	require.NoError(e.t, err)
}

// poolSpec is a CR's spec: the pool's policy, and its prefixes by Nautobot id.
func poolSpec(nbURL, name string, scope map[string]any, ids ...string) string {
	var refs []any
	for _, id := range ids {
		refs = append(refs, map[string]any{"id": id})
	}
	s := map[string]any{"name": name, "address_scope": scope, "minimum_prefix_length": 26, "default_prefix_length": 27,
		"maximum_prefix_length": 28, "shared": false, "tags": []any{"tenant"},
		"nautobot": map[string]any{"url": nbURL, "tokenSecretRef": map[string]any{"secretName": "nautobot-token", "key": "token"},
			"prefix_refs": refs, "require": map[string]any{"status": "Active", "type": "pool", "tags": []any{"openstack-subnet-pool"}}}}
	raw, _ := json.Marshal(s)
	return string(raw) // JSON is YAML
}

type subnetPool struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Prefixes       []string `json:"prefixes"`
	Tags           []string `json:"tags"`
	AddressScopeID *string  `json:"address_scope_id"`
	Shared         bool     `json:"shared"`
	MinPrefixLen   any      `json:"min_prefixlen"`
}

type addressScope struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	IPVersion int    `json:"ip_version"`
	Shared    bool   `json:"shared"`
}

func (e *env) poolsNamed(name string) []subnetPool {
	var body struct{ Subnetpools []subnetPool }
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/subnetpools", Query: url.Values{"name": {name}}}, &body)
	return body.Subnetpools
}

func (e *env) scopesNamed(name string) []addressScope {
	var body struct {
		AddressScopes []addressScope `json:"address_scopes"`
	}
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "GET", Path: "v2.0/address-scopes", Query: url.Values{"name": {name}}}, &body)
	return body.AddressScopes
}

func (e *env) addScope(name string) addressScope {
	var body struct {
		AddressScope addressScope `json:"address_scope"`
	}
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "POST", Path: "v2.0/address-scopes",
		Body: jsonBody(map[string]any{"address_scope": map[string]any{"name": name, "ip_version": 4, "shared": true}})}, &body)
	return body.AddressScope
}

func (e *env) addPool(name string, shared bool, tags []string, prefixes ...string) subnetPool {
	var body struct {
		Subnetpool subnetPool `json:"subnetpool"`
	}
	e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "POST", Path: "v2.0/subnetpools",
		Body: jsonBody(map[string]any{"subnetpool": map[string]any{"name": name, "prefixes": prefixes, "shared": shared,
			"min_prefixlen": 26, "default_prefixlen": 27, "max_prefixlen": 28}})}, &body)
	if len(tags) > 0 {
		e.call(fakecloud.AdminCloud, plugin.Request{Service: "network", Method: "PUT", Path: "v2.0/subnetpools/" + body.Subnetpool.ID + "/tags",
			Body: jsonBody(map[string]any{"tags": tags})}, nil)
	}
	return body.Subnetpool
}

// nbPrefix seeds a Nautobot prefix of the env's site that passes the CRs' guardrails.
func nbPrefix(nb *fakenautobot.Server, cidr string) string {
	return nb.AddPrefix(fakenautobot.Prefix{Prefix: cidr, Type: "pool", Tags: []string{"openstack-subnet-pool"},
		Locations: []string{"iad3-dev"}}).ID
}

// lookups are the plugin's prefix lookups Nautobot received.
func lookups(nb *fakenautobot.Server) int {
	n := 0
	for _, r := range nb.Requests() {
		if r.Path == "/api/ipam/prefixes/" {
			n++
		}
	}
	return n
}

// The address scope rules (create, adopt by name, by id, never delete), the pool's life (create
// with merged prefixes, converge with one Nautobot lookup per prefix reference, grow, a shrink
// reported, adoption of a pool other tooling made) and prune (only owned pools no CR claims).
func subnetPoolLifecycle(t *testing.T, b backend) {
	e, nb := poolsEnv(t, b, true)
	k := 10 + rangeBase()
	a1, a2 := nbPrefix(nb, fmt.Sprintf("10.%d.0.0/24", k)), nbPrefix(nb, fmt.Sprintf("10.%d.1.0/24", k))
	grow := nbPrefix(nb, fmt.Sprintf("10.%d.8.0/24", k))
	bID, cID, lID := nbPrefix(nb, fmt.Sprintf("10.%d.16.0/24", k)), nbPrefix(nb, fmt.Sprintf("10.%d.32.0/24", k)),
		nbPrefix(nb, fmt.Sprintf("10.%d.64.0/24", k))
	existing, byID := e.addScope(e.name("as-existing")), e.addScope(e.name("as-byid"))
	legacy := e.addPool(e.name("legacy"), true, nil, fmt.Sprintf("10.%d.64.0/24", k))
	handmade := e.addPool(e.name("handmade"), false, nil, fmt.Sprintf("10.%d.128.0/24", k))

	e.apply("a", poolSpec(nb.URL(), e.name("pool-a"), map[string]any{"name": e.name("as-new")}, a1, a2))
	e.apply("b", poolSpec(nb.URL(), e.name("pool-b"), map[string]any{"name": existing.Name, "create": false}, bID))
	e.apply("c", poolSpec(nb.URL(), e.name("pool-c"), map[string]any{"id": byID.ID}, cID))
	legacySpec := strings.Replace(poolSpec(nb.URL(), legacy.Name, map[string]any{"name": existing.Name}, lID), `"shared":false`, `"shared":true`, 1)
	e.apply("legacy", legacySpec)
	require.Equal(t, 0, e.synchronize())

	for _, cr := range []string{"a", "b", "c", "legacy"} {
		st := e.status(cr)
		assert.Equal(t, "Synced", st["syncStatus"], "%s: %v", cr, st["message"])
	}
	created := e.scopesNamed(e.name("as-new"))
	require.Len(t, created, 1, "a named scope that is absent is created")
	assert.Equal(t, 4, created[0].IPVersion)
	assert.True(t, created[0].Shared, "shared by default")
	assert.Len(t, e.scopesNamed(existing.Name), 1, "a named scope that exists is adopted, not duplicated")

	a := e.poolsNamed(e.name("pool-a"))
	require.Len(t, a, 1)
	assert.Equal(t, []string{fmt.Sprintf("10.%d.0.0/23", k)}, a[0].Prefixes, "Neutron merges adjacent prefixes")
	assert.Equal(t, created[0].ID, *a[0].AddressScopeID)
	assert.ElementsMatch(t, []string{poolMarker, poolGroup, "tenant"}, a[0].Tags)
	assert.Equal(t, existing.ID, *e.poolsNamed(e.name("pool-b"))[0].AddressScopeID)
	assert.Equal(t, byID.ID, *e.poolsNamed(e.name("pool-c"))[0].AddressScopeID, "a scope named by id is linked")
	adopted := e.poolsNamed(legacy.Name)
	require.Len(t, adopted, 1, "a pool other tooling made is adopted by name")
	assert.Equal(t, legacy.ID, adopted[0].ID)
	assert.Equal(t, existing.ID, *adopted[0].AddressScopeID)
	assert.ElementsMatch(t, []string{poolMarker, poolGroup, "tenant"}, adopted[0].Tags, "and tagged as owned by its group")
	assert.NotContains(t, fmt.Sprint(e.status("legacy")["message"]), "needs manual action", "its prefixes are no shrink")
	assert.Equal(t, []any{map[string]any{"id": a1, "cidr": fmt.Sprintf("10.%d.0.0/24", k), "url": nb.URL() + "/ipam/prefixes/" + a1 + "/"},
		map[string]any{"id": a2, "cidr": fmt.Sprintf("10.%d.1.0/24", k), "url": nb.URL() + "/ipam/prefixes/" + a2 + "/"}},
		e.status("a")["prefixes"])

	// Converged: nothing written, one Nautobot lookup per prefix reference.
	e.rec.reset()
	nb.ResetRequests()
	kubeBefore := len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Empty(t, e.writes())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a converged run patches no status")
	assert.Equal(t, 5, lookups(nb), "five prefix references, five lookups")
	for _, r := range nb.Requests() {
		assert.Equal(t, nbToken, r.Token, "the host sent the token from the CR's Secret")
	}

	// Grow: a prefix added in the CR is added to the pool.
	e.apply("a2", poolSpec(nb.URL(), e.name("pool-a2"), map[string]any{"name": e.name("as-new")}, grow))
	obj := e.get("a")
	obj["spec"].(map[string]any)["nautobot"].(map[string]any)["prefix_refs"] = []any{map[string]any{"id": a1},
		map[string]any{"id": a2}, map[string]any{"id": grow}}
	_, err := e.kube.Update(e.res, namespace, "a", "", obj)
	require.NoError(t, err)
	require.Equal(t, 1, e.synchronize(), "a2 overlaps pool-a in their scope: Neutron refuses it, the others converge")
	assert.Contains(t, e.status("a2")["message"], "subnetpools within an address scope must have unique prefixes")
	assert.Equal(t, []string{fmt.Sprintf("10.%d.0.0/23", k), fmt.Sprintf("10.%d.8.0/24", k)}, e.poolsNamed(e.name("pool-a"))[0].Prefixes)
	_, _, err = e.kube.Delete(e.res, namespace, "a2", fakekube.DeleteOptions{})
	require.NoError(t, err)

	// A removed reference is a note, not a shrink; the CR stays Synced.
	obj = e.get("a")
	obj["spec"].(map[string]any)["nautobot"].(map[string]any)["prefix_refs"] = []any{map[string]any{"id": a1}}
	_, err = e.kube.Update(e.res, namespace, "a", "", obj)
	require.NoError(t, err)
	e.rec.reset()
	require.Equal(t, 0, e.synchronize())
	st := e.status("a")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Contains(t, st["message"], fmt.Sprintf("still holds prefixes no longer referenced in Nautobot (10.%d.0.0/23, 10.%d.8.0/24)", k, k))
	assert.Empty(t, e.writes(), "the prefixes are not pushed")

	// Prune: the deleted CR's pool goes; the hand-made pool and every address scope stay.
	e.deleteCR("b")
	require.Equal(t, 0, e.synchronize())
	assert.Empty(t, e.poolsNamed(e.name("pool-b")), "the owned pool no CR claims is deleted")
	assert.Len(t, e.poolsNamed(handmade.Name), 1, "an unowned pool is never pruned")
	assert.Len(t, e.scopesNamed(existing.Name), 1, "an address scope is never deleted")
	assert.Len(t, e.scopesNamed(e.name("as-new")), 1)
	for _, w := range e.writes() {
		assert.NotContains(t, w, "address-scopes", "the plugin never changes a scope it did not create")
	}
	_, err = e.kube.Get(e.res, namespace, "b")
	assert.True(t, apierrors.IsNotFound(err), "the finalizer was released")
}

// The faults of Nautobot, of the token's Secret and of the URL a CR names: each is one line in
// the CR's status, the CR Failed, nothing written to Neutron and no prune while any pool's
// desired state is unknown.
func subnetPoolFaults(t *testing.T, b backend) {
	cases := []struct {
		name   string
		setup  func(e *env, nb *fakenautobot.Server) (spec func(url string) string)
		wantIn string
	}{
		{"Nautobot down", func(e *env, nb *fakenautobot.Server) func(string) string { nb.Close(); return nil }, "Nautobot is unreachable: GET nautobot api/ipam/prefixes/: connection refused"},
		{"Nautobot slow", func(e *env, nb *fakenautobot.Server) func(string) string {
			e.sourceTimeout = 50 * time.Millisecond
			nb.SetFault(fakenautobot.Fault{Delay: 5 * time.Second})
			return nil
		}, "Nautobot is unreachable: GET nautobot api/ipam/prefixes/: no response within 50ms"},
		{"401", func(e *env, nb *fakenautobot.Server) func(string) string {
			nb.SetFault(fakenautobot.Fault{Status: 401, Body: `{"detail":"Authentication credentials were not provided."}`})
			return nil
		}, ": HTTP 401 Unauthorized: Authentication credentials were not provided."},
		{"a token Nautobot refuses (403)", func(e *env, nb *fakenautobot.Server) func(string) string {
			e.kube.Delete(fakekube.SecretResource, namespace, "nautobot-token", fakekube.DeleteOptions{})
			e.addSecret("nautobot-token", map[string]string{"token": "0000000000000000000000000000000000000000"})
			return nil
		}, ": HTTP 403 Forbidden: Invalid token"},
		{"404 for the prefix list", func(e *env, nb *fakenautobot.Server) func(string) string {
			nb.SetFault(fakenautobot.Fault{Path: "/api/ipam/prefixes/", Status: 404, Body: `{"detail":"Not found."}`})
			return nil
		}, ": HTTP 404 Not Found: Not found."},
		{"500", func(e *env, nb *fakenautobot.Server) func(string) string {
			nb.SetFault(fakenautobot.Fault{Status: 500, Body: `<h1>Server Error (500)</h1>`})
			return nil
		}, ": HTTP 500 Internal Server Error (a server error page, not an API answer)"},
		{"a malformed answer", func(e *env, nb *fakenautobot.Server) func(string) string {
			nb.SetFault(fakenautobot.Fault{Malformed: true})
			return nil
		}, ": the answer is not a Nautobot prefix list"},
		{"an unknown location", func(e *env, nb *fakenautobot.Server) func(string) string {
			e.vars["NEUTRON_SUBNET_POOL_SITE"] = "iad"
			return nil
		}, "spec.nautobot.require.location 'iad' is not a valid Nautobot location"},
		{"the Secret missing", func(e *env, nb *fakenautobot.Server) func(string) string {
			e.kube.Delete(fakekube.SecretResource, namespace, "nautobot-token", fakekube.DeleteOptions{})
			return nil
		}, "spec.nautobot.tokenSecretRef: Secret " + namespace + "/nautobot-token not found"},
		{"the Secret empty", func(e *env, nb *fakenautobot.Server) func(string) string {
			e.kube.Delete(fakekube.SecretResource, namespace, "nautobot-token", fakekube.DeleteOptions{})
			e.addSecret("nautobot-token", map[string]string{"token": "\n"})
			return nil
		}, `spec.nautobot.tokenSecretRef: Secret ` + namespace + `/nautobot-token key "token" is empty`},
		{"the Secret without the key", func(e *env, nb *fakenautobot.Server) func(string) string {
			e.kube.Delete(fakekube.SecretResource, namespace, "nautobot-token", fakekube.DeleteOptions{})
			e.addSecret("nautobot-token", map[string]string{"api-token": nbToken})
			return nil
		}, `spec.nautobot.tokenSecretRef: Secret ` + namespace + `/nautobot-token has no key "token"`},
		{"a Nautobot the operator did not allow-list", func(e *env, nb *fakenautobot.Server) func(string) string {
			return func(string) string { return "https://nautobot.elsewhere.example" }
		}, `spec.nautobot.url: source "nautobot": https://nautobot.elsewhere.example is not an allow-listed URL of this source (allowed: `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, nb := poolsEnv(t, b, true)
			orphan := e.addPool(e.name("orphan"), false, []string{poolMarker, poolGroup}, "10.200.0.0/24")
			id := nbPrefix(nb, "10.201.0.0/24")
			url := nb.URL()
			if rewrite := c.setup(e, nb); rewrite != nil {
				url = rewrite(url)
			}
			e.apply("p", poolSpec(url, e.name("p"), map[string]any{"name": e.name("as")}, id))
			e.rec.reset()
			assert.Equal(t, 1, e.synchronize())
			st := e.status("p")
			assert.Equal(t, "Failed", st["syncStatus"])
			msg := fmt.Sprint(st["message"])
			assert.Contains(t, msg, c.wantIn)
			assert.NotContains(t, msg, "\n")
			assert.NotContains(t, msg, nbToken)
			assert.Empty(t, e.writes(), "nothing is written to Neutron from a spec that did not resolve")
			assert.True(t, slices.ContainsFunc(e.poolsNamed(orphan.Name), func(p subnetPool) bool { return p.ID == orphan.ID }),
				"no prune while a pool's desired state is unknown")
			assert.Contains(t, e.logs.String(), "Skipping the prune of a credential group; its CRs failed to reconcile")
		})
	}
}
