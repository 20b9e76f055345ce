package runcmd

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// allowList turns --source NAME=URL flags into the plugin's <PREFIX>_SOURCES, with the host's
// rules for each entry.
func allowList(flags []string) ([]hookenv.Source, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	var entries []hookenv.Source
	for _, kv := range flags {
		name, url, _ := strings.Cut(kv, "=")
		entries = append(entries, hookenv.Source{Name: name, URL: url})
	}
	list, err := hookenv.LoadSources(func(string) (string, bool) { return hookenv.SourcesJSON(entries), true }, "RUN")
	if err != nil {
		return nil, fmt.Errorf("--source: %w", err)
	}
	return list, nil
}

// addSecret keeps a Secret document's data (stringData wins over data, as the API server does).
func addSecret(obj map[string]any, secrets map[string]map[string][]byte) error {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return fmt.Errorf("a Secret without metadata.name")
	}
	data := map[string][]byte{}
	if d, _ := obj["data"].(map[string]any); d != nil {
		for k, v := range d {
			s, _ := v.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return fmt.Errorf("Secret %s: data.%s is not base64", name, k)
			}
			data[k] = b
		}
	}
	if sd, _ := obj["stringData"].(map[string]any); sd != nil {
		for k, v := range sd {
			s, _ := v.(string)
			data[k] = []byte(s)
		}
	}
	secrets[name] = data
	return nil
}

// embedNautobot starts the in-process Nautobot of --embedded-nautobot for the CRs and allow-lists
// it; the seed's site becomes the hook's SITE unless --set names one.
func embedNautobot(o options, crs []map[string]any, secrets map[string]map[string][]byte, set map[string]string) (func(), []hookenv.Source, error) {
	var specs []map[string]any
	for _, cr := range crs {
		if spec, _ := cr["spec"].(map[string]any); spec != nil {
			specs = append(specs, spec)
		}
	}
	url, site, stop, err := o.startNautobot(o.nautobot, specs, secrets)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := set["SITE"]; !ok && site != "" {
		set["SITE"] = site
	}
	list, err := allowList([]string{"nautobot=" + url})
	if err != nil {
		stop()
		return nil, nil, err
	}
	return stop, list, nil
}
