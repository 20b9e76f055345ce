package runner

// The runner's log messages. Each is constant, so it can be searched for and alerted on; what
// varies goes in attributes: the plugin (on every line), "kind" and "cr" on lines about a CR,
// "namespace", "secret" and "cloud" on lines about a credential group, and counts and errors.
// docs/operating.md's troubleshooting table has a row for each Error and Warn message
// (test/docs keeps it so).
const (
	MsgFound               = "Found CRs to reconcile"
	MsgIgnoredUnreadable   = "Ignored unreadable CRs"
	MsgFinished            = "Finished reconciling"
	MsgFinishedWithErrors  = "Finished reconciling with errors"
	MsgStatusWritesFailed  = "Status writes failed; the run fails so that it runs again"
	MsgSkippingPrune       = "Skipping the prune; CRs failed to reconcile or could not be read"
	MsgKeepingFinalizer    = "Keeping the finalizer; its credential group was not pruned"
	MsgConnectFailed       = "Failed to connect to OpenStack"
	MsgAPIUnavailable      = "OpenStack API unavailable"
	MsgWaitingForAPI       = "Waiting for the OpenStack API"
	MsgCacheCloseFailed    = "Failed to close the plugin's group cache"
	MsgCacheStartFailed    = "Failed to start the plugin's group cache"
	MsgFewerCaches         = "Reconciling with fewer caches than the plugin asked for"
	MsgReconcileFailed     = "Failed to reconcile"
	MsgReconcileTerminal   = "Failed to reconcile; not retried until its spec changes"
	MsgProgressing         = "Progressing"
	MsgNeedsManualAction   = "Converged but needs manual action"
	MsgDeleteUnreachable   = "Cannot reach OpenStack to delete CRs; keeping their finalizers"
	MsgDeleteFailed        = "Failed to delete; keeping the finalizer"
	MsgDeleteTerminal      = "Cannot delete; not retried until its spec changes; keeping the finalizer"
	MsgDeleted             = "Deleted"
	MsgNothingToDelete     = "Released; nothing in OpenStack to delete"
	MsgBeingDeleted        = "Being deleted"
	MsgPruneNothingDesired = "Skipping the prune of a credential group; no desired resources"
	MsgPruneUnreachable    = "Cannot reach OpenStack for the prune"
	MsgPruneFailed         = "Failed to prune"
	MsgNotReleasingRenamed = "Not releasing the finalizer; the name now belongs to another object"
	MsgStatusNoName        = "Unable to patch the status; Kubernetes metadata.name is missing"
	MsgStatusCurrent       = "Skipping the status patch; the status is already current"
	MsgStatusPatchFailed   = "Failed to patch the status"
	MsgStatusCRGone        = "Not patching the status; the CR is gone"
	// Profiles (docs/migrating.md).
	MsgForeignFinalizer     = "Not reconciling a CR that carries the finalizer of another profile"
	MsgForeignFinalizerKept = "A deleted CR keeps the finalizer of another profile; this hook does not release it"
	// A plugin that prunes per group (scope.go).
	MsgSkippingGroupPrune   = "Skipping the prune of a credential group; its CRs failed to reconcile or unreadable CRs may belong to it"
	MsgUnreadableStopsPrune = "An unreadable CR stops the prune of the credential groups it may belong to"
)
