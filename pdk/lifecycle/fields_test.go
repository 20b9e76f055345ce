package lifecycle_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/experimental/bench"
	"github.com/openstack-sync/openstack-sync/pdk/lifecycle"
)

func TestDecodeFields(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		status     map[string]any
		err        string
		policy     lifecycle.ManagementPolicy
		onDelete   lifecycle.OnDelete
		importID   string
		filter     bool
		resource   bool
		id         string
	}{
		{name: "managed by default", spec: `{"resource":{"Name":"web"}}`, status: map[string]any{"id": "w1"},
			policy: "managed", onDelete: "delete", resource: true, id: "w1"},
		{name: "detach", spec: `{"resource":{"Name":"web"},"managedOptions":{"onDelete":"detach"}}`, policy: "managed", onDelete: "detach", resource: true},
		{name: "unmanaged import by id", spec: `{"managementPolicy":"unmanaged","import":{"id":"w1"}}`, policy: "unmanaged", onDelete: "delete", importID: "w1"},
		{name: "unmanaged import by filter", spec: `{"managementPolicy":"unmanaged","import":{"filter":{"Name":"web"}}}`, policy: "unmanaged", onDelete: "delete", filter: true},
		{name: "unmanaged without import", spec: `{"managementPolicy":"unmanaged"}`, err: "unmanaged needs spec.import"},
		{name: "managed without resource", spec: `{}`, err: "managed needs the resource fields"},
		{name: "import and resource", spec: `{"managementPolicy":"unmanaged","import":{"id":"w1"},"resource":{}}`, err: "exclusive"},
		{name: "import with both id and filter", spec: `{"managementPolicy":"unmanaged","import":{"id":"w1","filter":{}}}`, err: "exactly one of id and filter"},
		{name: "empty import", spec: `{"managementPolicy":"unmanaged","import":{}}`, err: "exactly one of id and filter"},
		{name: "unknown policy", spec: `{"managementPolicy":"Managed","resource":{}}`, err: `managed or unmanaged; got "Managed"`},
		{name: "unknown onDelete", spec: `{"resource":{},"managedOptions":{"onDelete":"orphan"}}`, err: `delete or detach; got "orphan"`},
		{name: "managedOptions on unmanaged", spec: `{"managementPolicy":"unmanaged","import":{"id":"x"},"managedOptions":{}}`, err: "only to spec.managementPolicy managed"},
		{name: "not JSON", spec: `[`, err: "spec:"},
		{name: "unknown field", spec: `{"resource":{"Name":"web"},"resorce":{}}`,
			err: `spec: unknown field "resorce": declare it in the plugin's spec type and the CRD, or remove it from the CR`},
		{name: "unknown resource field", spec: `{"resource":{"Name":"web","Colour":"red"}}`, err: `spec: unknown field "Colour"`},
		{name: "unknown filter field", spec: `{"managementPolicy":"unmanaged","import":{"filter":{"Size":1}}}`, err: `spec: unknown field "Size"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slow := bench.SlowDecodes()
			f, err := lifecycle.DecodeFields[widgetSpec, widgetFilter](json.RawMessage(tc.spec), tc.status)
			if tc.err == "" {
				assert.Equal(t, slow, bench.SlowDecodes(), "a plain spec takes the PDK's own decoder")
			}
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.policy, f.ManagementPolicy())
			assert.Equal(t, tc.onDelete, f.ManagedOptions().OnDelete)
			assert.Equal(t, tc.importID, f.ImportID())
			assert.Equal(t, tc.filter, f.ImportFilter() != nil)
			assert.Equal(t, tc.resource, f.ResourceSpec() != nil)
			assert.Equal(t, tc.id, f.StatusID())
		})
	}
}

func TestFlatAdapter(t *testing.T) {
	res := &widgetSpec{Name: "web"}
	f := &lifecycle.Flat[widgetSpec, widgetFilter]{Resource: res, ID: "w1"}
	assert.Equal(t, lifecycle.Managed, f.ManagementPolicy())
	assert.Equal(t, lifecycle.OnDeleteDelete, f.ManagedOptions().OnDelete)
	assert.Same(t, res, f.ResourceSpec())
	assert.Equal(t, "w1", f.StatusID())
	assert.Empty(t, f.ImportID())
	assert.Nil(t, f.ImportFilter())

	f = &lifecycle.Flat[widgetSpec, widgetFilter]{Resource: res, OnDelete: lifecycle.OnDeleteDetach,
		SharedFields: lifecycle.SharedFields[widgetFilter]{ManagementPolicy: lifecycle.Unmanaged, Import: &lifecycle.Import[widgetFilter]{Filter: &widgetFilter{Name: "web"}}}}
	assert.Nil(t, f.ResourceSpec(), "an importing CR has no resource spec, whatever its spec struct holds")
	assert.Equal(t, "web", f.ImportFilter().Name)
	assert.Equal(t, lifecycle.OnDeleteDetach, f.ManagedOptions().OnDelete)
}

func TestSharedValidate(t *testing.T) {
	imp := &lifecycle.Import[widgetFilter]{ID: "w1"}
	for _, tc := range []struct {
		name        string
		s           lifecycle.SharedFields[widgetFilter]
		hasResource bool
		err         string
	}{
		{"managed with resource", lifecycle.SharedFields[widgetFilter]{}, true, ""},
		{"unmanaged import", lifecycle.SharedFields[widgetFilter]{ManagementPolicy: lifecycle.Unmanaged, Import: imp}, false, ""},
		{"managed import", lifecycle.SharedFields[widgetFilter]{Import: imp}, false, "needs spec.managementPolicy unmanaged"},
		{"import and resource", lifecycle.SharedFields[widgetFilter]{ManagementPolicy: lifecycle.Unmanaged, Import: imp}, true, "exclusive"},
		{"managed without resource", lifecycle.SharedFields[widgetFilter]{}, false, "managed needs the resource fields"},
		{"unmanaged without import", lifecycle.SharedFields[widgetFilter]{ManagementPolicy: lifecycle.Unmanaged}, false, "needs spec.import"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.Validate(tc.hasResource)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
		})
	}
}
