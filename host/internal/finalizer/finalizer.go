// Package finalizer adds, removes and releases the framework finalizer (docs/contract.md §5.2):
// the finalizer of the hook's profile (profile.Finalizer), whose name every write is given.
//
// Every write is a guarded JSON patch: an add is tested against the resourceVersion the binding
// context saw, a removal against the finalizer's index, so a concurrent writer makes the patch fail
// rather than be overwritten. A rejected patch is verified against the live object: when the
// object already has the desired state (or, for a release, is gone), the write succeeded in effect.
package finalizer

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// Action is one kind of finalizer write.
type Action int

const (
	// Add puts the finalizer on a live CR whose policy holds one.
	Add Action = iota
	// Remove takes a finalizer the policy no longer uses off a live CR.
	Remove
	// Release takes the finalizer off a deleted CR once its cleanup ran.
	Release
)

// String is the verb phrase of log lines: "unable to <action> <Kind> <name>".
func (a Action) String() string {
	switch a {
	case Add:
		return "add finalizer to"
	case Remove:
		return "remove finalizer from"
	default:
		return "release finalizer from"
	}
}

// API is the part of the Kubernetes client the finalizer needs.
type API interface {
	JSONPatch(ctx context.Context, t kubeapi.Target, patch []byte) error
	Finalizers(ctx context.Context, t kubeapi.Target) ([]string, error)
}

type op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patch is the JSON patch for action of finalizer name on r; nil when the CR already has the
// desired state.
func Patch(r *resource.Resource, kind string, action Action, name string) ([]byte, error) {
	var ops []op
	if action == Add {
		if r.HasFinalizer(name) {
			return nil, nil
		}
		if r.ResourceVersion == "" {
			return nil, fmt.Errorf("unable to %s %s %s; metadata.resourceVersion is missing", action, kind, r.Name)
		}
		ops = append(ops, op{Op: "test", Path: "/metadata/resourceVersion", Value: r.ResourceVersion})
		if len(r.Finalizers) == 0 {
			ops = append(ops, op{Op: "add", Path: "/metadata/finalizers", Value: []string{name}})
		} else {
			ops = append(ops, op{Op: "add", Path: "/metadata/finalizers/-", Value: name})
		}
	} else {
		i := r.FinalizerIndex(name)
		if i < 0 {
			return nil, nil
		}
		path := "/metadata/finalizers/" + strconv.Itoa(i)
		ops = []op{{Op: "test", Path: path, Value: name}, {Op: "remove", Path: path}}
	}
	return json.Marshal(ops)
}

// Apply performs action of finalizer name on r at t. A nil error means the CR has the desired
// finalizer state.
func Apply(ctx context.Context, api API, log *slog.Logger, t kubeapi.Target, r *resource.Resource, kind string, action Action, name string) error {
	patch, err := Patch(r, kind, action, name)
	if err != nil || patch == nil {
		return err
	}
	err = api.JSONPatch(ctx, t, patch)
	if err == nil {
		return nil
	}
	rejected, ok := kubeapi.AsAPIError(err)
	if !ok {
		// A transport or configuration error says nothing about the object: do not guess.
		return fmt.Errorf("failed to %s %s %s: %T: %w", action, kind, r.Name, err, err)
	}
	if action == Release && rejected.ObjectGone(r.Name) {
		return nil
	}
	live, gerr := api.Finalizers(ctx, t)
	switch {
	case gerr != nil:
		if ge, ok := kubeapi.AsAPIError(gerr); ok && action == Release && ge.ObjectGone(r.Name) {
			return nil
		}
		log.Error("failed to verify finalizers after a rejected metadata patch", "kind", kind,
			"namespace", t.Namespace, "name", t.Name, "error", gerr)
	case slices.Contains(live, name) == (action == Add):
		log.Info("the CR already has the desired finalizer state after a rejected metadata patch",
			"kind", kind, "namespace", t.Namespace, "name", r.Name)
		return nil
	}
	return fmt.Errorf("failed to %s %s %s: %w", action, kind, r.Name, rejected)
}
