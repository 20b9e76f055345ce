package abi

// Version is the ABI major version; a module announces its own with an export named
// MarkerPrefix + version, and every host→guest message carries it (Envelope).
const (
	Version      = 1
	MarkerPrefix = "openstack_sync_abi_v"
)

// Entry points (exports) of ABI version 1.
const (
	EntryMetadata   = "metadata"
	EntryWaitForAPI = "wait_for_api"
	EntryGroupBegin = "group_begin"
	EntryGroupEnd   = "group_end"
	EntryReconcile  = "reconcile"
	EntryPrune      = "prune"
	EntryDelete     = "delete"
	EntryRemark     = "remark"
)

// PruneScope says what a plugin's ownership marker records (Metadata.PruneScope).
type PruneScope string

// Values of the metadata's prune_scope: "group" when the plugin's ownership marker records the
// credential group, so one group's prune spares another's resources; "" or "all" otherwise.
const (
	// PruneScopeAll: ownership records no credential group; the default.
	PruneScopeAll PruneScope = "all"
	// PruneScopeGroup: ownership records the credential group.
	PruneScopeGroup PruneScope = "group"
)

// Kinds of HostError: why the host produced no response to a request.
const (
	// KindGrantDenied: outside the plugin's grants, or the operator's narrowing; permanent.
	KindGrantDenied = "grant_denied"
	// KindInvalidRequest: a request the host will not send (bad method, path, header, or no
	// session in this entry point).
	KindInvalidRequest = "invalid_request"
	// KindSession: the cloud could not be reached or refused the credentials; permanent when
	// waiting will not help.
	KindSession = "session"
	// KindTooLarge: the request or the response exceeds a size limit.
	KindTooLarge = "too_large"
	// KindSourceDenied: the operator allow-lists no such source or URL for the plugin; permanent.
	KindSourceDenied = "source_denied"
	// KindSecret: the source's credential Secret or key is missing, empty or unsendable.
	KindSecret = "secret"
	// KindSource: the source could not be reached.
	KindSource = "source"
)
