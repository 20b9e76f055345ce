package chart_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// TestProfileSwitch: compatibility.profile moves every plugin with an original counterpart onto
// the original operator's CRD (its identity variables and RBAC derived from crds/understack/),
// names the profile to the hook and plugin, and names this project's CRD as the other one, which
// a run lists (RBAC list) before it acts; hook.profile overrides the switch for one plugin.
func TestProfileSwitch(t *testing.T) {
	bin := findHelm(t)
	out, errOut, err := template(t, bin, "testdata/values/understack.yaml")
	require.NoError(t, err, errOut)
	env := map[string]string{}
	for _, e := range container(t, deployment(t, out), "shell-operator").Env {
		env[e.Name] = e.Value
	}
	rules := roleRules(t, out)
	for _, c := range []struct {
		prefix, profile, crd, other string
	}{
		{"IRONIC_RUNBOOK", "understack", "crds/understack/ironic.understack.rackspace.net_ironicrunbooks.yaml", "crds/ironic.openstack-sync.io_ironicrunbooks.yaml"},
		{"NEUTRON_ROUTER_FLAVOR", "understack", "crds/understack/neutron.understack.rackspace.net_neutronrouterflavors.yaml", "crds/neutron.openstack-sync.io_neutronrouterflavors.yaml"},
		{"NEUTRON_SEGMENT_RANGE", "", "crds/neutron.openstack-sync.io_neutronsegmentranges.yaml", "crds/understack/neutron.understack.rackspace.net_neutronsegmentranges.yaml"},
		{"NEUTRON_SUBNET_POOL", "understack", "crds/understack/neutron.understack.rackspace.net_neutronsubnetpools.yaml", "crds/neutron.openstack-sync.io_neutronsubnetpools.yaml"},
		{"OPENSTACK_PROBE", "understack", "crds/understack/openstack.understack.rackspace.net_openstackplaceholders.yaml", ""},
	} {
		crd := readCRD(t, filepath.Join(chartDir, c.crd))
		assert.Equal(t, c.profile, env[c.prefix+"_PROFILE"], c.prefix)
		assert.Equal(t, crd.Spec.Group+"/v1alpha1", env[c.prefix+"_CRD_API_VERSION"], c.prefix)
		assert.Equal(t, crd.Spec.Names.Kind, env[c.prefix+"_CRD_KIND"], c.prefix)
		assert.Equal(t, crd.Spec.Names.Plural+"."+crd.Spec.Group, env[c.prefix+"_CRD_RESOURCE"], c.prefix)
		assert.Contains(t, rules, rule(crd.Spec.Group, crd.Spec.Names.Plural, "get,list,watch,patch"), c.prefix)
		if c.other == "" {
			assert.NotContains(t, env, c.prefix+"_OTHER_CRD_RESOURCE", c.prefix)
			continue
		}
		other := readCRD(t, filepath.Join(chartDir, c.other))
		assert.Equal(t, other.Spec.Group+"/v1alpha1", env[c.prefix+"_OTHER_CRD_API_VERSION"], c.prefix)
		assert.Equal(t, other.Spec.Names.Plural+"."+other.Spec.Group, env[c.prefix+"_OTHER_CRD_RESOURCE"], c.prefix)
		assert.Contains(t, rules, rule(other.Spec.Group, other.Spec.Names.Plural, "list"), c.prefix)
	}

	// The default profile sets no PROFILE and names the original's CRD as the other one.
	out, errOut, err = template(t, bin, "testdata/values/all-enabled.yaml")
	require.NoError(t, err, errOut)
	env = map[string]string{}
	for _, e := range container(t, deployment(t, out), "shell-operator").Env {
		env[e.Name] = e.Value
	}
	assert.NotContains(t, env, "IRONIC_RUNBOOK_PROFILE")
	assert.Equal(t, "ironic.openstack-sync.io/v1alpha1", env["IRONIC_RUNBOOK_CRD_API_VERSION"])
	assert.Equal(t, "ironicrunbooks.ironic.understack.rackspace.net", env["IRONIC_RUNBOOK_OTHER_CRD_RESOURCE"])
}

func roleRules(t *testing.T, stream string) []string {
	t.Helper()
	for _, doc := range strings.Split(stream, "\n---\n") {
		if !strings.Contains(doc, "\nkind: Role\n") {
			continue
		}
		var r rbacv1.Role
		require.NoError(t, yaml.Unmarshal([]byte(doc), &r))
		var out []string
		for _, pr := range r.Rules {
			for _, g := range pr.APIGroups {
				for _, res := range pr.Resources {
					out = append(out, rule(g, res, strings.Join(pr.Verbs, ",")))
				}
			}
		}
		return out
	}
	t.Fatalf("no Role in:\n%s", stream)
	return nil
}

func rule(group, resource, verbs string) string { return group + " " + resource + " " + verbs }
