package wasm

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/profile"
	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// ABIVersion is the ABI major version this host speaks; a module announces its own with an
// export named ABIMarkerPrefix + version.
const (
	ABIVersion      = abi.Version
	ABIMarkerPrefix = abi.MarkerPrefix
)

// Entry points (exports) of ABI v1.
const (
	EntryMetadata   = abi.EntryMetadata
	EntryWaitForAPI = abi.EntryWaitForAPI
	EntryGroupBegin = abi.EntryGroupBegin
	EntryGroupEnd   = abi.EntryGroupEnd
	EntryReconcile  = abi.EntryReconcile
	EntryPrune      = abi.EntryPrune
	EntryDelete     = abi.EntryDelete
	EntryRemark     = abi.EntryRemark
)

// The JSON messages of docs/abi.md, as the host sees them. The pdk keeps its own copy: the two
// sides share a document, not code.

type metadataMessage struct {
	ABIVersion  int            `json:"abi_version"`
	Name        string         `json:"name"`
	Noun        string         `json:"noun"`
	EnvPrefix   string         `json:"env_prefix"`
	BindingName string         `json:"binding_name"`
	Probe       bool           `json:"probe"`
	Grants      []grant.Grant  `json:"grants"`
	Cleanup     cleanupMessage `json:"cleanup"`
	HasPrune    bool           `json:"has_prune"`
	// Version, Description and Source describe the build to operators (inspect, OCI
	// annotations); the host never acts on them.
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	Source      string `json:"source,omitempty"`
	HasDelete   bool   `json:"has_delete"`
	// HasRemark: the module exports remark (openstack-sync migrate, docs/abi.md).
	HasRemark bool `json:"has_remark,omitempty"`
	Lifecycle bool `json:"lifecycle"`
	// PruneScope is "group" when the plugin's ownership marker records the credential group
	// (plugin.Metadata.PrunePerGroup); "" or "all" otherwise.
	PruneScope string `json:"prune_scope,omitempty"`
	// SkipStatus declares that the plugin never reads the CR's status: reconcile inputs go
	// without it, which spares the guest decoding it for every CR (docs/abi.md).
	SkipStatus bool `json:"skip_status,omitempty"`
	// StatusKeys, when set, are the only top-level status keys the plugin reads: reconcile inputs
	// carry just those (docs/abi.md).
	StatusKeys []string `json:"status_keys,omitempty"`
	// PruneKeys, when set, are the only top-level spec keys the plugin's prune reads: prune
	// inputs carry desired specs with just those (docs/abi.md).
	PruneKeys []string `json:"prune_keys,omitempty"`
	// Sources are the sources of truth outside OpenStack the plugin reads, by name, with method
	// and path grants (source.go); the operator allow-lists their URLs.
	Sources []sourceGrant `json:"sources,omitempty"`
	// Profiles change the host's behaviour under the profile the hook runs in (<P>_PROFILE,
	// docs/abi.md section 6, "Profiles"), keyed by the profile's name.
	Profiles map[string]profileMessage `json:"profiles,omitempty"`
}

type cleanupMessage struct {
	WhenPrune   string `json:"when_prune"`
	WhenNoPrune string `json:"when_no_prune"`
}

// profileMessage is what a plugin declares for one profile.
type profileMessage struct {
	// Cleanup replaces the metadata's cleanup under the profile.
	Cleanup cleanupMessage `json:"cleanup"`
	// PruneScope, when set, replaces the metadata's under the profile.
	PruneScope string `json:"prune_scope,omitempty"`
}

// checkStatusKeys refuses status_keys the host could not honour or a lifecycle could not work
// with; the pdk applies the same rules when a plugin registers.
func (m *metadataMessage) checkStatusKeys() error {
	return abi.CheckStatusKeys(m.StatusKeys, m.SkipStatus, m.Lifecycle)
}

// checkPruneKeys refuses prune_keys of a plugin without a prune, or keys the host could not
// honour; the pdk applies the same rules when a plugin registers.
func (m *metadataMessage) checkPruneKeys() error {
	if len(m.PruneKeys) == 0 {
		return nil
	}
	if !m.HasPrune {
		return fmt.Errorf("prune_keys is set but has_prune is not; only a prune reads them")
	}
	_, err := checkKeys("prune_keys", m.PruneKeys)
	return err
}

// checkKeys applies the key rules of status_keys (abi.CheckStatusKeys) to prune_keys: at most
// abi.MaxStatusKeys keys of 1 to 63 printable characters without spaces, none twice.
func checkKeys(field string, keys []string) (map[string]bool, error) {
	if len(keys) > abi.MaxStatusKeys {
		return nil, fmt.Errorf("%s lists %d keys; at most %d", field, len(keys), abi.MaxStatusKeys)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if k == "" || len(k) > 63 || strings.ContainsFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return nil, fmt.Errorf("%s: key %q is not 1 to 63 printable characters without spaces", field, abi.Cut(k))
		}
		if seen[k] {
			return nil, fmt.Errorf("%s: key %q is listed twice", field, k)
		}
		seen[k] = true
	}
	return seen, nil
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

