package pluginpass

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

func runbooksEnv(t *testing.T, b backend, prune bool, ironicMax string) *env {
	return newEnv(t, b, setup{plugin: "ironic-runbooks", crd: "ironic.openstack-sync.io/v1alpha1",
		kind: "IronicRunbook", prefix: "IRONIC_RUNBOOK", prune: prune, ironicMax: ironicMax})
}

type runbookStep struct {
	Interface string         `json:"interface"`
	Step      string         `json:"step"`
	Order     int            `json:"order"`
	Args      map[string]any `json:"args"`
}

type runbook struct {
	UUID        string         `json:"uuid"`
	Name        string         `json:"name"`
	Public      bool           `json:"public"`
	Extra       map[string]any `json:"extra"`
	Steps       []runbookStep  `json:"steps"`
	Traits      []string       `json:"traits"`
	Description *string        `json:"description"`
}

// runbookNamed reads a runbook back from Ironic at the newest microversion the cloud offers (the
// plugin's own discovery), as the system-scoped admin that sees public runbooks.
func (e *env) runbookNamed(name, microversion string) (runbook, bool) {
	var rb runbook
	if e.call(fakecloud.SystemCloud, plugin.Request{Service: "baremetal", Method: "GET", Path: "v1/runbooks/" + name,
		Microversion: microversion}, &rb) == 404 {
		return runbook{}, false
	}
	return rb, true
}

// addRunbook seeds an unowned public runbook, made by hand as an operator would.
func (e *env) addRunbook(name string, extra map[string]any, steps ...runbookStep) {
	e.call(fakecloud.SystemCloud, plugin.Request{Service: "baremetal", Method: "POST", Path: "v1/runbooks", Microversion: runbookAPI,
		Body: jsonBody(map[string]any{"name": name, "public": true, "extra": extra, "steps": steps})}, nil)
}

func biosSpec(name string) string {
	return `_cloud: local-system
runbookName: ` + name + `
description: fleet defaults
public: true
traits: [CUSTOM_BIOS_DEFAULTS]
steps:
  - {interface: bios, step: apply_configuration, order: 10, args: {settings: [{name: LogicalProc, value: Enabled}]}}
  - {interface: management, step: clear_job_queue, order: 5}
`
}

// runbookLifecycleOnTrixieIronic is Debian 13's Ironic, API 1.96: what the real harness runs.
func runbookLifecycleOnTrixieIronic(t *testing.T, b backend) {
	e := runbooksEnv(t, b, true, "1.96")
	bios := e.traitName("CUSTOM_BIOS_DEFAULTS")
	e.apply("bios", biosSpec(bios))

	require.Equal(t, 0, e.synchronize())
	rb, ok := e.runbookNamed(bios, runbookAPI)
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
	e.rec.reset()
	kubeBefore := len(e.kubeWrites())
	require.Equal(t, 0, e.synchronize())
	assert.Len(t, e.kubeWrites(), kubeBefore, "a converged run patches no status and no finalizer: the status is current")
	assert.Empty(t, e.writes())
	gets := 0
	for _, c := range e.rec.snapshot() {
		if c.Service == "baremetal" && c.Path == "/v1/runbooks/"+bios {
			gets++
			assert.Equal(t, "1.96", c.Microversion)
		}
	}
	assert.Equal(t, 1, gets)
	assert.Equal(t, []string{
		"GET /", "GET /v1/runbooks", // readiness: version, the list
		"GET /", "GET /v1/runbooks/" + bios, // the group's version, one GET per CR
		"GET /", "GET /v1/runbooks", // prune (PRUNE=true): version, the list
	}, e.requests("baremetal"))

	// Drift: a changed step is patched.
	obj := e.get("bios")
	obj["spec"].(map[string]any)["steps"].([]any)[1].(map[string]any)["order"] = 7
	_, err := e.kube.Update(e.res, namespace, "bios", "", obj)
	require.NoError(t, err)
	e.rec.reset()
	require.Equal(t, 0, e.synchronize())
	assert.Len(t, e.writes(), 1)
	rb, _ = e.runbookNamed(bios, runbookAPI)
	for _, s := range rb.Steps {
		if s.Step == "clear_job_queue" {
			assert.EqualValues(t, 7, s.Order)
		}
	}
}

