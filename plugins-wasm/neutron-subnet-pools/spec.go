package main

import (
	"fmt"
	"strings"

	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// Spec is a NeutronSubnetPool's spec: the pool's policy at the top (the Neutron subnet pool and
// address scope contract), where its CIDRs come from under nautobot. Pointers mark the fields
// whose absence means something other than their zero value.
type Spec struct {
	Name                string        `json:"name"`
	AddressScope        *AddressScope `json:"address_scope"`
	MinimumPrefixLength *int          `json:"minimum_prefix_length"`
	DefaultPrefixLength *int          `json:"default_prefix_length"`
	MaximumPrefixLength *int          `json:"maximum_prefix_length"`
	ProjectID           string        `json:"project_id"`
	IsDefault           bool          `json:"is_default"`
	// Shared has no default: unset adopts a pool without asserting its sharing.
	Shared      *bool     `json:"shared"`
	Description string    `json:"description"`
	Tags        []string  `json:"tags"`
	Nautobot    *Nautobot `json:"nautobot"`
}

// AddressScope names the pool's address scope by id (it must exist) or by name (found, or
// created unless Create is false).
type AddressScope struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Create and Shared default to true (the CRD's defaults; the plugin applies them too).
	Create    *bool  `json:"create"`
	Shared    *bool  `json:"shared"`
	ProjectID string `json:"project_id"`
}

// Nautobot is where the pool's CIDRs come from.
type Nautobot struct {
	URL            string     `json:"url"`
	APIVersion     string     `json:"api_version"`
	TokenSecretRef *SecretRef `json:"tokenSecretRef"`
	PrefixRefs     []struct {
		ID string `json:"id"`
	} `json:"prefix_refs"`
	Require *Require `json:"require"`
}

// SecretRef names the key of a Secret in the CR's namespace that holds the Nautobot token.
type SecretRef struct {
	SecretName string `json:"secretName"`
	Key        string `json:"key"`
}

// Require are the guardrails every referenced prefix must satisfy.
type Require struct {
	Namespace string   `json:"namespace"`
	Location  string   `json:"location"`
	Status    string   `json:"status"`
	Type      string   `json:"type"`
	Tags      []string `json:"tags"`
}

// defaultAPIVersion is the Nautobot REST API version a CR asks for when it names none (the CRD's
// default, and the original's).
const defaultAPIVersion = "2.0"

// nautobotRefs checks the nautobot part of a spec and returns its prefix ids, in the original's
// words (each names the field to set).
func (s *Spec) nautobotRefs() ([]string, error) {
	if strings.TrimSpace(s.Name) == "" {
		return nil, invalidspec.Errorf("name must be set")
	}
	n := s.Nautobot
	switch {
	case n == nil:
		return nil, invalidspec.Errorf("spec.nautobot must be set")
	case n.TokenSecretRef == nil:
		return nil, invalidspec.Errorf("spec.nautobot.tokenSecretRef must be set")
	case strings.TrimSpace(n.URL) == "":
		return nil, invalidspec.Errorf("url must be set")
	case strings.TrimSpace(n.TokenSecretRef.SecretName) == "":
		return nil, invalidspec.Errorf("secretName must be set")
	case strings.TrimSpace(n.TokenSecretRef.Key) == "":
		return nil, invalidspec.Errorf("key must be set")
	case len(n.PrefixRefs) == 0:
		return nil, invalidspec.Errorf("spec.nautobot.prefix_refs must be a non-empty list")
	}
	ids := make([]string, len(n.PrefixRefs))
	for i, r := range n.PrefixRefs {
		ids[i] = strings.TrimSpace(r.ID)
		if ids[i] == "" {
			return nil, invalidspec.Errorf("spec.nautobot.prefix_refs[%d].id must be set", i)
		}
	}
	return ids, nil
}

func (s *Spec) apiVersion() string {
	if v := strings.TrimSpace(s.Nautobot.APIVersion); v != "" {
		return v
	}
	return defaultAPIVersion
}

func (s *Spec) require() Require {
	if s.Nautobot.Require == nil {
		return Require{}
	}
	return *s.Nautobot.Require
}

// pyList renders names as the original's messages do (a Python list).
func pyList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// validateLengths checks the three prefix-length bounds for the resolved IP family: all set,
// within the family, minimum <= default <= maximum (the original's validate_prefixes).
func (s *Spec) validateLengths(version int) error {
	var missing []string
	for _, f := range []struct {
		name string
		v    *int
	}{{"minimum_prefix_length", s.MinimumPrefixLength}, {"default_prefix_length", s.DefaultPrefixLength},
		{"maximum_prefix_length", s.MaximumPrefixLength}} {
		if f.v == nil {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return invalidspec.Errorf("Subnet pool '%s' is missing prefix length(s) %s: set minimum_prefix_length, "+
			"default_prefix_length, and maximum_prefix_length on the CR spec", s.Name, pyList(missing))
	}
	familyMax := 32
	if version == 6 {
		familyMax = 128
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"default_prefix_length", *s.DefaultPrefixLength}, {"minimum_prefix_length", *s.MinimumPrefixLength},
		{"maximum_prefix_length", *s.MaximumPrefixLength}} {
		if f.v > familyMax {
			return invalidspec.Errorf("Subnet pool '%s' %s=%d exceeds IPv%d maximum prefix length %d", s.Name, f.name, f.v, version, familyMax)
		}
	}
	lo, def, hi := *s.MinimumPrefixLength, *s.DefaultPrefixLength, *s.MaximumPrefixLength
	switch {
	case lo > def:
		return invalidspec.Errorf("minimum_prefix_length must be less than or equal to default_prefix_length")
	case def > hi:
		return invalidspec.Errorf("default_prefix_length must be less than or equal to maximum_prefix_length")
	case lo > hi:
		return invalidspec.Errorf("minimum_prefix_length must be less than or equal to maximum_prefix_length")
	}
	return nil
}

func quoted(s string) string { return fmt.Sprintf("'%s'", s) }
