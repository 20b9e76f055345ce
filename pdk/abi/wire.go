package abi

import (
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// Envelope is the part every host→guest input carries.
type Envelope struct {
	ABIVersion int `json:"abi_version"`
}

// The JSON messages that cross the boundary in both directions, as both sides read and write
// them.

// Error is what a failing entry point passes to error_set.
type Error struct {
	Message   string `json:"message"`
	Reason    string `json:"reason,omitempty"`
	Permanent bool   `json:"permanent,omitempty"`
}

// OpenStackRequest is the input of the openstack_request host function.
type OpenStackRequest struct {
	Service      string              `json:"service"`
	Method       string              `json:"method"`
	Path         string              `json:"path"`
	Query        url.Values          `json:"query,omitempty"`
	Headers      map[string][]string `json:"headers,omitempty"`
	Microversion string              `json:"microversion,omitempty"`
	Body         json.RawMessage     `json:"body,omitempty"`
}

// SourceRequest is the input of the source_request host function.
type SourceRequest struct {
	Source  string              `json:"source"`
	URL     string              `json:"url"`
	Secret  *SecretKeyRef       `json:"secret,omitempty"`
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   url.Values          `json:"query,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    json.RawMessage     `json:"body,omitempty"`
}

// SecretKeyRef names the key of a Secret that holds a source's credential.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// OpenStackResponse is the JSON head of the openstack_request (and source_request) output: either a response of any
// HTTP status (whose body follows the head and a newline, as is) or an Error when there is none.
type OpenStackResponse struct {
	Status  int                 `json:"status,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Error   *HostError          `json:"error,omitempty"`
}

// HostError says why the host produced no response; Kind is one of the Kind constants.
type HostError struct {
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Permanent bool   `json:"permanent,omitempty"`
}

// Object is the Kubernetes identity of the CR a reconcile, delete or remark input is about.
type Object struct {
	APIVersion string `json:"api_version"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	UID        string `json:"uid"`
	// Generation is metadata.generation; nil when the object carries none.
	Generation *int64 `json:"generation,omitempty"`
}

func (o Object) String() string { return fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name) }

// Credentials names a credential group: the CR's own in a reconcile input, the one being pruned
// in a prune input (names only, never secret material).
type Credentials struct {
	Namespace  string `json:"namespace"`
	SecretName string `json:"secret_name"`
	CloudName  string `json:"cloud_name"`
}

// ReconcileInput is the input of reconcile and delete. The host hashes these bytes for the
// convergence memo, so its encoding (field order included) is part of the ABI too.
type ReconcileInput struct {
	ABIVersion int             `json:"abi_version"`
	Object     Object          `json:"object"`
	Spec       json.RawMessage `json:"spec"`
	// Status is the CR's status, cut to the metadata's status_keys, absent with skip_status.
	Status map[string]any `json:"status,omitempty"`
	// Credentials names the CR's credential group; sent only to a plugin that prunes per group
	// under the hook's profile (its ownership marker records the group).
	Credentials *Credentials `json:"credentials,omitempty"`
}

// PruneInput is the input of prune.
type PruneInput struct {
	ABIVersion  int         `json:"abi_version"`
	Credentials Credentials `json:"credentials"`
	// DesiredSpecs are the specs of the live CRs (of this group only with prune_scope group),
	// each cut to the metadata's prune_keys.
	DesiredSpecs []json.RawMessage `json:"desired_specs"`
	// AuthoritativeEmpty is true when an empty DesiredSpecs really means "nothing is wanted".
	AuthoritativeEmpty bool `json:"authoritative_empty"`
}

// RemarkInput is the input of remark: move the markers of what one CR claims from profile From
// to profile To.
type RemarkInput struct {
	ABIVersion int             `json:"abi_version"`
	Object     Object          `json:"object"`
	Spec       json.RawMessage `json:"spec"`
	From       string          `json:"from"`
	To         string          `json:"to"`
	DryRun     bool            `json:"dry_run"`
}

// RemarkResult is the output of remark: what it changed, or with DryRun would change, one line
// per resource naming it and the markers (e.g. "ironic runbook bios (uuid): extra
// _understack_runbook_* -> openstack-sync.io/*"). Nothing to change is an empty result.
type RemarkResult struct {
	Changes []string `json:"changes,omitempty"`
	// Notes say what the remark found but left alone (a resource the CR names that carries no
	// marker of either profile).
	Notes []string `json:"notes,omitempty"`
}

// Result is the output of reconcile and delete.
type Result struct {
	// Notes describe drift OpenStack will not let the plugin fix; the CR is still Synced.
	Notes []string `json:"notes,omitempty"`
	// ExtraStatus keys are merged at the top level of the CR status.
	ExtraStatus map[string]any `json:"extra_status,omitempty"`
	// Lifecycle is the shared lifecycle status of a plugin whose metadata sets lifecycle.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// Unchanged asks the host for the result it recorded, after an unchanged call that hit (the
	// convergence memo); nothing else may be set with it.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Lifecycle is what a lifecycle plugin reports about one CR (docs/operators/status.md); Check
// says whether the host accepts it.
type Lifecycle struct {
	// ID becomes status.id; "" leaves the recorded one as it is.
	ID string `json:"id,omitempty"`
	// Resource becomes status.resource: the observed OpenStack resource, a JSON object; nil
	// leaves it as it is.
	Resource any `json:"resource,omitempty"`
	// Available is the Available condition's status: "True", "False" or "Unknown".
	Available string `json:"available"`
	// Reason is the Progressing condition's reason: Success, Progressing, TransientError,
	// InvalidConfiguration or UnrecoverableError.
	Reason string `json:"reason"`
	// Message says what the CR waits for or why it failed; empty on success.
	Message string `json:"message,omitempty"`
	// RequeueSeconds is how soon a Progressing CR wants to be looked at again (a hint: the host's
	// progress schedule is the floor).
	RequeueSeconds int64 `json:"requeue_seconds,omitempty"`
	// ReadyReason, when set on a failure, is the Ready condition's reason (e.g. InvalidSpec), so
	// a plugin moving onto the lifecycle keeps the reasons its operators alert on; else the Ready
	// reason is Reason.
	ReadyReason string `json:"ready_reason,omitempty"`
}

// Metadata is the output of metadata: what a plugin declares about itself (docs/abi.md,
// "metadata"). The host checks it by the rules of this package (CheckName, CheckStatusKeys,
// grant.Validate, ...) before it runs anything else of the module.
type Metadata struct {
	ABIVersion  int    `json:"abi_version"`
	Name        string `json:"name"`
	Noun        string `json:"noun"`
	EnvPrefix   string `json:"env_prefix"`
	BindingName string `json:"binding_name"`
	// Probe marks a connectivity probe that reconciles no CRs.
	Probe    bool          `json:"probe,omitempty"`
	Grants   []grant.Grant `json:"grants"`
	Cleanup  Cleanup       `json:"cleanup"`
	HasPrune bool          `json:"has_prune"`
	// Version, Description and Source describe the build to operators (inspect, OCI
	// annotations); the host never acts on them.
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	Source      string `json:"source,omitempty"`
	// HasRemark: the module exports remark (openstack-sync migrate).
	HasRemark bool `json:"has_remark,omitempty"`
	HasDelete bool `json:"has_delete,omitempty"`
	// Lifecycle: the plugin reports the shared lifecycle status (Result.Lifecycle).
	Lifecycle bool `json:"lifecycle,omitempty"`
	// PruneScope is PruneScopeGroup when the plugin's ownership marker records the credential
	// group; "" or PruneScopeAll otherwise.
	PruneScope PruneScope `json:"prune_scope,omitempty"`
	// SkipStatus: the plugin never reads the CR's status, so reconcile inputs go without it.
	SkipStatus bool `json:"skip_status,omitempty"`
	// StatusKeys, when set, are the only top-level status keys the plugin reads (CheckStatusKeys).
	StatusKeys []string `json:"status_keys,omitempty"`
	// PruneKeys, when set, are the only top-level spec keys the plugin's prune reads
	// (CheckPruneKeys).
	PruneKeys []string `json:"prune_keys,omitempty"`
	// Sources are the sources of truth outside OpenStack the plugin reads, by name, with method
	// and path grants; the operator allow-lists their URLs.
	Sources []SourceGrant `json:"sources,omitempty"`
	// Deterministic: given the same inputs and the same answers, the plugin sends the same
	// requests and returns the same results, and decides nothing on the clock or randomness; the
	// host may then replay a converged run without running it (docs/abi.md, "The run replay").
	Deterministic bool `json:"deterministic,omitempty"`
	// Profiles change the host's behaviour under the profile the hook runs in, keyed by the
	// profile's name.
	Profiles map[string]Profile `json:"profiles,omitempty"`
}

// CleanupPolicy is the deletion-safety contract of a plugin for one PRUNE setting.
type CleanupPolicy string

// The cleanup policies (docs/contract.md §5.1).
const (
	// CleanupDefault leaves the choice to the framework default rule.
	CleanupDefault CleanupPolicy = ""
	// CleanupNone runs no prune and holds no finalizer.
	CleanupNone CleanupPolicy = "NONE"
	// CleanupBestEffortPrune runs prune but holds no finalizer.
	CleanupBestEffortPrune CleanupPolicy = "BEST_EFFORT_PRUNE"
	// CleanupFinalizedPrune runs prune and holds the CR's finalizer until its group pruned.
	CleanupFinalizedPrune CleanupPolicy = "FINALIZED_PRUNE"
)

// Cleanup names the policy for each PRUNE setting of the hook.
type Cleanup struct {
	// WhenPrune applies when <PREFIX>_PRUNE=true.
	WhenPrune CleanupPolicy `json:"when_prune,omitempty"`
	// WhenNoPrune applies when <PREFIX>_PRUNE=false (or unset).
	WhenNoPrune CleanupPolicy `json:"when_no_prune,omitempty"`
}

// Profile is what a plugin declares for one profile (Metadata.Profiles).
type Profile struct {
	// Cleanup replaces Metadata.Cleanup under the profile (its zero value: the framework default).
	Cleanup Cleanup `json:"cleanup"`
	// PruneScope, when set, replaces Metadata.PruneScope under the profile.
	PruneScope PruneScope `json:"prune_scope,omitempty"`
}

// SourceGrant allows requests to one source outside OpenStack: a method in Methods on a path
// matching one of Paths, relative to the source's base URL, compared as grant paths are (one
// trailing slash of the request's path is ignored: Django REST APIs need it).
type SourceGrant struct {
	// Name is the source's name, a lower-case DNS label (CheckSourceName), e.g. "nautobot"; the
	// operator lists the source's URLs under the same name.
	Name    string   `json:"name"`
	Methods []string `json:"methods"`
	Paths   []string `json:"paths"`
}
