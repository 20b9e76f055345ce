package pdk

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// ABIVersion is the major version of the host ABI this package speaks (docs/abi.md). A host refuses
// a plugin whose major version it does not support.
const ABIVersion = 1

// Plugin is what a plugin author registers: metadata plus handlers. WaitForAPI and Reconcile are
// required unless Metadata.Probe is set; Prune is optional.
type Plugin struct {
	Metadata Metadata
	// WaitForAPI is one readiness probe attempt. It MUST only read. Return Permanent(err) when
	// retrying cannot help (an API too old for the plugin).
	WaitForAPI func(ctx *Context) error
	// Reconcile converges exactly one CR. It MUST be idempotent and MUST NOT fail for drift that
	// OpenStack will not let it fix: it reports that as a note in Result.Notes.
	Reconcile func(ctx *Context, req *ReconcileRequest) (*Result, error)
	// Prune deletes owned resources that no desired spec claims. It MUST return an error when a
	// delete could not complete, and MUST delete nothing for an empty desired set unless
	// req.AuthoritativeEmpty is true.
	Prune func(ctx *Context, req *PruneRequest) error
	// Delete is the per-CR delete of a CR being deleted under the host's finalizer: req carries
	// the CR's last spec and status (status.id included). The host releases the finalizer only
	// when the Result's Lifecycle progress is Success; any other outcome keeps the finalizer and
	// the CR is run again. It MUST NOT delete anything the CR does not own. Optional: without it
	// the set-based Prune is the only cleanup. pdk/lifecycle's Driver.Delete implements it.
	Delete func(ctx *Context, req *ReconcileRequest) (*Result, error)
	// Remark moves the ownership markers of what one CR claims from one profile's to another's,
	// for openstack-sync migrate (docs/migrating.md, docs/abi.md "remark"). Optional: without it a
	// plugin's CRs cannot be moved between profiles. It MUST change nothing but markers, MUST
	// never leave a resource without the marker of one of the two profiles, MUST write nothing
	// with req.DryRun (it reports what it would change), and MUST be idempotent.
	Remark func(ctx *Context, req *RemarkRequest) (*RemarkResult, error)
}

// RemarkRequest asks a plugin to move the markers of what one CR claims from profile From to
// profile To (e.g. "understack" to "openstack-sync").
type RemarkRequest struct {
	Object Object `json:"object"`
	// Spec is the CR's spec as JSON; decode it with DecodeSpec.
	Spec json.RawMessage `json:"spec"`
	// From and To name the profiles, e.g. "understack" and "openstack-sync".
	From string `json:"from"`
	To   string `json:"to"`
	// DryRun asks for the changes without making any.
	DryRun bool `json:"dry_run"`
}

// DecodeSpec decodes the CR's spec into v, as ReconcileRequest.DecodeSpec does.
func (r *RemarkRequest) DecodeSpec(v any) error {
	rr := ReconcileRequest{Object: r.Object, Spec: r.Spec}
	return rr.DecodeSpec(v)
}

// RemarkResult says what a remark changed, or with DryRun would change (abi.RemarkResult).
type RemarkResult = abi.RemarkResult

