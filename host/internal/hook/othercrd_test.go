package hook_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/hook"
	"github.com/openstack-sync/openstack-sync/host/internal/kube/kubetest"
)

// TestCRsOfBothProfilesStopTheRun: with CRs of the kind under the other profile's CRD too (a move
// half done, or the wrong profile set), a run acts on nothing: either profile's operator could
// prune what the other's CRs claim (docs/contract.md §11).
func TestCRsOfBothProfilesStopTheRun(t *testing.T) {
	const otherList = "/apis/example.understack.rackspace.net/v1alpha1/namespaces/ns/widgets"
	tests := []struct {
		name     string
		status   int
		body     string
		code     int
		acted    bool
		stderr   string
		noConfig bool
	}{
		{name: "CRs under both", status: 200, body: `{"items":[{"metadata":{"namespace":"ns","name":"old"}}]}`, code: 1,
			stderr: `msg="` + hook.MsgBothProfiles + `" plugin=widgets kind=Widget ` +
				`other=widgets.example.understack.rackspace.net example=ns/old error="this hook reconciles widgets.example.openstack-sync.io ` +
				`under the openstack-sync profile (WIDGET_PROFILE), but widgets.example.understack.rackspace.net also holds Widget CRs (e.g. ns/old): ` +
				`finish moving them with openstack-sync migrate, or set the profile of the CRs in use (chart: compatibility.profile)"`},
		{name: "none under the other", status: 200, body: `{"items":[]}`, code: 0, acted: true},
		{name: "the other CRD is not installed", status: 404, body: kubetest.Status(404, "NotFound", "", "the server could not find the requested resource"), code: 0, acted: true},
		{name: "the list is refused", status: 403, body: kubetest.Status(403, "Forbidden", "", "forbidden"), code: 1,
			stderr: "cannot tell whether widgets.example.understack.rackspace.net holds CRs (the chart's RBAC grants list on it): HTTP 403 Forbidden"},
		{name: "not configured: no request", noConfig: true, code: 0, acted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t).enable()
			h.contexts(syncOf(widget("a")))
			if !tt.noConfig {
				h.env["WIDGET_OTHER_CRD_API_VERSION"] = "example.understack.rackspace.net/v1alpha1"
				h.env["WIDGET_OTHER_CRD_RESOURCE"] = "widgets.example.understack.rackspace.net"
			}
			listed := 0
			h.srv.Intercept = func(r kubetest.Request) (int, string, bool) {
				if r.Method == "GET" && r.Path == otherList {
					listed++
					return tt.status, tt.body, true
				}
				return 0, "", false
			}
			assert.Equal(t, tt.code, h.main("--plugin", "widgets.wasm"), h.stderr.String())
			assert.Equal(t, tt.acted, len(h.plugin.Reconciled()) > 0)
			if tt.stderr != "" {
				assert.Contains(t, h.stderr.String(), tt.stderr)
			}
			if tt.noConfig {
				assert.Zero(t, listed)
			}
		})
	}
}
