package pdktest

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
)

// CR is a custom resource a test carries through its life: Reconcile and Delete send it to the
// registered plugin as the host does (its spec, and the status keys the plugin reads) and fold
// the result into Status as the host's status patch would, so the next call sees what the host
// would send. A create, an edit and a delete are then three calls on one CR:
//
//	cr := &pdktest.CR{Object: pdk.Object{Kind: "KeystoneProject", Namespace: "ns", Name: "a"},
//		Spec: map[string]any{"resource": map[string]any{"name": "a"}}}
//	res, err := cr.Reconcile(ctx)     // creates; cr.Status["id"] is the new id
//	cr.Spec = ...                      // edit
//	res, err = cr.Reconcile(ctx)      // updates the same resource
//	res, err = cr.Delete(ctx)         // deletes it (Metadata.HasDelete plugins)
type CR struct {
	Object pdk.Object
	// Spec is any JSON-marshallable value: the CR's spec without cloudCredentialsRef.
	Spec any
	// Status is what the host has written so far (nil before the first reconcile).
	Status map[string]any
	// Plugin is the plugin to run; nil is the registered one.
	Plugin *pdk.Plugin
	// Credentials names the CR's credential group, which the host sends a plugin that prunes per
	// group (pdk.ReconcileRequest.Credentials).
	Credentials pdk.Credentials
}

func (cr *CR) plugin() (*pdk.Plugin, error) {
	p := cr.Plugin
	if p == nil {
		p = pdk.Registered()
	}
	if p == nil {
		return nil, fmt.Errorf("pdktest.CR: no plugin registered")
	}
	return p, nil
}

// request is what the host sends: the spec, and the status the plugin's metadata asks for.
func (cr *CR) request(p *pdk.Plugin) (*pdk.ReconcileRequest, error) {
	raw, err := json.Marshal(cr.Spec)
	if err != nil {
		return nil, fmt.Errorf("pdktest.CR: encoding spec: %w", err)
	}
	req := &pdk.ReconcileRequest{Object: cr.Object, Spec: raw, Credentials: groupFor(p, cr.Credentials)}
	switch {
	case testhook.SkipsStatus(&p.Metadata) || len(cr.Status) == 0:
	case len(p.Metadata.StatusKeys) > 0:
		req.Status = map[string]any{}
		for _, k := range p.Metadata.StatusKeys {
			if v, ok := cr.Status[k]; ok {
				req.Status[k] = v
			}
		}
	default:
		req.Status = cloneStatus(cr.Status)
	}
	return req, nil
}

// Reconcile runs the plugin's Reconcile for the CR and folds the result into Status.
func (cr *CR) Reconcile(ctx *pdk.Context) (*pdk.Result, error) {
	p, err := cr.plugin()
	if err != nil {
		return nil, err
	}
	req, err := cr.request(p)
	if err != nil {
		return nil, err
	}
	res, err := p.Reconcile(ctx, req)
	cr.fold(res, err)
	return res, err
}

// Delete runs the plugin's Delete for the CR as the host does for a CR being deleted under its
// finalizer, and folds the result into Status. The finalizer may go when Deleted says so.
func (cr *CR) Delete(ctx *pdk.Context) (*pdk.Result, error) {
	p, err := cr.plugin()
	if err != nil {
		return nil, err
	}
	if p.Delete == nil {
		return nil, fmt.Errorf("pdktest.CR: plugin %s has no Delete handler", p.Metadata.Name)
	}
	req, err := cr.request(p)
	if err != nil {
		return nil, err
	}
	res, err := p.Delete(ctx, req)
	cr.fold(res, err)
	return res, err
}

// Deleted reports whether a Delete result lets the host release the CR's finalizer: a lifecycle
// result whose progress is done (reason Success), or a plain success.
func Deleted(res *pdk.Result, err error) bool {
	if err != nil {
		return false
	}
	return res == nil || res.Lifecycle == nil || res.Lifecycle.Reason == "" || res.Lifecycle.Reason == "Success"
}

// fold merges a result into Status as the host's status patch would: a lifecycle result sets
// status.id (kept when the result names none) and replaces status.resource; ExtraStatus keys are
// merged; syncStatus and message say how it went.
func (cr *CR) fold(res *pdk.Result, err error) {
	if cr.Status == nil {
		cr.Status = map[string]any{}
	}
	switch {
	case err != nil:
		cr.Status["syncStatus"], cr.Status["message"] = "Failed", err.Error()
		return
	case res == nil:
		cr.Status["syncStatus"], cr.Status["message"] = "Synced", ""
		return
	}
	maps.Copy(cr.Status, cloneStatus(res.ExtraStatus))
	cr.Status["syncStatus"], cr.Status["message"] = "Synced", ""
	if l := res.Lifecycle; l != nil {
		if l.ID != "" {
			cr.Status["id"] = l.ID
		}
		if l.Resource != nil {
			var observed any
			b, _ := json.Marshal(l.Resource)
			_ = json.Unmarshal(b, &observed)
			cr.Status["resource"] = observed
		}
		switch l.Reason {
		case "", "Success":
		case "Progressing":
			cr.Status["syncStatus"] = "Progressing"
		default:
			cr.Status["syncStatus"] = "Failed"
		}
		cr.Status["message"] = l.Message
		cr.Status["reason"] = l.Reason
	}
}

func cloneStatus(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// Group is the credential group pdktest's requests name: every prune's, and every reconcile's of
// a plugin that prunes per group (under any profile) unless the CR names its own
// (CR.Credentials), as a host sends it under a profile where the plugin prunes per group.
var Group = pdk.Credentials{Namespace: "pdktest", SecretName: "clouds", CloudName: "pdktest"}

// groupFor is the credential group of a reconcile request of p: c, or Group when c is unset and p
// prunes per group under some profile (a plugin recording the group in its marker needs one).
func groupFor(p *pdk.Plugin, c pdk.Credentials) pdk.Credentials {
	if c != (pdk.Credentials{}) {
		return c
	}
	perGroup := p.Metadata.PruneScope == pdk.PruneScopeGroup
	for _, pm := range p.Metadata.Profiles {
		perGroup = perGroup || pm.PruneScope == pdk.PruneScopeGroup
	}
	if perGroup {
		return Group
	}
	return c
}

// Prune runs the Prune of p (nil: the registered plugin) with the specs of the live CRs (any
// JSON-marshallable values) as the host sends them; authoritativeEmpty says that an empty set
// really means nothing is wanted.
func Prune(ctx *pdk.Context, p *pdk.Plugin, specs []any, authoritativeEmpty bool) error {
	if p == nil {
		p = pdk.Registered()
	}
	if p == nil || p.Prune == nil {
		return fmt.Errorf("pdktest.Prune: the plugin has no Prune handler")
	}
	req := &pdk.PruneRequest{AuthoritativeEmpty: authoritativeEmpty && len(specs) == 0, Credentials: Group}
	for _, s := range specs {
		raw, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("pdktest.Prune: encoding a spec: %w", err)
		}
		req.DesiredSpecs = append(req.DesiredSpecs, raw)
	}
	return p.Prune(ctx, req)
}

// WaitForAPI runs the readiness check of p (nil: the registered plugin) once, as each attempt
// of the host's readiness loop does.
func WaitForAPI(ctx *pdk.Context, p *pdk.Plugin) error {
	if p == nil {
		p = pdk.Registered()
	}
	if p == nil || p.WaitForAPI == nil {
		return fmt.Errorf("pdktest.WaitForAPI: the plugin has no WaitForAPI handler")
	}
	return p.WaitForAPI(ctx)
}