// Metadata describes the plugin to the host and to operators.
type Metadata struct {
	// Name identifies the plugin in logs and configuration, e.g. "neutron-router-flavors".
	Name string
	// Noun is the human name of one resource, e.g. "router flavor".
	Noun string
	// EnvPrefix is the default prefix of the hook's environment variables. Every variable
	// <EnvPrefix>_KEY reaches the plugin as Config("KEY").
	EnvPrefix string
	// BindingName is the default shell-operator binding name.
	BindingName string
	// Probe marks a connectivity probe that reconciles no CRs.
	Probe bool
	// Grants are the OpenStack calls the plugin needs. The host refuses every other call; the
	// operator may narrow these further but never widen them.
	Grants []Grant
	// Cleanup is the deletion-safety policy for each PRUNE setting. The zero value means the
	// framework default: FINALIZED_PRUNE with PRUNE=true when the plugin has a Prune handler,
	// NONE otherwise.
	Cleanup Cleanup
	// HasPrune is set by Register when Prune is non-nil; setting it without a Prune handler is an
	// error.
	HasPrune bool
	// Version is the plugin's release, e.g. "1.2.0" (no spaces, at most 64 bytes).
	Version string
	// Description says in one line what the plugin manages (at most 512 bytes, no line breaks).
	Description string
	// Source is where the plugin's code lives, e.g. a repository URL (no spaces, at most 512
	// bytes). The host shows these three (`openstack-sync plugin inspect`, OCI annotations)
	// and never acts on them.
	Source string
	// HasRemark is set by Register when Remark is non-nil.
	HasRemark bool
	// HasDelete is set by Register when Delete is non-nil.
	HasDelete bool
	// Lifecycle says the plugin reports the shared lifecycle status (Result.Lifecycle): the host
	// then writes status.id, status.resource and the Available and Progressing conditions, and
	// schedules the short progress run that picks up Progressing CRs (docs/abi.md).
	Lifecycle bool
	// PruneScope is PruneScopeGroup when the plugin's ownership marker records the credential
	// group (PruneRequest.Credentials): its Prune deletes only what that group owns and its
	// Reconcile never takes over what another group owns. The host then prunes each group on its
	// own, with only that group's desired specs, and a failure in one group no longer skips
	// another group's prune (docs/contract.md §7.1). Empty or PruneScopeAll: every prune spares
	// every group's desired specs and any failure skips every prune.
	PruneScope PruneScope
	// skipStatus is set by experimental.SkipStatus: Reconcile never reads the status.
	skipStatus bool
	// StatusKeys, when set, are the only top-level keys of the CR's status Reconcile reads: the
	// host sends just those (a lifecycle plugin reads "id", which it then MUST list), sparing the
	// guest decoding conditions and the observed resource for every CR (docs/abi.md). At most
	// MaxStatusKeys keys of printable text; not with experimental.SkipStatus.
	StatusKeys []string
	// PruneKeys, when set, are the only top-level spec keys Prune reads of
	// PruneRequest.DesiredSpecs: the host sends each desired spec with just those, so a prune over
	// thousands of CRs does not copy every whole spec into the guest (docs/abi.md). At most
	// MaxStatusKeys keys, by the rules of StatusKeys; only with HasPrune.
	PruneKeys []string
	// Sources are the sources of truth outside OpenStack the plugin reads (an IPAM such as
	// Nautobot), each by name with the methods and paths it needs, as Grants are for OpenStack.
	// The host refuses a request to a source not declared here; the operator allow-lists each
	// source's URLs (<PREFIX>_SOURCES) and the host adds the credential (Context.Source).
	Sources []SourceGrant
	// Deterministic declares that the plugin, given the same CRs, settings and answers from
	// OpenStack and its sources, sends the same requests in the same order and returns the same
	// results: it MUST NOT decide anything on the clock, randomness, map order or a volatile
	// response header (docs/abi.md, "The run replay"). The host may then answer a run in which
	// nothing changed by re-sending the last converged run's reads itself, without starting the
	// module.
	Deterministic bool
	// Profiles change what the host does under a profile the hook runs in (its <PREFIX>_PROFILE,
	// which the plugin reads as Config("PROFILE"), docs/migrating.md), keyed by the profile's
	// name, e.g. "understack". A profile not listed here keeps the metadata above.
	Profiles map[string]ProfileMetadata
}

// SourceGrant allows requests to one source outside OpenStack (abi.SourceGrant): a method in
// Methods on a path matching one of Paths, relative to the source's base URL, compared as Grant
// paths are (one trailing slash of the request's path is ignored: Django REST APIs need it).
type SourceGrant = abi.SourceGrant

