// Package plugin is the contract between the host framework and the code that knows one resource
// type. The framework drives a Plugin; the wasm runtime adapts a sandboxed module to it and tests
// supply Go doubles, so the runner cannot tell them apart. OpenStack is reached only through a
// Session, which the framework obtains from a Connector for one credential group.
//
// The contract, in the words of RFC 2119:
//
//   - WaitForAPI MUST only read. It SHOULD return an error marked Permanent when retrying cannot
//     help (an API too old, a policy refusal), so the readiness loop stops at once.
//   - Reconcile MUST converge exactly one CR and MUST be idempotent: a converged CR produces no
//     writes. It MUST NOT fail for drift OpenStack will not let it fix; it reports that as a note.
//     It MAY use the group's Cache to share reads between CRs of the same credential group, and
//     MUST NOT rely on anything surviving past the group.
//   - Prune MUST delete only resources that carry the plugin's ownership marker and whose name is
//     not claimed by any desired spec. It MUST treat an empty desired set as "delete nothing"
//     unless AuthoritativeEmpty is set. It MUST return an error when a delete could not complete,
//     so the framework keeps the finalizer and the next run retries.
package plugin

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// Metadata describes a plugin to the framework and to operators.
type Metadata struct {
	// Name identifies the plugin in logs and configuration, e.g. "ironic-runbooks".
	Name string
	// Noun is the human name of one resource, e.g. "ironic runbook"; it appears in status messages.
	Noun string
	// EnvPrefix is the default prefix of the hook's environment variables, e.g. "IRONIC_RUNBOOK".
	EnvPrefix string
	// BindingName is the default shell-operator binding (and queue) name, e.g. "ironic-runbooks".
	BindingName string
	// Probe marks a connectivity probe that reconciles no CRs: its hook only validates a default
	// credential on start-up.
	Probe bool
	// Lifecycle marks a plugin that reports the shared lifecycle status (Result.Lifecycle); its
	// hook also runs the short progress schedule that picks up Progressing CRs.
	Lifecycle bool
	// HasDelete marks a plugin that implements Deleter: CRs being deleted go to it one by one.
	HasDelete bool
	// HasPrune says whether a plugin with HasDelete also has a set prune; the framework asks it
	// only of such plugins (every other plugin is pruned as its cleanup policy says).
	HasPrune bool
	// PrunePerGroup declares that the plugin's ownership marker records the credential group
	// (PruneRequest.Credentials), that its prune deletes only what the group being pruned owns,
	// and that its reconcile never takes over what another group owns. The framework then prunes
	// each group on its own (docs/contract.md §7.1): a group's prune receives only that group's
	// desired specs, and a failure in one group never skips another group's prune. Without it
	// every group's prune must spare every group's names, so any failure skips every prune.
	PrunePerGroup bool
	// HasRemark marks a plugin that implements Remarker: its CRs can be moved between profiles
	// (openstack-sync migrate).
	HasRemark bool
	// PruneKeys, when set, are the only top-level spec keys the plugin's prune reads: the
	// framework hands each desired spec with only those, so a prune over thousands of CRs does
	// not carry every spec whole into the sandbox (docs/abi.md, "metadata").
	PruneKeys []string
	// Deterministic declares that the same CRs, settings and answers give the same requests and
	// results (docs/abi.md, "The run replay"): the host may replay a converged run of it.
	Deterministic bool
}

// Equal reports whether m and o are the same metadata.
func (m Metadata) Equal(o Metadata) bool { return reflect.DeepEqual(m, o) }

// Plugin is one resource type's reconcile and prune logic. Implementations need not be safe for
// concurrent use: the framework calls one method at a time.
type Plugin interface {
	Metadata() Metadata
	// CleanupPolicy reports what deleting a CR means, given the hook's PRUNE setting.
	CleanupPolicy(prune bool) CleanupPolicy
	// WaitForAPI is one readiness probe attempt; the framework owns retries and delays.
	WaitForAPI(ctx context.Context, s Session) error
	// NewCache starts a credential group. The framework closes the cache when the group is done.
	NewCache(ctx context.Context) (Cache, error)
	// Reconcile converges one live CR.
	Reconcile(ctx context.Context, s Session, c Cache, req ReconcileRequest) (Result, error)
	// Prune deletes owned resources that no desired spec claims. Only called when the cleanup
	// policy runs prune.
	Prune(ctx context.Context, s Session, req PruneRequest) error
	// Close releases the plugin's resources at the end of the run.
	Close(ctx context.Context) error
}

