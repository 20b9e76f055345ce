package demo

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// demoSite is the site (the hook's SITE, the original's UNDERSTACK_SITE) of the demo's Nautobot.
const demoSite = "demo-site"

// demoNautobot is the source of truth of the example NeutronSubnetPools: an in-process Nautobot
// serving the prefixes they reference, each passing the CR's guardrails, and accepting the token
// of the Secret they name. The CRs' spec.nautobot.url is pointed at it, as the cloud Secret's
// clouds.yaml is pointed at the in-process cloud.
type demoNautobot struct {
	srv *fakenautobot.Server
	// count is how many prefixes are seeded, for the next one's CIDR.
	count int
	// kinds are the CR kinds whose examples name a Nautobot: their hooks get it allow-listed.
	kinds map[string]bool
}

// startNautobot starts the demo's Nautobot when an example names one (else it returns nil) and
// rewrites those examples to reach it.
func startNautobot(examples []example) (*demoNautobot, []string) {
	n := &demoNautobot{kinds: map[string]bool{}}
	var specs []map[string]any
	for _, ex := range examples {
		spec, _ := ex.Object["spec"].(map[string]any)
		nb, _ := spec["nautobot"].(map[string]any)
		if nb == nil {
			continue
		}
		if n.srv == nil {
			n.srv = fakenautobot.New()
			n.srv.AddLocation(fakenautobot.Location{Name: "demo-region"})
			n.srv.AddLocation(fakenautobot.Location{Name: demoSite, Parent: "demo-region"})
		}
		n.kinds[ex.kind()] = true
		specs = append(specs, spec)
		n.seed(nb)
	}
	if n.srv == nil {
		return nil, nil
	}
	for _, ref := range n.srv.PointSpecs(specs) {
		for _, ex := range examples {
			if ex.kind() == "Secret" && ex.name() == ref.Secret {
				if v, ok := secretValue(ex.Object, ref.Key); ok {
					n.srv.AddToken(fakenautobot.Token{Key: strings.TrimSpace(v)})
				}
			}
		}
	}
	return n, []string{fmt.Sprintf("in-process Nautobot %s (v%s's REST API) serves the example subnet pools' prefixes; their spec.nautobot.url points at it",
		n.srv.URL(), fakenautobot.Version)}
}

// seed adds the prefixes a spec.nautobot references, each passing its guardrails (require).
func (n *demoNautobot) seed(nb map[string]any) {
	req, _ := nb["require"].(map[string]any)
	str := func(k, def string) string {
		if s, ok := req[k].(string); ok && s != "" {
			return s
		}
		return def
	}
	var tags []string
	for _, t := range asList(req["tags"]) {
		if s, ok := t.(string); ok {
			tags = append(tags, s)
		}
	}
	location := str("location", demoSite)
	if location != demoSite {
		n.srv.AddLocation(fakenautobot.Location{Name: location, Parent: "demo-region"})
	}
	for _, r := range asList(nb["prefix_refs"]) {
		id, _ := r.(map[string]any)["id"].(string)
		n.srv.AddPrefix(fakenautobot.Prefix{ID: id, Prefix: fmt.Sprintf("10.%d.0.0/24", 90+n.count), Type: str("type", "pool"),
			Status: str("status", "Active"), Namespace: str("namespace", "Global"), Tags: tags, Locations: []string{location}})
		n.count++
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// secretValue reads a Secret example's key from stringData or data.
func secretValue(obj map[string]any, key string) (string, bool) {
	if sd, _ := obj["stringData"].(map[string]any); sd != nil {
		if v, ok := sd[key].(string); ok {
			return v, true
		}
	}
	if d, _ := obj["data"].(map[string]any); d != nil {
		if v, ok := d[key].(string); ok {
			b, err := base64.StdEncoding.DecodeString(v)
			return string(b), err == nil
		}
	}
	return "", false
}

// env is the allow-list and site of a hook whose CRs name the demo's Nautobot.
func (n *demoNautobot) env(prefix, kind string) []string {
	if n == nil || !n.kinds[kind] {
		return nil
	}
	u, _ := hookenv.SourceURL(n.srv.URL())
	return []string{prefix + hookenv.SourcesSuffix + "=" + hookenv.SourcesJSON([]hookenv.Source{{Name: "nautobot", URL: u}}),
		prefix + "_SITE=" + demoSite}
}

func (n *demoNautobot) close() {
	if n != nil {
		n.srv.Close()
	}
}
