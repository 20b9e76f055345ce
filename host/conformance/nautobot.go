package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/source"
)

// startNautobot starts the suite's Nautobot, when it has one: the kit allow-lists it for the
// plugin, points every CR's spec.nautobot.url at it and serves, under the Secret and key each CR
// names, a token it accepts.
func (k *kit) startNautobot(t *part) {
	if k.Nautobot == nil {
		return
	}
	nb := fakenautobot.New()
	t.Cleanup(nb.Close)
	raw := make([]byte, 20)
	_, _ = rand.Read(raw)
	token := hex.EncodeToString(raw)
	nb.AddToken(fakenautobot.Token{Key: token})
	nb.Load(*k.Nautobot)
	if k.Nautobot.Site != "" {
		if k.Settings == nil {
			k.Settings = map[string]string{}
		}
		if _, set := k.Settings["SITE"]; !set {
			k.Settings["SITE"] = k.Nautobot.Site
		}
	}
	u, err := hookenv.SourceURL(nb.URL())
	if err != nil {
		t.Fatalf("conformance: the in-process Nautobot's URL: %v", err)
	}
	k.sources = []hookenv.Source{{Name: "nautobot", URL: u, Burst: 1,
		Auth: hookenv.SourceAuth{Header: hookenv.DefaultSourceAuthHeader, Scheme: hookenv.DefaultSourceAuthScheme}}}
	k.secrets = map[string]map[string][]byte{}
	specs := make([]map[string]any, len(k.CRs))
	for i := range k.CRs {
		specs[i] = k.CRs[i].Spec
	}
	for _, ref := range nb.PointSpecs(specs) {
		if k.secrets[ref.Secret] == nil {
			k.secrets[ref.Secret] = map[string][]byte{}
		}
		k.secrets[ref.Secret][ref.Key] = []byte(token)
	}
}

// withSources is the kit's session with the suite's Nautobot beside it, for the calls the kit
// makes straight to the plugin (the bad specs).
func (k *kit) withSources(t *part, s plugin.Session) plugin.Session {
	if k.sources == nil {
		return s
	}
	conn := source.WrapConnector(staticConnector{s}, sourceSecrets(k.secrets), k.sources, source.Options{Plugin: "conformance", MaxAttempts: 1})
	ws, err := conn.Connect(context.Background(), plugin.Credentials{Namespace: "conformance", SecretName: "clouds", CloudName: k.cloudName()})
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	return ws
}

type staticConnector struct{ s plugin.Session }

func (c staticConnector) Connect(context.Context, plugin.Credentials) (plugin.Session, error) {
	return c.s, nil
}

type sourceSecrets map[string]map[string][]byte

func (s sourceSecrets) GetSecretData(_ context.Context, _, name string) (map[string][]byte, error) {
	if d, ok := s[name]; ok {
		return d, nil
	}
	return nil, &kubeapi.APIError{Code: 404, Body: "secrets \"" + name + "\" not found"}
}