// Concurrent is implemented by a plugin whose Reconcile may run on several caches of one
// credential group at once. Each cache is still used by one goroutine at a time, one CR at a
// time, and never outlives its group; the framework opens up to ReconcileConcurrency caches per
// group and spreads the group's CRs over them. Every other method is still called one at a time.
type Concurrent interface {
	ReconcileConcurrency() int
}

// MemoReporter is implemented by a plugin that keeps a convergence memo (docs/abi.md): MemoMisses
// is how many of this run's reconciles asked it and found no record. Such a run read what the
// next one, answered from the records this run made, will not; the framework does not record it
// for a replay (docs/abi.md, "The run replay"), so a replay never re-sends a memo miss's reads.
type MemoReporter interface {
	MemoMisses() int
}

// Cache is the state a plugin shares between the CRs of one credential group.
type Cache interface {
	Close(ctx context.Context) error
}

// Object is the Kubernetes identity of the CR being reconciled.
type Object struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        string
	// Generation is metadata.generation; nil when the object carries none.
	Generation *int64
}

// ReconcileRequest is everything a plugin learns about one CR. Spec never holds
// cloudCredentialsRef: plugins do not see which credentials they act with.
type ReconcileRequest struct {
	Object Object
	// Spec is the CR's spec as JSON, written as json.Marshal writes its decoded value (keys
	// sorted): the bytes a wasm plugin is handed, kept that way from the binding context on.
	Spec json.RawMessage
	// Status is the CR's current status as read from the binding context (may be nil).
	Status map[string]any
	// Credentials is the CR's credential group (names only), which a plugin that prunes per
	// group records in its ownership marker (docs/contract.md §7.1).
	Credentials Credentials
}

// Result is a successful reconcile.
type Result struct {
	// Notes describe drift OpenStack will not let the plugin fix; the CR is still Synced.
	Notes []string
	// ExtraStatus keys are merged at the top level of the CR status.
	ExtraStatus map[string]any
	// Lifecycle is the shared lifecycle status, reported by plugins whose Metadata.Lifecycle is
	// set; nil for the others.
	Lifecycle *Lifecycle
}

// Progressing-condition reasons of the shared lifecycle status (the ABI's: a plugin reports them).
const (
	ReasonSuccess              = abi.ReasonSuccess
	ReasonProgressing          = abi.ReasonProgressing
	ReasonTransientError       = abi.ReasonTransientError
	ReasonInvalidConfiguration = abi.ReasonInvalidConfiguration
	ReasonUnrecoverableError   = abi.ReasonUnrecoverableError
)

// Lifecycle is the shared lifecycle status of one CR. A failure is reported here rather than as
// an error, so the id of a resource that exists is recorded whatever failed after it.
type Lifecycle struct {
	// ID is status.id; "" leaves the recorded id as it is.
	ID string
	// Resource is status.resource, the observed resource; nil leaves it as it is.
	Resource any
	// Available is the Available condition's status: True, False or Unknown.
	Available string
	// Reason is the Progressing condition's reason (one of the Reason* constants).
	Reason  string
	Message string
	// RequeueSeconds is how soon a Progressing CR asks to be run again (a hint).
	RequeueSeconds int64
	// ReadyReason, when set on a failure, is the Ready condition's reason; else Reason is.
	ReadyReason string
}

// Terminal reports whether the reason is one no retry fixes until the spec changes.
func (l *Lifecycle) Terminal() bool {
	return l != nil && (l.Reason == ReasonInvalidConfiguration || l.Reason == ReasonUnrecoverableError)
}

