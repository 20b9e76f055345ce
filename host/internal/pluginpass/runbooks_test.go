package pluginpass

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
)

func runbooksEnv(t *testing.T, prune bool, ironicMax string) *env {
	return newEnv(t, setup{plugin: "ironic-runbooks", crd: "ironic.openstack-sync.io/v1alpha1",
		kind: "IronicRunbook", prefix: "IRONIC_RUNBOOK", prune: prune, ironicMax: ironicMax})
}

func runbookNamed(c *fakecloud.Cloud, name string) (fakecloud.Runbook, bool) {
	for _, rb := range c.Runbooks() {
		if rb.Name == name {
			return rb, true
		}
	}
	return fakecloud.Runbook{}, false
}

const biosSpec = `_cloud: local-system
runbookName: CUSTOM_BIOS_DEFAULTS
description: fleet defaults
public: true
traits: [CUSTOM_BIOS_DEFAULTS]
steps:
  - {interface: bios, step: apply_configuration, order: 10, args: {settings: [{name: LogicalProc, value: Enabled}]}}
  - {interface: management, step: clear_job_queue, order: 5}
`

func TestRunbookLifecycleOnTrixieIronic(t *testing.T) {
	e := runbooksEnv(t, true, "1.96")
	e.apply("bios", biosSpec)

	require.Equal(t, 0, e.synchronize())
	rb, ok := runbookNamed(e.cloud, "CUSTOM_BIOS_DEFAULTS")
	require.True(t, ok)
	assert.True(t, rb.Public)
	assert.Equal(t, "ironic-runbooks", rb.Extra["openstack-sync.io/managed-by"])
	st := e.status("bios")
	assert.Equal(t, "Synced", st["syncStatus"])
	assert.Equal(t, "Successfully reconciled ironic runbook; needs manual action: "+
		"traits CUSTOM_BIOS_DEFAULTS are not applied: Ironic offers API 1.96 and runbook traits need 1.112; "+
		"description is not applied: Ironic offers API 1.96 and runbook descriptions need 1.112", st["message"])
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, e.finalizers("bios"))

	// Converged: nothing written; one GET per runbook at the discovered microversion.
	e.cloud.ResetRequests()
	kubeBefore := len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a converged run patches no status and no finalizer: the status is current")
	assert.Empty(t, e.writes())
	gets := 0
	for _, r := range e.cloud.Requests() {
		if r.Service == fakecloud.Baremetal && r.Path == "/v1/runbooks/CUSTOM_BIOS_DEFAULTS" {
			gets++
			assert.Equal(t, "1.96", r.Microversion)
		}
	}
	assert.Equal(t, 1, gets)
	var baremetal []string
	for _, r := range e.cloud.Requests() {
		if r.Service == fakecloud.Baremetal {
			baremetal = append(baremetal, r.Method+" "+r.Path)
		}
	}
	assert.Equal(t, []string{
		"GET /", "GET /v1/runbooks", // readiness: version, list of one
		"GET /", "GET /v1/runbooks/CUSTOM_BIOS_DEFAULTS", // the group's version, one GET per CR
		"GET /", "GET /v1/runbooks", // prune (PRUNE=true): version, the list
	}, baremetal)

	// Drift: a changed step is patched.
	obj := e.get("bios")
	obj["spec"].(map[string]any)["steps"].([]any)[1].(map[string]any)["order"] = 7
	_, err := e.kube.Update(e.res, namespace, "bios", "", obj)
	require.NoError(t, err)
	e.cloud.ResetRequests()
	require.Equal(t, 0, e.synchronize())
	assert.Equal(t, 1, len(e.writes()))
	rb, _ = runbookNamed(e.cloud, "CUSTOM_BIOS_DEFAULTS")
	for _, s := range rb.Steps {
		if s.Step == "clear_job_queue" {
			assert.EqualValues(t, 7, s.Order)
		}
	}
}

