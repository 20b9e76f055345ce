package resource

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// An unreadable CR stops the prunes of the groups it may belong to (docs/contract.md §7.1): the
// group its credentials name, else every group of its namespace, else every group.
func TestScopeOfAnUnreadableCR(t *testing.T) {
	a := plugin.Credentials{Namespace: "team-a", SecretName: "s1", CloudName: "c1"}
	a2 := plugin.Credentials{Namespace: "team-a", SecretName: "s2", CloudName: "c1"}
	b := plugin.Credentials{Namespace: "team-b", SecretName: "s1", CloudName: "c1"}
	ref := map[string]any{"secretName": "s1", "cloudName": "c1"}
	tests := []struct {
		name   string
		obj    any
		pods   string
		covers []plugin.Credentials
		misses []plugin.Credentials
	}{
		{"readable credentials", map[string]any{"metadata": map[string]any{"namespace": "team-a"}, "status": 1,
			"spec": map[string]any{"cloudCredentialsRef": ref}}, "", []plugin.Credentials{a}, []plugin.Credentials{a2, b}},
		{"unreadable credentials", map[string]any{"metadata": map[string]any{"namespace": "team-a"},
			"spec": map[string]any{"cloudCredentialsRef": map[string]any{"secretName": "s1"}}}, "",
			[]plugin.Credentials{a, a2}, []plugin.Credentials{b}},
		{"no spec", map[string]any{"metadata": map[string]any{"namespace": "team-a"}}, "", []plugin.Credentials{a, a2}, []plugin.Credentials{b}},
		{"cluster-scoped takes the pod namespace", map[string]any{"metadata": map[string]any{"name": "x"}, "spec": 3}, "team-b",
			[]plugin.Credentials{b}, []plugin.Credentials{a}},
		{"unreadable namespace", map[string]any{"metadata": map[string]any{"namespace": 7}, "spec": map[string]any{"cloudCredentialsRef": ref}},
			"", []plugin.Credentials{a, a2, b}, nil},
		{"no metadata", map[string]any{"metadata": nil}, "team-a", []plugin.Credentials{a, a2, b}, nil},
		{"not an object", "text", "team-a", []plugin.Credentials{a, a2, b}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ScopeOf(tt.obj, tt.pods)
			for _, c := range tt.covers {
				assert.True(t, s.Covers(c), "covers %v", c)
			}
			for _, c := range tt.misses {
				assert.False(t, s.Covers(c), "misses %v", c)
			}
		})
	}
}

func TestScopeWidenCoversBoth(t *testing.T) {
	a := plugin.Credentials{Namespace: "team-a", SecretName: "s1", CloudName: "c1"}
	a2 := plugin.Credentials{Namespace: "team-a", SecretName: "s2", CloudName: "c1"}
	group := func(c plugin.Credentials) Scope { return Scope{Namespace: c.Namespace, Group: &c} }
	assert.Equal(t, group(a), group(a).Widen(group(a)))
	assert.Equal(t, Scope{Namespace: "team-a"}, group(a).Widen(group(a2)))
	assert.Equal(t, Scope{Namespace: "team-a"}, group(a).Widen(Scope{Namespace: "team-a"}))
	assert.Equal(t, Scope{}, group(a).Widen(Scope{Namespace: "team-b"}))
	assert.Equal(t, Scope{}, Scope{}.Widen(group(a)))
}