// Values of metadataMessage.PruneScope.
const (
	PruneScopeAll   = "all"
	PruneScopeGroup = "group"
)

type objectMessage struct {
	APIVersion string `json:"api_version"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	Generation *int64 `json:"generation,omitempty"`
}

type reconcileMessage struct {
	ABIVersion int             `json:"abi_version"`
	Object     objectMessage   `json:"object"`
	Spec       json.RawMessage `json:"spec"`
	Status     map[string]any  `json:"status,omitempty"`
	// Credentials names the CR's credential group, sent only to a plugin that prunes per group
	// under the hook's profile (its ownership marker records the group).
	Credentials *credentialsMessage `json:"credentials,omitempty"`
}

type resultMessage struct {
	Notes       []string          `json:"notes"`
	ExtraStatus map[string]any    `json:"extra_status"`
	Lifecycle   *lifecycleMessage `json:"lifecycle"`
	// Unchanged asks for the result the host recorded, after an unchanged call that hit.
	Unchanged bool `json:"unchanged"`
}

type lifecycleMessage struct {
	ID             string `json:"id"`
	Resource       any    `json:"resource"`
	Available      string `json:"available"`
	Reason         string `json:"reason"`
	Message        string `json:"message"`
	RequeueSeconds int64  `json:"requeue_seconds"`
	ReadyReason    string `json:"ready_reason"`
}

var (
	lifecycleReasons = map[string]bool{plugin.ReasonSuccess: true, plugin.ReasonProgressing: true,
		plugin.ReasonTransientError: true, plugin.ReasonInvalidConfiguration: true, plugin.ReasonUnrecoverableError: true}
	availableStatuses = map[string]bool{"True": true, "False": true, "Unknown": true}
)

// maxStatusIDBytes bounds status.id: an OpenStack id is a UUID; a guest must not write a megabyte.
const maxStatusIDBytes = 255

// toPlugin checks what the guest reported; a value the status could not hold is a protocol error.
func (m *lifecycleMessage) toPlugin() (*plugin.Lifecycle, error) {
	if m == nil {
		return nil, nil
	}
	switch {
	case !lifecycleReasons[m.Reason]:
		return nil, fmt.Errorf("lifecycle.reason %q is not Success, Progressing, TransientError, InvalidConfiguration or UnrecoverableError", cut(m.Reason))
	case !availableStatuses[m.Available]:
		return nil, fmt.Errorf("lifecycle.available %q is not True, False or Unknown", cut(m.Available))
	case len(m.ID) > maxStatusIDBytes || strings.IndexFunc(m.ID, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return nil, fmt.Errorf("lifecycle.id %q is not printable text of at most %d bytes", cut(m.ID), maxStatusIDBytes)
	case m.RequeueSeconds < 0:
		return nil, fmt.Errorf("lifecycle.requeue_seconds %d is negative", m.RequeueSeconds)
	}
	if _, ok := m.Resource.(map[string]any); m.Resource != nil && !ok {
		return nil, fmt.Errorf("lifecycle.resource must be a JSON object")
	}
	return &plugin.Lifecycle{ID: m.ID, Resource: m.Resource, Available: m.Available, Reason: m.Reason,
		Message: m.Message, RequeueSeconds: m.RequeueSeconds, ReadyReason: m.ReadyReason}, nil
}

type credentialsMessage struct {
	Namespace  string `json:"namespace"`
	SecretName string `json:"secret_name"`
	CloudName  string `json:"cloud_name"`
}

type pruneMessage struct {
	ABIVersion         int                `json:"abi_version"`
	Credentials        credentialsMessage `json:"credentials"`
	DesiredSpecs       []json.RawMessage  `json:"desired_specs"`
	AuthoritativeEmpty bool               `json:"authoritative_empty"`
}

type errorMessage struct {
	Message   string `json:"message"`
	Reason    string `json:"reason"`
	Permanent bool   `json:"permanent"`
}

type openstackRequest struct {
	Service      string              `json:"service"`
	Method       string              `json:"method"`
	Path         string              `json:"path"`
	Query        url.Values          `json:"query"`
	Headers      map[string][]string `json:"headers"`
	Microversion string              `json:"microversion"`
	Body         json.RawMessage     `json:"body"`
}

// openstackResponse is only ever written for errors; a response is written by encodeResponse.
type openstackResponse struct {
	Error *hostError `json:"error,omitempty"`
}

type hostError struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Permanent bool   `json:"permanent,omitempty"`
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
func (m *metadataMessage) pruneScopeFor(p profile.Profile) string {
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

func (m *metadataMessage) policiesOf(section string, c cleanupMessage) (whenPrune, whenNoPrune plugin.CleanupPolicy, err error) {
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
	if whenPrune, err = parse("when_prune", c.WhenPrune, dflt); err != nil {
		return 0, 0, err
	}
	whenNoPrune, err = parse("when_no_prune", c.WhenNoPrune, plugin.CleanupNone)
	return whenPrune, whenNoPrune, err
}