func TestRunbookTraitsAt1112(t *testing.T) {
	e := runbooksEnv(t, false, "1.112")
	e.apply("bios", biosSpec)
	require.Equal(t, 0, e.synchronize())
	rb, _ := runbookNamed(e.cloud, "CUSTOM_BIOS_DEFAULTS")
	assert.Equal(t, []string{"CUSTOM_BIOS_DEFAULTS"}, rb.Traits)
	require.NotNil(t, rb.Description)
	assert.Equal(t, "fleet defaults", *rb.Description)
	assert.Equal(t, "Successfully reconciled ironic runbook", e.status("bios")["message"])
	assert.Empty(t, e.finalizers("bios"), "PRUNE=false: no finalizer")
}

func TestRunbookAdoptionAndInvalidName(t *testing.T) {
	e := runbooksEnv(t, false, "1.96")
	e.cloud.AddRunbook(fakecloud.Runbook{Name: "CUSTOM_BIOS_DEFAULTS", Public: true, Extra: map[string]any{"ticket": "OPS-1"},
		Steps: []fakecloud.RunbookStep{{Interface: "raid", Step: "delete_configuration", Order: 1, Args: map[string]any{}}}})
	e.apply("bios", biosSpec)
	e.apply("bad", "runbookName: bios-defaults\npublic: true\ntraits: [CUSTOM_X]\nsteps: [{interface: raid, step: x, order: 1}]\n_cloud: local-system\n")
	assert.Equal(t, 1, e.synchronize(), "one CR failed")
	rb, _ := runbookNamed(e.cloud, "CUSTOM_BIOS_DEFAULTS")
	assert.Equal(t, "ironic-runbooks", rb.Extra["openstack-sync.io/managed-by"], "the unowned runbook is adopted")
	assert.Len(t, rb.Steps, 2)
	st := e.status("bad")
	assert.Equal(t, "Failed", st["syncStatus"])
	assert.Contains(t, st["message"], `spec.runbookName "bios-defaults" must be a trait name`)
	assert.Equal(t, "InvalidSpec", st["conditions"].([]any)[0].(map[string]any)["reason"])
}

func TestRunbookPrune(t *testing.T) {
	e := runbooksEnv(t, true, "1.96")
	e.apply("bios", biosSpec)
	e.apply("raid", "_cloud: local-system\nrunbookName: CUSTOM_RAID\npublic: true\ntraits: [CUSTOM_RAID]\nsteps: [{interface: raid, step: delete_configuration, order: 1}]\n")
	require.Equal(t, 0, e.synchronize())
	e.cloud.AddRunbook(fakecloud.Runbook{Name: "CUSTOM_HANDMADE", Public: true,
		Steps: []fakecloud.RunbookStep{{Interface: "raid", Step: "x", Order: 1, Args: map[string]any{}}}})

	// In use: Ironic refuses the delete; the prune fails and the finalizer is held.
	raid, _ := runbookNamed(e.cloud, "CUSTOM_RAID")
	remove := e.cloud.Inject(fakecloud.Fault{Service: fakecloud.Baremetal, Method: "DELETE", Path: "/v1/runbooks/" + raid.UUID,
		Status: 409, Body: `{"error_message": "{\"faultstring\": \"Runbook is in use\"}"}`})
	e.deleteCR("raid")
	assert.Equal(t, 1, e.synchronize())
	_, ok := runbookNamed(e.cloud, "CUSTOM_RAID")
	assert.True(t, ok)
	assert.Equal(t, []any{"openstack-sync.io/finalizer"}, e.finalizers("raid"))
	assert.Contains(t, e.logs.String(), "runbooks still present: CUSTOM_RAID")

	// Once Ironic lets go, the next run deletes it and releases the CR; the unowned one stays.
	remove()
	require.Equal(t, 0, e.synchronize())
	_, ok = runbookNamed(e.cloud, "CUSTOM_RAID")
	assert.False(t, ok)
	_, err := e.kube.Get(e.res, namespace, "raid")
	assert.Error(t, err, "the finalizer was released")
	_, ok = runbookNamed(e.cloud, "CUSTOM_HANDMADE")
	assert.True(t, ok, "an unowned runbook is never deleted")
	_, ok = runbookNamed(e.cloud, "CUSTOM_BIOS_DEFAULTS")
	assert.True(t, ok)
}
