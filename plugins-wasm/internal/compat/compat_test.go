package compat_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]compat.Profile{"": compat.OpenStackSync, "openstack-sync": compat.OpenStackSync, "understack": compat.Understack} {
		got, err := compat.Parse(in)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := compat.Parse("Understack")
	assert.EqualError(t, err, `config PROFILE (the hook's <PREFIX>_PROFILE) must be openstack-sync or understack; got "Understack"`)
	assert.Equal(t, compat.Understack, compat.OpenStackSync.Other())
	assert.Equal(t, compat.OpenStackSync, compat.Understack.Other())
}

func TestOriginalReasons(t *testing.T) {
	named := pdk.Permanent(pdk.WithReason("InvalidSpec", errors.New("spec.name must be set")))
	res := &pdk.Result{Lifecycle: &pdk.LifecycleStatus{Reason: "InvalidConfiguration", ReadyReason: "InvalidSpec"}}

	gotRes, gotErr := compat.OpenStackSync.OriginalReasons(res, named)
	assert.Same(t, res, gotRes, "this project's profile keeps every reason")
	assert.Equal(t, "InvalidSpec", pdk.Reason(gotErr))

	gotRes, gotErr = compat.Understack.OriginalReasons(res, named)
	assert.Empty(t, pdk.Reason(gotErr), "the original named no such reason")
	assert.True(t, pdk.IsPermanent(gotErr), "the error is otherwise the same")
	assert.Equal(t, "spec.name must be set", gotErr.Error())
	assert.Empty(t, gotRes.Lifecycle.ReadyReason)
	assert.Equal(t, "InvalidSpec", res.Lifecycle.ReadyReason, "the plugin's own result is not changed")

	_, gotErr = compat.Understack.OriginalReasons(nil, pdk.WithReason("NautobotPrefixMissing", errors.New("x")), "NautobotPrefixMissing")
	assert.Equal(t, "NautobotPrefixMissing", pdk.Reason(gotErr), "a reason the original named is kept")
	gotRes, gotErr = compat.Understack.OriginalReasons(nil, nil)
	assert.Nil(t, gotRes)
	assert.NoError(t, gotErr)
}

func TestForeignError(t *testing.T) {
	err := &compat.ForeignError{What: `runbook "bios" (u-1)`, Profile: compat.Understack, Marker: "extra _understack_runbook_operator=managed"}
	assert.Equal(t, `runbook "bios" (u-1) carries the ownership marker of the understack profile (extra _understack_runbook_operator=managed), `+
		`not this hook's: set the hook's <PREFIX>_PROFILE=understack (chart: compatibility.profile) if that operator is replaced, `+
		`or finish moving it with openstack-sync migrate`, err.Error())
}
