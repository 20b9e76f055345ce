//go:build wasip1

// Command scopes is the conformance kit's own test plugin: a third party's plugin for a resource
// the in-process cloud serves as a registered collection (v2.0/scopes). It keeps the contract,
// unless config MODE picks one way of breaking it, so the kit's tests see each check fail:
//
//	rewrite        updates every owned scope on every pass (not converged)
//	greedy-prune   prunes every scope no CR claims, owned or not
//	panic-on-bad   panics on a spec it cannot decode
//	lenient        decodes its spec leniently, ignoring a field it does not declare
//	outside-grant  reads networks, which it was not granted
//	tags           tags what it creates, which the collection refuses
//	memo-spec-only gives the convergence memo its spec as evidence, not the scope it compares
package main

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/experimental"
)

const marker = "[managed-by:scopes]"

type spec struct {
	Name      string `json:"name"`
	IPVersion int    `json:"ip_version"`
}

type scope struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	IPVersion   int    `json:"ip_version"`
	Description string `json:"description"`
}

// evidence is every field of the scope the plugin reads.
func (s scope) evidence() []byte {
	return fmt.Appendf(nil, "%q %q %d %q", s.ID, s.Name, s.IPVersion, s.Description)
}

func mode(ctx *pdk.Context) string { m, _ := ctx.Config("MODE"); return m }

func list(ctx *pdk.Context, q url.Values) ([]scope, error) {
	var body struct {
		Scopes []scope `json:"scopes"`
	}
	err := ctx.OpenStack("network").Get("v2.0/scopes", q, &body)
	return body.Scopes, err
}

func reconcile(ctx *pdk.Context, req *pdk.ReconcileRequest) (*pdk.Result, error) {
	var s spec
	decode := req.DecodeSpec
	if mode(ctx) == "lenient" {
		decode = func(v any) error { return experimental.DecodeJSON(req.Spec, v) }
	}
	if err := decode(&s); err != nil {
		if mode(ctx) == "panic-on-bad" {
			panic(err)
		}
		return nil, pdk.WithReason("InvalidSpec", err)
	}
	if s.Name == "" || (s.IPVersion != 4 && s.IPVersion != 6) {
		return nil, pdk.WithReason("InvalidSpec", fmt.Errorf("spec.name must be set and spec.ip_version 4 or 6"))
	}
	if mode(ctx) == "memo-spec-only" && experimental.Unchanged(ctx, req.Spec) {
		return experimental.Recorded(), nil
	}
	found, err := list(ctx, url.Values{"name": {s.Name}})
	if err != nil {
		return nil, err
	}
	if len(found) == 1 && mode(ctx) != "memo-spec-only" && experimental.Unchanged(ctx, found[0].evidence()) {
		return experimental.Recorded(), nil
	}
	net := ctx.OpenStack("network")
	if len(found) == 0 {
		body := map[string]any{"name": s.Name, "ip_version": s.IPVersion, "description": marker}
		if mode(ctx) == "tags" {
			body["tags"] = []string{"owned"}
		}
		var out struct {
			Scope scope `json:"scope"`
		}
		if err := net.Post("v2.0/scopes", map[string]any{"scope": body}, &out); err != nil {
			return nil, err
		}
		return &pdk.Result{ExtraStatus: map[string]any{"id": out.Scope.ID}}, nil
	}
	have := found[0]
	var notes []string
	if !strings.Contains(have.Description, marker) || mode(ctx) == "rewrite" {
		if err := net.Put("v2.0/scopes/"+have.ID, map[string]any{"scope": map[string]any{"description": marker}}, nil); err != nil {
			return nil, err
		}
	}
	if have.IPVersion != s.IPVersion {
		notes = append(notes, fmt.Sprintf("scope %s ip_version: have=%d want=%d (immutable)", have.ID, have.IPVersion, s.IPVersion))
	}
	if mode(ctx) == "outside-grant" {
		_ = net.Get("v2.0/networks", nil, nil)
	}
	return &pdk.Result{Notes: notes, ExtraStatus: map[string]any{"id": have.ID}}, nil
}

func prune(ctx *pdk.Context, req *pdk.PruneRequest) error {
	var desired []spec
	if err := req.DecodeSpecs(&desired); err != nil {
		return err
	}
	if len(desired) == 0 && !req.AuthoritativeEmpty {
		return nil
	}
	all, err := list(ctx, nil)
	if err != nil {
		return err
	}
	for _, sc := range all {
		claimed := slices.ContainsFunc(desired, func(s spec) bool { return s.Name == sc.Name })
		owned := strings.Contains(sc.Description, marker) || mode(ctx) == "greedy-prune"
		if owned && !claimed {
			if err := ctx.OpenStack("network").Delete("v2.0/scopes/"+sc.ID, nil, nil); err != nil && !pdk.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}

func init() {
	pdk.Register(pdk.Plugin{
		Metadata: pdk.Metadata{
			Name: "scopes", Noun: "scope", EnvPrefix: "SCOPE", BindingName: "scopes", Version: "0.1.0",
			Grants: []pdk.Grant{{Service: "network", Methods: []string{"GET", "POST", "PUT", "DELETE"},
				Paths: []string{"v2.0/scopes", "v2.0/scopes/*"}}},
			Cleanup: pdk.Cleanup{WhenPrune: pdk.CleanupFinalizedPrune},
		},
		WaitForAPI: func(ctx *pdk.Context) error { _, err := list(ctx, nil); return err },
		Reconcile:  reconcile,
		Prune:      prune,
	})
}

func main() {}