// ProfileMetadata is what a plugin declares for one profile (abi.Profile): its Cleanup replaces
// Metadata.Cleanup under the profile (its zero value: the framework default), e.g. for a plugin
// whose resources carry an ownership marker, and so are pruned, only under the original
// operator's identifiers; its PruneScope, when set, replaces Metadata.PruneScope: a plugin whose
// own marker records the credential group prunes per group, and under a profile whose marker
// cannot (the original operator's, written exactly as the original writes it) declares
// PruneScopeAll there.
type ProfileMetadata = abi.Profile

// MaxStatusKeys bounds Metadata.StatusKeys and Metadata.PruneKeys (abi.MaxStatusKeys).
const MaxStatusKeys = abi.MaxStatusKeys

// PruneScope says what a plugin's ownership marker records (Metadata.PruneScope).
type PruneScope = abi.PruneScope

const (
	// PruneScopeAll: ownership records no credential group; the default.
	PruneScopeAll = abi.PruneScopeAll
	// PruneScopeGroup: ownership records the credential group.
	PruneScopeGroup = abi.PruneScopeGroup
)

// CleanupPolicy is the deletion-safety contract of a plugin for one PRUNE setting.
type CleanupPolicy = abi.CleanupPolicy

const (
	// CleanupDefault leaves the choice to the framework default rule.
	CleanupDefault = abi.CleanupDefault
	// CleanupNone runs no prune and holds no finalizer.
	CleanupNone = abi.CleanupNone
	// CleanupBestEffortPrune runs prune but holds no finalizer.
	CleanupBestEffortPrune = abi.CleanupBestEffortPrune
	// CleanupFinalizedPrune runs prune and holds the CR's finalizer until its group pruned.
	CleanupFinalizedPrune = abi.CleanupFinalizedPrune
)

// Cleanup names the policy for each PRUNE setting of the hook (abi.Cleanup): WhenPrune applies
// when <PREFIX>_PRUNE=true, WhenNoPrune when it is false or unset.
type Cleanup = abi.Cleanup

// Object is the Kubernetes identity of the CR being reconciled (abi.Object).
type Object = abi.Object

// ReconcileRequest is everything a plugin learns about one CR. Spec never holds
// cloudCredentialsRef: plugins do not see the credentials they act with.
type ReconcileRequest struct {
	Object Object `json:"object"`
	// Spec is the CR's spec as JSON; decode it with DecodeSpec.
	Spec json.RawMessage `json:"spec"`
	// Status is the CR's current status (may be nil; always nil with experimental.SkipStatus).
	Status map[string]any `json:"status,omitempty"`
	// Credentials names the CR's credential group (names only), as PruneRequest does: set when
	// the plugin prunes per group under the hook's profile (Metadata.PruneScope, a profile's
	// PruneScope), so that its reconcile can write the group into the ownership marker its
	// prune reads; the zero value otherwise.
	Credentials Credentials `json:"credentials,omitzero"`
}

// DecodeSpec decodes the CR's spec into v (a pointer to the author's spec struct). A field the
// struct does not know is an error: the API server prunes fields the CRD does not declare, so
// one that arrives is a CRD and plugin out of step, or a spec that never went through the API
// server, and guessing what it meant could change the wrong resource. So is anything after
// the spec's one JSON value, as with json.Unmarshal.
func (r *ReconcileRequest) DecodeSpec(v any) error {
	if len(r.Spec) == 0 {
		return fmt.Errorf("%s: the CR has no spec", r.Object)
	}
	if err := decodeJSON(r.Spec, v, true); err != nil {
		return fmt.Errorf("%s: spec: %w", r.Object, err)
	}
	return nil
}

// Credentials names a credential group: the CR's own in a ReconcileRequest, the one being pruned
// in a PruneRequest (names only, never secret material; abi.Credentials).
type Credentials = abi.Credentials

