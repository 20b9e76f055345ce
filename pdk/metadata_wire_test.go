package pdk

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
)

// Metadata is the author's view of the ABI's message (abi.Metadata): every field an author sets
// must reach the host. A field added to Metadata and not to wire fails here (the literal below
// must set every field, or the first check fails).
func TestMetadataWireCarriesEveryField(t *testing.T) {
	m := Metadata{Name: "n", Noun: "thing", EnvPrefix: "N", BindingName: "b", Probe: true,
		Grants:  []Grant{{Service: "network", Methods: []string{"GET"}, Paths: []string{"v2.0/x"}}},
		Cleanup: Cleanup{WhenPrune: CleanupFinalizedPrune}, HasPrune: true, Version: "1", Description: "d",
		Source: "s", HasRemark: true, HasDelete: true, Lifecycle: true, PruneScope: PruneScopeGroup, skipStatus: true,
		StatusKeys: []string{"id"}, PruneKeys: []string{"name"},
		Sources:  []SourceGrant{{Name: "nautobot", Methods: []string{"GET"}, Paths: []string{"api"}}},
		Profiles: map[string]ProfileMetadata{"understack": {PruneScope: PruneScopeAll}}, Deterministic: true}
	mv, w := reflect.ValueOf(m), m.wire()
	wv := reflect.ValueOf(w)
	assert.Equal(t, abi.Version, w.ABIVersion)
	for i := range mv.NumField() {
		f := mv.Type().Field(i)
		require.False(t, mv.Field(i).IsZero(), "the test sets Metadata.%s", f.Name)
		name := f.Name
		if !f.IsExported() {
			name = string(name[0]-'a'+'A') + name[1:]
		}
		got := wv.FieldByName(name)
		require.True(t, got.IsValid(), "abi.Metadata has no %s", name)
		// Printed, since an unexported field's value cannot be taken as an interface.
		assert.Equal(t, fmt.Sprintf("%v", mv.Field(i)), fmt.Sprintf("%v", got), name)
	}
	assert.Equal(t, mv.NumField()+1, wv.NumField(), "abi.Metadata has a field Metadata does not set")
}
