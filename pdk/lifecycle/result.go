package lifecycle

import (
	"time"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// Result is the Outcome as a plugin's Reconcile or Delete handler returns it: the host writes
// status.id, status.resource, the Available and Progressing conditions, and the Ready condition
// and syncStatus it always wrote (docs/operators/status.md). A failure travels in the result, not
// as an error, so the id of a resource that exists is recorded whatever failed after it. A
// reason attached with pdk.WithReason to an error of the Progress becomes the Ready condition's
// reason.
func (o Outcome) Result() *pdk.Result {
	avail := o.Available
	if avail == "" {
		avail = ConditionUnknown
	}
	ls := &pdk.LifecycleStatus{ID: o.ID, Resource: o.Resource, Available: string(avail),
		Reason: o.Progress.Reason(), Message: o.Progress.Message()}
	if err := o.Progress.Err(); err != nil {
		ls.ReadyReason = pdk.Reason(err)
	}
	if d := o.Progress.Requeue(); d > 0 {
		ls.RequeueSeconds = int64((d + time.Second - 1) / time.Second)
	}
	return &pdk.Result{Lifecycle: ls}
}