// PruneRequest asks a plugin to delete what no desired spec claims.
type PruneRequest struct {
	Credentials Credentials `json:"credentials"`
	// DesiredSpecs is the union of every live CR's spec across all credential groups; with
	// Metadata.PruneScope PruneScopeGroup, only the specs of this group's live CRs.
	DesiredSpecs []json.RawMessage `json:"desired_specs"`
	// AuthoritativeEmpty is true when an empty DesiredSpecs really means "nothing is wanted".
	AuthoritativeEmpty bool `json:"authoritative_empty"`
}

// DecodeSpecs decodes every desired spec into out, a pointer to a slice of the author's spec type.
//
// Each spec is decoded on its own into its element of the slice: a prune may carry thousands, and
// encoding them all into one array first (to decode that) cost the guest a second copy of every
// spec and two more passes over it (docs/benchmarks.md, the 5,000-runbook prune).
func (r *PruneRequest) DecodeSpecs(out any) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Slice {
		return fmt.Errorf("desired specs: DecodeSpecs needs a non-nil pointer to a slice, got %T", out)
	}
	s := reflect.MakeSlice(v.Elem().Type(), len(r.DesiredSpecs), len(r.DesiredSpecs))
	for i, raw := range r.DesiredSpecs {
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if err := decodeJSON(raw, s.Index(i).Addr().Interface(), false); err != nil {
			return fmt.Errorf("desired specs: [%d]: %w", i, err)
		}
	}
	v.Elem().Set(s)
	return nil
}

// Result is a successful reconcile.
type Result struct {
	// Notes describe drift OpenStack will not let the plugin fix; the CR is still Synced.
	Notes []string `json:"notes,omitempty"`
	// ExtraStatus keys are merged at the top level of the CR status (declare them in the CRD).
	ExtraStatus map[string]any `json:"extra_status,omitempty"`
	// Lifecycle is the shared lifecycle status of a plugin whose Metadata.Lifecycle is set. With
	// it, a failure is reported here rather than as an error, so the status.id of a resource that
	// exists is recorded even when a later step failed.
	Lifecycle *LifecycleStatus `json:"lifecycle,omitempty"`
	// recorded marks Recorded's result: the host answers with what it recorded.
	recorded bool
}

// LifecycleStatus is what a lifecycle plugin reports about one CR (docs/operators/status.md;
// abi.Lifecycle, whose Check is the host's rule for it).
type LifecycleStatus = abi.Lifecycle

var registered *Plugin

// Register makes p the plugin this module serves. Call it exactly once, from an init function.
// It panics on an invalid registration, so a broken plugin fails when the host loads it rather
// than on its first CR.
func Register(p Plugin) {
	if registered != nil {
		panic("pdk.Register called twice")
	}
	if p.Prune != nil {
		p.Metadata.HasPrune = true
	}
	if p.Delete != nil {
		p.Metadata.HasDelete = true
	}
	if p.Remark != nil {
		p.Metadata.HasRemark = true
	}
	if err := validate(&p); err != nil {
		panic("pdk.Register: " + err.Error())
	}
	registered = &p
}

// Registered returns a copy of the plugin passed to Register, or nil: tests call its handlers and
// read its metadata; changing the copy changes nothing the module serves.
func Registered() *Plugin {
	if registered == nil {
		return nil
	}
	p := *registered
	p.Metadata.Grants = slices.Clone(p.Metadata.Grants)
	for i, g := range p.Metadata.Grants {
		p.Metadata.Grants[i].Methods, p.Metadata.Grants[i].Paths = slices.Clone(g.Methods), slices.Clone(g.Paths)
	}
	p.Metadata.StatusKeys, p.Metadata.PruneKeys = slices.Clone(p.Metadata.StatusKeys), slices.Clone(p.Metadata.PruneKeys)
	p.Metadata.Sources = slices.Clone(p.Metadata.Sources)
	for i, g := range p.Metadata.Sources {
		p.Metadata.Sources[i].Methods, p.Metadata.Sources[i].Paths = slices.Clone(g.Methods), slices.Clone(g.Paths)
	}
	return &p
}

