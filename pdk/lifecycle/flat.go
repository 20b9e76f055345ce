package lifecycle

import (
	"errors"
	"fmt"
)

// SharedFields holds spec.managementPolicy and spec.import. A CR whose resource fields sit at the top of
// its spec (because its CRs predate the lifecycle) embeds it in its spec struct; Spec[R, F] nests
// the resource under spec.resource instead.
type SharedFields[F any] struct {
	ManagementPolicy ManagementPolicy `json:"managementPolicy,omitempty"`
	Import           *Import[F]       `json:"import,omitempty"`
}

// Validate checks the rules of the shared fields (the CRDs' CEL rules say the same): an import
// names an id or a filter, not both; an unmanaged CR imports; a managed CR has resource fields and
// no import. hasResource says whether the CR sets any resource field (leave out fields the API
// server fills with defaults).
func (s SharedFields[F]) Validate(hasResource bool) error {
	switch s.ManagementPolicy {
	case "", Managed, Unmanaged:
	default:
		return fmt.Errorf("spec.managementPolicy must be managed or unmanaged; got %q", s.ManagementPolicy)
	}
	// As in ORC: a managed CR says what to create, an unmanaged one what to observe; never both,
	// so which one the driver follows is never a guess.
	switch {
	case s.Import != nil && (s.Import.ID == "") == (s.Import.Filter == nil):
		return errors.New("spec.import needs exactly one of id and filter")
	case s.Import != nil && hasResource:
		return errors.New("spec.import and the resource fields are exclusive")
	case s.ManagementPolicy == Unmanaged && s.Import == nil:
		return errors.New("spec.managementPolicy unmanaged needs spec.import (id or filter)")
	case s.ManagementPolicy != Unmanaged && s.Import != nil:
		return errors.New("spec.import needs spec.managementPolicy unmanaged")
	case s.ManagementPolicy != Unmanaged && !hasResource:
		return errors.New("spec.managementPolicy managed needs the resource fields")
	}
	return nil
}

// Flat is the Adapter of a CR whose resource fields sit at the top of its spec, beside SharedFields.
type Flat[R, F any] struct {
	SharedFields SharedFields[F]
	// Resource is the spec itself; ResourceSpec reports nil while the CR imports.
	Resource *R
	// ID is status.id.
	ID string
	// OnDelete is what deleting the CR does; "" is OnDeleteDelete.
	OnDelete OnDelete
}

func (f *Flat[R, F]) ManagementPolicy() ManagementPolicy {
	if f.SharedFields.ManagementPolicy == "" {
		return Managed
	}
	return f.SharedFields.ManagementPolicy
}

func (f *Flat[R, F]) ManagedOptions() ManagedOptions {
	if f.OnDelete == "" {
		return ManagedOptions{OnDelete: OnDeleteDelete}
	}
	return ManagedOptions{OnDelete: f.OnDelete}
}

func (f *Flat[R, F]) StatusID() string { return f.ID }

func (f *Flat[R, F]) ResourceSpec() *R {
	if f.SharedFields.Import != nil {
		return nil
	}
	return f.Resource
}

func (f *Flat[R, F]) ImportID() string {
	if f.SharedFields.Import == nil {
		return ""
	}
	return f.SharedFields.Import.ID
}

func (f *Flat[R, F]) ImportFilter() *F {
	if f.SharedFields.Import == nil {
		return nil
	}
	return f.SharedFields.Import.Filter
}