// Deleter is implemented by plugins with a per-CR delete (Metadata.HasDelete): a CR being deleted
// under the finalizer is passed with its last spec and status, status.id included. The finalizer
// may be released only when the result's Lifecycle reason is Success.
type Deleter interface {
	Delete(ctx context.Context, s Session, c Cache, req ReconcileRequest) (Result, error)
}

// Remarker is implemented by plugins that can move the ownership markers of what one CR claims
// from one profile's to another's (Metadata.HasRemark), for openstack-sync migrate
// (docs/migrating.md). Remark MUST change nothing but markers, MUST never leave a resource without
// the marker of one of the two profiles, MUST write nothing with DryRun, and MUST be idempotent.
type Remarker interface {
	Remark(ctx context.Context, s Session, req RemarkRequest) (RemarkResult, error)
}

// RemarkRequest names one CR and the profiles its resources move between.
type RemarkRequest struct {
	Object Object
	// Spec is the CR's spec as JSON, as ReconcileRequest.Spec.
	Spec json.RawMessage
	// From and To are profile names, e.g. "understack" and "openstack-sync".
	From, To string
	DryRun   bool
}

// RemarkResult is what a remark changed (or with DryRun would change), one line per resource,
// and what it found but left alone.
type RemarkResult struct {
	Changes []string
	Notes   []string
}

// PruneRequest asks a plugin to delete what no desired spec claims.
type PruneRequest struct {
	// Credentials is the group being pruned (names only, never secret material).
	Credentials Credentials
	// DesiredSpecs is the union of every live CR's spec across all credential groups; with
	// Metadata.PrunePerGroup, only the specs of this group's live CRs. Each is JSON, as
	// ReconcileRequest.Spec.
	DesiredSpecs []json.RawMessage
	// AuthoritativeEmpty is true when this group has no desired CR because its CRs were deleted,
	// so an empty desired set really means "nothing is wanted".
	AuthoritativeEmpty bool
}

// Credentials names one credential group: a clouds.yaml entry in a Secret in the CR's namespace.
type Credentials struct {
	Namespace  string
	SecretName string
	CloudName  string
}

func (c Credentials) String() string {
	return fmt.Sprintf("namespace=%q secret=%q cloud=%q", c.Namespace, c.SecretName, c.CloudName)
}

// Compare orders credential groups: namespace, then secret name, then cloud name.
func (c Credentials) Compare(o Credentials) int {
	return cmp.Or(cmp.Compare(c.Namespace, o.Namespace), cmp.Compare(c.SecretName, o.SecretName),
		cmp.Compare(c.CloudName, o.CloudName))
}

// Connector opens the OpenStack session of one credential group.
type Connector interface {
	Connect(ctx context.Context, creds Credentials) (Session, error)
}

// Session sends requests to OpenStack for one credential group. Errors that retrying cannot fix
// (authentication or authorization refused) are marked Permanent.
type Session interface {
	Do(ctx context.Context, req Request) (*Response, error)
}

// Authenticator is implemented by a session that can get its token before its first request:
// the framework calls Authenticate while the plugin is still loading, so the token request
// overlaps the module's compile. It MUST make at most one attempt, and a token or a refusal it
// gets MUST serve the session's later requests as if the first of them had got it.
type Authenticator interface {
	Authenticate(ctx context.Context) error
}

// Request is one OpenStack API call, addressed by catalog service type and a path relative to the
// service endpoint.
type Request struct {
	// Service is the catalog service type, e.g. "network" or "baremetal".
	Service string
	Method  string
	// Path is relative to the endpoint, e.g. "v2.0/flavors"; it never holds a scheme or host.
	Path  string
	Query url.Values
	// Header carries extra request headers; credentials headers are never honoured.
	Header http.Header
	// Microversion, when set, is sent in the service's microversion header(s).
	Microversion string
	// Body is the JSON request body, if any.
	Body []byte
}

// Response is the answer to a Request. Non-2xx statuses are responses, not errors: the plugin
// decides what a 404 or 409 means.
type Response struct {
	StatusCode int
	Header     http.Header
	Body       []byte
}