func validate(p *Plugin) error {
	m := &p.Metadata
	if m.Name == "" {
		return fmt.Errorf("Metadata.Name is empty")
	}
	if m.EnvPrefix == "" {
		return fmt.Errorf("plugin %q: Metadata.EnvPrefix is empty", m.Name)
	}
	if m.HasPrune && p.Prune == nil {
		return fmt.Errorf("plugin %q: Metadata.HasPrune is set but Prune is nil", m.Name)
	}
	if m.HasRemark && p.Remark == nil {
		return fmt.Errorf("plugin %q: Metadata.HasRemark is set but Remark is nil", m.Name)
	}
	if m.HasDelete && p.Delete == nil {
		return fmt.Errorf("plugin %q: Metadata.HasDelete is set but Delete is nil", m.Name)
	}
	if m.skipStatus && m.Lifecycle {
		return fmt.Errorf("plugin %q: experimental.SkipStatus and Metadata.Lifecycle are both set, but the lifecycle reads status.id", m.Name)
	}
	// The host's rules for status_keys and prune_keys (package abi), so a plugin learns of a
	// mistake in its tests rather than at load.
	if err := abi.CheckStatusKeys(m.StatusKeys, m.skipStatus, m.Lifecycle); err != nil {
		return fmt.Errorf("plugin %q: Metadata.StatusKeys: %w", m.Name, err)
	}
	if err := abi.CheckPruneKeys(m.PruneKeys, m.HasPrune); err != nil {
		return fmt.Errorf("plugin %q: Metadata.PruneKeys: %w", m.Name, err)
	}
	if p.Delete != nil && !m.Lifecycle {
		return fmt.Errorf("plugin %q: a Delete handler reports its outcome in Result.Lifecycle; set Metadata.Lifecycle", m.Name)
	}
	if !m.Probe && (p.WaitForAPI == nil || p.Reconcile == nil) {
		return fmt.Errorf("plugin %q: WaitForAPI and Reconcile are required", m.Name)
	}
	scopes := []PruneScope{m.PruneScope}
	for _, pm := range m.Profiles {
		scopes = append(scopes, pm.PruneScope)
	}
	for _, scope := range scopes {
		switch scope {
		case "", PruneScopeAll:
		case PruneScopeGroup:
			if p.Prune == nil {
				return fmt.Errorf("plugin %q: prune scope %s needs a Prune handler", m.Name, scope)
			}
		default:
			return fmt.Errorf("plugin %q: unknown prune scope %q", m.Name, scope)
		}
	}
	policies := []CleanupPolicy{m.Cleanup.WhenPrune, m.Cleanup.WhenNoPrune}
	for _, pm := range m.Profiles {
		policies = append(policies, pm.Cleanup.WhenPrune, pm.Cleanup.WhenNoPrune)
	}
	for _, c := range policies {
		switch c {
		case CleanupDefault, CleanupNone:
		case CleanupBestEffortPrune:
			if p.Prune == nil {
				return fmt.Errorf("plugin %q: cleanup policy %s needs a Prune handler", m.Name, c)
			}
		case CleanupFinalizedPrune:
			if p.Prune == nil && p.Delete == nil {
				return fmt.Errorf("plugin %q: cleanup policy %s needs a Prune or Delete handler", m.Name, c)
			}
		default:
			return fmt.Errorf("plugin %q: unknown cleanup policy %q", m.Name, c)
		}
	}
	for i, g := range m.Grants {
		if g.Service == "" || len(g.Methods) == 0 || len(g.Paths) == 0 {
			return fmt.Errorf("plugin %q: grant %d needs a service, methods and paths", m.Name, i)
		}
	}
	for i, g := range m.Sources {
		if !isSourceName(g.Name) || len(g.Methods) == 0 || len(g.Paths) == 0 {
			return fmt.Errorf("plugin %q: source %d needs a name (a lower-case DNS label), methods and paths", m.Name, i)
		}
	}
	return nil
}