func runbookTraitsAt1112(t *testing.T, b backend) {
	e := runbooksEnv(t, b, false, "1.112")
	bios := e.traitName("CUSTOM_BIOS_DEFAULTS")
	e.apply("bios", biosSpec(bios))
	require.Equal(t, 0, e.synchronize())
	rb, _ := e.runbookNamed(bios, "1.112")
	assert.Equal(t, []string{"CUSTOM_BIOS_DEFAULTS"}, rb.Traits)
	require.NotNil(t, rb.Description)
	assert.Equal(t, "fleet defaults", *rb.Description)
	assert.Equal(t, "Successfully reconciled ironic runbook", e.status("bios")["message"])
	assert.Empty(t, e.finalizers("bios"), "PRUNE=false: no finalizer")
}

func runbookAdoptionAndInvalidName(t *testing.T, b backend) {
	e := runbooksEnv(t, b, false, "1.96")
	bios := e.traitName("CUSTOM_BIOS_DEFAULTS")
	e.addRunbook(bios, map[string]any{"ticket": "OPS-1"},
		runbookStep{Interface: "raid", Step: "delete_configuration", Order: 1, Args: map[string]any{}})
	e.apply("bios", biosSpec(bios))
	bad := "bios-defaults-" + e.sfx
	e.apply("bad", "runbookName: "+bad+"\npublic: true\ntraits: [CUSTOM_X]\nsteps: [{interface: raid, step: x, order: 1}]\n_cloud: local-system\n")
	assert.Equal(t, 1, e.synchronize(), "one CR failed")
	rb, _ := e.runbookNamed(bios, runbookAPI)
	assert.Equal(t, "ironic-runbooks", rb.Extra["openstack-sync.io/managed-by"], "the unowned runbook is adopted")
	assert.Len(t, rb.Steps, 2)
	st := e.status("bad")
	assert.Equal(t, "Failed", st["syncStatus"])
	assert.Contains(t, st["message"], `spec.runbookName "`+bad+`" must be a trait name`)
	assert.Equal(t, "InvalidSpec", st["conditions"].([]any)[0].(map[string]any)["reason"])
}

func runbookPrune(t *testing.T, b backend) {
	e := runbooksEnv(t, b, true, "1.96")
	bios, raid, handmade := e.traitName("CUSTOM_BIOS_DEFAULTS"), e.traitName("CUSTOM_RAID"), e.traitName("CUSTOM_HANDMADE")
	e.apply("bios", biosSpec(bios))
	e.apply("raid", "_cloud: local-system\nrunbookName: "+raid+"\npublic: true\ntraits: [CUSTOM_RAID]\nsteps: [{interface: raid, step: delete_configuration, order: 1}]\n")
	require.Equal(t, 0, e.synchronize())
	e.addRunbook(handmade, nil, runbookStep{Interface: "raid", Step: "x", Order: 1, Args: map[string]any{}})
	e.deleteCR("raid")

	// In use: Ironic refuses the delete; the prune fails and the finalizer is held. Fake only: the
	// harness cannot keep a runbook in use (its fake-hardware nodes finish a runbook's cleaning at
	// once), so the real Ironic has no 409 to give.
	if e.cloud != nil {
		rb, _ := e.runbookNamed(raid, runbookAPI)
		remove := e.cloud.Inject(fakecloud.Fault{Service: fakecloud.Baremetal, Method: "DELETE", Path: "/v1/runbooks/" + rb.UUID,
			Status: 409, Body: `{"error_message": "{\"faultstring\": \"Runbook is in use\"}"}`})
		assert.Equal(t, 1, e.synchronize())
		_, ok := e.runbookNamed(raid, runbookAPI)
		assert.True(t, ok)
		assert.Equal(t, []any{"openstack-sync.io/finalizer"}, e.finalizers("raid"))
		assert.Contains(t, e.logs.String(), "runbooks still present: "+raid)
		remove()
	}

	// Once Ironic lets go, the next run deletes it and releases the CR; the unowned one stays.
	require.Equal(t, 0, e.synchronize())
	_, ok := e.runbookNamed(raid, runbookAPI)
	assert.False(t, ok)
	_, err := e.kube.Get(e.res, namespace, "raid")
	assert.Error(t, err, "the finalizer was released")
	_, ok = e.runbookNamed(handmade, runbookAPI)
	assert.True(t, ok, "an unowned runbook is never deleted")
	_, ok = e.runbookNamed(bios, runbookAPI)
	assert.True(t, ok)
}
