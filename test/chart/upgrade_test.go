package chart_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The original operator's chart (rackerlabs/understack, components/openstack-sync-operator), as
// facts: chart name openstack-sync-operator; its CRDs only in crds/, none templated; templated, a
// ServiceAccount (unless serviceAccount.create is false), a Role and RoleBinding (ClusterRole and
// ClusterRoleBinding with rbac.clusterWide) and a Deployment, each named <release>-<chart>, or the
// release name when that holds the chart name; the Deployment selecting
// app.kubernetes.io/name=<chart> and app.kubernetes.io/instance=<release>.
const originalChart = "openstack-sync-operator"

func originalFullname(release string) string {
	if strings.Contains(release, originalChart) {
		return release
	}
	return release + "-" + originalChart
}

// TestUpgradeFromTheOriginalsRelease: `helm upgrade` of a release of the original's chart to this
// one (docs/migrating.md, "What helm upgrade does to the original's release") deletes no CRD and
// no CR (this chart templates no CRD) and replaces each object the original templated in place,
// under the same kind and name: a renamed object would be deleted and created again, and a
// changed Deployment selector would make Kubernetes refuse the upgrade.
func TestUpgradeFromTheOriginalsRelease(t *testing.T) {
	bin := findHelm(t)
	for _, c := range []struct {
		release, values, sa, role string
	}{
		{"oso", "testdata/values/understack.yaml", "", "Role"},
		{"openstack-sync-operator", "testdata/values/understack.yaml", "", "Role"},
		{"site-openstack-sync-operator-a", "testdata/values/cluster-wide.yaml", "platform-operator", "ClusterRole"},
	} {
		t.Run(c.release+" "+c.values, func(t *testing.T) {
			out, errOut, err := helm(t, bin, "template", c.release, chartDir, "--namespace", "openstack", "--kube-version", kubeVersion,
				"--values", c.values)
			require.NoError(t, err, errOut)
			name := originalFullname(c.release)
			got := map[string]string{}
			for _, doc := range strings.Split(out, "\n---\n") {
				var obj struct {
					Kind     string `json:"kind"`
					Metadata struct {
						Name string `json:"name"`
					} `json:"metadata"`
				}
				require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
				if obj.Kind == "" {
					continue
				}
				assert.NotEqual(t, "CustomResourceDefinition", obj.Kind, "a templated CRD would be deleted with the release")
				got[obj.Kind] = obj.Metadata.Name
			}
			want := map[string]string{c.role: name, c.role + "Binding": name, "Deployment": name}
			if c.sa == "" {
				want["ServiceAccount"] = name
			}
			for kind, n := range want {
				assert.Equal(t, n, got[kind], "%s keeps the original's name", kind)
			}
			d := deployment(t, out)
			assert.Equal(t, map[string]string{"app.kubernetes.io/name": originalChart, "app.kubernetes.io/instance": c.release},
				d.Spec.Selector.MatchLabels, "the Deployment's selector is immutable: it must be the original's")
			if c.sa != "" {
				assert.Equal(t, c.sa, d.Spec.Template.Spec.ServiceAccountName)
			} else {
				assert.Equal(t, name, d.Spec.Template.Spec.ServiceAccountName)
			}
		})
	}
}
