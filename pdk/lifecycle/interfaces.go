package lifecycle

import (
	"context"
	"iter"
)

// ManagementPolicy is spec.managementPolicy.
type ManagementPolicy string

const (
	// Managed: the plugin creates, updates and (unless detached) deletes the resource.
	Managed ManagementPolicy = "managed"
	// Unmanaged: the plugin only imports and observes; it never writes to OpenStack or deletes.
	Unmanaged ManagementPolicy = "unmanaged"
)

// OnDelete is spec.managedOptions.onDelete: what deleting the CR does to a managed resource.
type OnDelete string

const (
	// OnDeleteDelete deletes the OpenStack resource with the CR (the default).
	OnDeleteDelete OnDelete = "delete"
	// OnDeleteDetach leaves the OpenStack resource in place.
	OnDeleteDetach OnDelete = "detach"
)

// ManagedOptions is spec.managedOptions.
type ManagedOptions struct {
	OnDelete OnDelete `json:"onDelete,omitempty"`
}

// Adapter is the driver's view of one CR (ORC's APIObjectAdapter): the shared lifecycle fields,
// whatever the CR's own layout. Fields[R, F] implements it for CRs that use the shared layout.
type Adapter[R, F any] interface {
	// ManagementPolicy is Managed when the CR does not say.
	ManagementPolicy() ManagementPolicy
	// ManagedOptions are the options of a managed CR (the zero value means the defaults).
	ManagedOptions() ManagedOptions
	// StatusID is status.id, "" when the CR records none.
	StatusID() string
	// ResourceSpec is what to create and keep converged; nil when the CR imports instead.
	ResourceSpec() *R
	// ImportID is spec.import.id, "" when absent.
	ImportID() string
	// ImportFilter is spec.import.filter, nil when absent.
	ImportFilter() *F
}

// BaseActuator reaches one resource type in OpenStack for one CR of type O; S is the OpenStack
// resource as the plugin reads it.
type BaseActuator[O, S any] interface {
	// ResourceID is the OpenStack id of res: the value stored in status.id.
	ResourceID(res *S) string
	// GetByID fetches the resource by id. It MUST return (nil, Done()) when OpenStack says the
	// resource does not exist, and an error progress for any other failure: the delete flow takes
	// (nil, Done()) as the proof that a resource is gone.
	GetByID(ctx context.Context, id string) (*S, Progress)
	// ListForAdoption lists the resources matching what the actuator would create for obj, so a
	// resource created by a run whose status write was lost is adopted rather than created again.
	// It is called immediately before every create, and on delete of a CR without status.id. The
	// match SHOULD be as exact as the resource allows (OpenStack does not refuse duplicate names).
	// It returns false when adoption does not apply to obj (for example, a CR with no resource
	// spec).
	ListForAdoption(ctx context.Context, obj O) (iter.Seq2[*S, error], bool)
}

// AdoptionConflict MAY be implemented by an actuator to word the error of an adoption that
// matched several resources (the driver's own wording names their ids). The error is terminal.
type AdoptionConflict[S any] interface {
	AdoptionConflict(matches []*S) error
}

// CreateActuator adds what the create and update flows need.
type CreateActuator[O, F, S any] interface {
	BaseActuator[O, S]
	// ListForImport lists the resources matching an import filter.
	ListForImport(ctx context.Context, obj O, filter F) (iter.Seq2[*S, error], Progress)
	// Create creates the resource for obj. The driver calls it at most once per CR: only after
	// adoption found nothing, and never again once a resource exists.
	//
	// Create MUST NOT do anything that can fail after the primary OpenStack resource exists:
	// further initialisation (tags, extra attributes) belongs in a Reconciler. It MAY do
	// idempotent work before creating the resource. It does not check whether the resource
	// exists: the driver did. When it cannot create the resource it MUST return a non-done
	// Progress, which MUST be enough for the CR to be run again at the right time.
	Create(ctx context.Context, obj O) (*S, Progress)
}

// DeleteActuator adds what the delete flow needs.
type DeleteActuator[O, S any] interface {
	BaseActuator[O, S]
	// Delete deletes res. The flow succeeds only when GetByID then says not found, so Delete need
	// not wait for completion. It SHOULD NOT fail when the resource no longer exists. It MAY
	// first do idempotent work on dependents. When it cannot delete, it MUST return a non-done
	// Progress.
	Delete(ctx context.Context, obj O, res *S) Progress
}

// Reconciler converges one aspect of an existing resource. Reconcilers run on every non-delete
// run of a managed CR whose resource exists, including the run that created it.
type Reconciler[O, S any] func(ctx context.Context, obj O, res *S) Progress

// ReconcileActuator is implemented by a CreateActuator that converges existing resources.
type ReconcileActuator[O, S any] interface {
	// Reconcilers returns the reconcilers of this run, run in order. Every one runs, even after
	// an earlier one failed, and all are passed the same obj and res: a change one makes is not
	// seen by the next. It MAY return reconcilers and a non-done Progress together; all
	// reconcilers still run and the Progress is aggregated with theirs.
	Reconcilers(ctx context.Context, obj O, res *S) ([]Reconciler[O, S], Progress)
}

// StatusWriter says what the CR's status reports about the observed resource.
type StatusWriter[O, S any] interface {
	// Available is whether the resource is usable (the Available condition): "True", "False" or
	// "Unknown", with a Progress when it is not yet (e.g. Progressing while it builds).
	Available(obj O, res *S) (ConditionStatus, Progress)
	// Observed is status.resource: what OpenStack holds, as the CR should show it.
	Observed(res *S) any
}

// ConditionStatus is a Kubernetes condition status.
type ConditionStatus string

const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// Factory builds the adapter and the actuators of one CR (ORC's ResourceHelperFactory).
type Factory[O, R, F, S any] interface {
	Adapter(obj O) Adapter[R, F]
	// NewCreateActuator returns the actuator of the create/update flow. When it cannot, it MUST
	// return a non-done Progress that gets the CR run again at the right time.
	NewCreateActuator(ctx context.Context, obj O) (CreateActuator[O, F, S], Progress)
	// NewDeleteActuator returns the actuator of the delete flow; it SHOULD need less than the
	// create actuator, since a half-created resource must still be deletable.
	NewDeleteActuator(ctx context.Context, obj O) (DeleteActuator[O, S], Progress)
}
