//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestChartRBAC asks the real API server what the chart's service account may do. The lifecycle
// test shows the grants are enough; this shows they are no more than the operator needs.
func TestChartRBAC(t *testing.T) {
	h := need(t)
	ctx := context.Background()
	user := fmt.Sprintf("system:serviceaccount:%s:%s-openstack-sync-operator", h.namespace, release)
	type check struct {
		group, resource, sub, verb string
		allowed                    bool
	}
	checks := []check{
		{"", "secrets", "", "get", true},
		{"", "secrets", "", "list", false},
		{"", "secrets", "", "watch", false},
		{"", "secrets", "", "create", false},
		{"", "configmaps", "", "get", false},
		{"", "pods", "", "list", false},
		{"events.k8s.io", "events", "", "create", true},
		{"events.k8s.io", "events", "", "get", true},
		{"events.k8s.io", "events", "", "update", true},
		{"events.k8s.io", "events", "", "delete", false},
		{"events.k8s.io", "events", "", "list", false},
	}
	for _, k := range kinds {
		checks = append(checks,
			check{k.gvr.Group, k.gvr.Resource, "", "get", true},
			check{k.gvr.Group, k.gvr.Resource, "", "list", true},
			check{k.gvr.Group, k.gvr.Resource, "", "watch", true},
			check{k.gvr.Group, k.gvr.Resource, "", "patch", true},
			check{k.gvr.Group, k.gvr.Resource, "", "update", false},
			check{k.gvr.Group, k.gvr.Resource, "", "create", false},
			check{k.gvr.Group, k.gvr.Resource, "", "delete", false},
			check{k.gvr.Group, k.gvr.Resource, "status", "patch", true},
			check{k.gvr.Group, k.gvr.Resource, "status", "update", true},
		)
	}
	for _, c := range checks {
		for _, ns := range []string{h.namespace, "default"} {
			want := c.allowed && ns == h.namespace // a namespaced install reaches nothing outside
			review, err := h.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{
				Spec: authzv1.SubjectAccessReviewSpec{User: user, Groups: []string{
					"system:serviceaccounts", "system:serviceaccounts:" + h.namespace, "system:authenticated",
				}, ResourceAttributes: &authzv1.ResourceAttributes{
					Namespace: ns, Group: c.group, Resource: c.resource, Subresource: c.sub, Verb: c.verb,
				}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
			assert.Equal(t, want, review.Status.Allowed, "%s %s %s/%s in namespace %s", c.verb, c.group, c.resource, c.sub, ns)
		}
	}
}
