package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk/internal/testhook"
)

// Import is spec.import: exactly one of ID and Filter.
type Import[F any] struct {
	ID     string `json:"id,omitempty"`
	Filter *F     `json:"filter,omitempty"`
}

// Spec holds the shared lifecycle fields of a CR's spec; a plugin embeds its own fields beside
// them or decodes both from the same JSON.
type Spec[R, F any] struct {
	ManagementPolicy ManagementPolicy `json:"managementPolicy,omitempty"`
	ManagedOptions   *ManagedOptions  `json:"managedOptions,omitempty"`
	Import           *Import[F]       `json:"import,omitempty"`
	Resource         *R               `json:"resource,omitempty"`
}

// Fields is the Adapter of a CR that uses the shared layout: its spec's lifecycle fields and
// status.id.
type Fields[R, F any] struct {
	Spec Spec[R, F]
	ID   string
}

// DecodeFields reads the shared fields from a CR's spec JSON and its status, and checks what the
// CRD's validation rules also check, so a CR applied before the rules existed gets the same error.
// A field neither Spec nor R or F declares is an error naming it, as ReconcileRequest.DecodeSpec
// makes it: the API server prunes what the CRD does not declare, so one that arrives means the CRD
// and the plugin are out of step, or the CR never went through the API server.
func DecodeFields[R, F any](spec json.RawMessage, status map[string]any) (*Fields[R, F], error) {
	f := &Fields[R, F]{}
	if len(spec) > 0 {
		if err := testhook.DecodeJSON(spec, &f.Spec, true); err != nil {
			if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
				return nil, fmt.Errorf("spec: unknown field %s: declare it in the plugin's spec type and the CRD, or remove it from the CR", name)
			}
			return nil, fmt.Errorf("spec: %w", err)
		}
	}
	if id, ok := status["id"].(string); ok {
		f.ID = id
	}
	return f, f.Validate()
}

// Validate checks the rules of the shared fields (the CRDs' CEL rules say the same).
func (f *Fields[R, F]) Validate() error {
	s := f.Spec
	if s.ManagedOptions != nil {
		switch s.ManagedOptions.OnDelete {
		case "", OnDeleteDelete, OnDeleteDetach:
		default:
			return fmt.Errorf("spec.managedOptions.onDelete must be delete or detach; got %q", s.ManagedOptions.OnDelete)
		}
		if s.ManagementPolicy == Unmanaged {
			return fmt.Errorf("spec.managedOptions applies only to spec.managementPolicy managed")
		}
	}
	return SharedFields[F]{ManagementPolicy: s.ManagementPolicy, Import: s.Import}.Validate(s.Resource != nil)
}

func (f *Fields[R, F]) ManagementPolicy() ManagementPolicy {
	if f.Spec.ManagementPolicy == "" {
		return Managed
	}
	return f.Spec.ManagementPolicy
}

func (f *Fields[R, F]) ManagedOptions() ManagedOptions {
	if f.Spec.ManagedOptions == nil {
		return ManagedOptions{OnDelete: OnDeleteDelete}
	}
	o := *f.Spec.ManagedOptions
	if o.OnDelete == "" {
		o.OnDelete = OnDeleteDelete
	}
	return o
}

func (f *Fields[R, F]) StatusID() string { return f.ID }
func (f *Fields[R, F]) ResourceSpec() *R { return f.Spec.Resource }

func (f *Fields[R, F]) ImportID() string {
	if f.Spec.Import == nil {
		return ""
	}
	return f.Spec.Import.ID
}

func (f *Fields[R, F]) ImportFilter() *F {
	if f.Spec.Import == nil {
		return nil
	}
	return f.Spec.Import.Filter
}
