package wasm

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// metadataMessage is the metadata entry point's output (abi.Metadata, the message the PDK
// writes), with the host's reading of it as methods.
type metadataMessage abi.Metadata

// checkStatusKeys refuses status_keys the host could not honour or a lifecycle could not work
// with; the pdk applies the same rules when a plugin registers.
func (m *metadataMessage) checkStatusKeys() error {
	return abi.CheckStatusKeys(m.StatusKeys, m.SkipStatus, m.Lifecycle)
}

// checkPruneKeys refuses prune_keys of a plugin without a prune, or keys the host could not
// honour; the pdk applies the same rules when a plugin registers.
func (m *metadataMessage) checkPruneKeys() error {
	return abi.CheckPruneKeys(m.PruneKeys, m.HasPrune)
}

// statusFor is the status a reconcile input carries for a plugin that declared what it reads.
func (m *metadataMessage) statusFor(status map[string]any) map[string]any {
	switch {
	case m.SkipStatus || status == nil:
		return nil
	case len(m.StatusKeys) == 0:
		return status
	}
	out := make(map[string]any, len(m.StatusKeys))
	for _, k := range m.StatusKeys {
		if v, ok := status[k]; ok {
			out[k] = v
		}
	}
	return out
}

// toPlugin checks what the guest reported (abi.Lifecycle.Check); a value the status could not
// hold is a protocol error.
func toPlugin(m *abi.Lifecycle) (*plugin.Lifecycle, error) {
	if err := m.Check(); err != nil || m == nil {
		return nil, err
	}
	return &plugin.Lifecycle{ID: m.ID, Resource: m.Resource, Available: m.Available, Reason: m.Reason,
		Message: m.Message, RequeueSeconds: m.RequeueSeconds, ReadyReason: m.ReadyReason}, nil
}

// lazyRegexp is a regexp compiled the first time it is used.
func lazyRegexp(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}

// checkNames refuses names the host could not safely repeat in logs, headers and messages
// (pdk/abi: the rules the PDK applies too).
func (m *metadataMessage) checkNames() error {
	if err := abi.CheckName(m.Name); err != nil {
		return err
	}
	if m.EnvPrefix != "" {
		if err := abi.CheckEnvPrefix(m.EnvPrefix); err != nil {
			return err
		}
	}
	if m.BindingName != "" {
		if err := abi.CheckBindingName(m.BindingName); err != nil {
			return err
		}
	}
	return abi.CheckDescriptions(m.Noun, m.Version, m.Description, m.Source)
}

// cut shortens a refused name for its error message.
func cut(s string) string { return abi.Cut(s) }

// cleanupPolicies turns the metadata's cleanup section into a policy per PRUNE setting,
// applying the framework default (docs/contract.md §5.1) where the plugin leaves one unset, and
// checks every profile's cleanup section by the same rules.
func (m *metadataMessage) cleanupPolicies() (whenPrune, whenNoPrune plugin.CleanupPolicy, err error) {
	for _, name := range slices.Sorted(maps.Keys(m.Profiles)) {
		if _, _, err := m.policiesOf("profiles."+name+".cleanup", m.Profiles[name].Cleanup); err != nil {
			return 0, 0, err
		}
	}
	return m.policiesOf("cleanup", m.Cleanup)
}

// pruneScopeFor is the prune scope under profile p: the profile's own when it declares one, else
// the metadata's. Call it only on checked metadata.
func (m *metadataMessage) pruneScopeFor(p profile.Profile) abi.PruneScope {
	if pm, ok := m.Profiles[p.String()]; ok && pm.PruneScope != "" {
		return pm.PruneScope
	}
	return m.PruneScope
}

// cleanupFor is the policy per PRUNE setting under profile p: its own section when the plugin
// declares one, else the metadata's. Call it only on checked metadata.
func (m *metadataMessage) cleanupFor(p profile.Profile) (whenPrune, whenNoPrune plugin.CleanupPolicy) {
	c := m.Cleanup
	if pm, ok := m.Profiles[p.String()]; ok {
		c = pm.Cleanup
	}
	whenPrune, whenNoPrune, _ = m.policiesOf("cleanup", c)
	return whenPrune, whenNoPrune
}

func (m *metadataMessage) policiesOf(section string, c abi.Cleanup) (whenPrune, whenNoPrune plugin.CleanupPolicy, err error) {
	parse := func(field, s string, dflt plugin.CleanupPolicy) (plugin.CleanupPolicy, error) {
		field = section + "." + field
		if s == "" {
			return dflt, nil
		}
		p, err := plugin.ParseCleanupPolicy(s)
		if err != nil {
			return 0, fmt.Errorf("metadata %s: %w", field, err)
		}
		switch {
		case p == plugin.CleanupFinalizedPrune && !m.HasPrune && !m.HasDelete:
			return 0, fmt.Errorf("metadata %s is %s but the plugin has neither a prune nor a delete step", field, s)
		case p == plugin.CleanupBestEffortPrune && !m.HasPrune:
			return 0, fmt.Errorf("metadata %s is %s but the plugin has no prune step", field, s)
		}
		return p, nil
	}
	dflt := plugin.CleanupNone
	if m.HasPrune || m.HasDelete {
		dflt = plugin.CleanupFinalizedPrune
	}
	if whenPrune, err = parse("when_prune", string(c.WhenPrune), dflt); err != nil {
		return 0, 0, err
	}
	whenNoPrune, err = parse("when_no_prune", string(c.WhenNoPrune), plugin.CleanupNone)
	return whenPrune, whenNoPrune, err
}
