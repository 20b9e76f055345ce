package pdk_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
)

// grantRule is pdk/testdata/grant-rule.json, the cases the grant rule's own tests (pdk/abi/grant)
// and the host's openstack_request run too.
type grantRule struct {
	Grants []pdk.Grant
	Cases  []struct{ Name, Service, Method, Path, Kind, Refusal string }
}

func loadGrantRule(t *testing.T) grantRule {
	t.Helper()
	raw, err := os.ReadFile("testdata/grant-rule.json")
	require.NoError(t, err)
	var r grantRule
	require.NoError(t, json.Unmarshal(raw, &r))
	require.NotEmpty(t, r.Cases)
	return r
}

// pdktest refuses like the host: same kind, same words, permanent, nothing answered.
func TestPdktestRefusesLikeTheHost(t *testing.T) {
	rule := loadGrantRule(t)
	for _, c := range rule.Cases {
		t.Run(c.Name, func(t *testing.T) {
			answered := false
			ctx := pdktest.New(t, pdktest.Options{Grants: rule.Grants, Cloud: func(pdktest.Call) (int, any) {
				answered = true
				return 200, nil
			}})
			_, err := ctx.OpenStack(c.Service).Do(pdk.Request{Method: c.Method, Path: c.Path})
			if c.Refusal == "" {
				require.NoError(t, err)
				assert.True(t, answered)
				return
			}
			var he *pdk.HostError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, c.Kind, he.Kind)
			assert.Equal(t, c.Refusal, he.Message)
			assert.True(t, he.IsPermanent)
			assert.False(t, answered, "a refused call never reaches the cloud")
		})
	}
}

func TestPdktestRefusesAnUnsafePathEvenWithAllowAll(t *testing.T) {
	ctx := pdktest.New(t, pdktest.Options{AllowAll: true, Cloud: func(pdktest.Call) (int, any) { return 200, nil }})
	err := ctx.OpenStack("network").Get("v2.0/flavors/a%2Fb", nil, nil)
	var he *pdk.HostError
	require.ErrorAs(t, err, &he)
	assert.Equal(t, "invalid_request", he.Kind)
}

// ExplainSourceRefusal reads the declared sources as the host does (pdk/testdata/source-rule.json).
func TestExplainSourceRefusalIsTheHosts(t *testing.T) {
	raw, err := os.ReadFile("testdata/source-rule.json")
	require.NoError(t, err)
	var rule struct {
		Sources []pdk.SourceGrant
		Cases   []struct{ Name, Source, Method, Path, Refusal string }
	}
	require.NoError(t, json.Unmarshal(raw, &rule))
	require.NotEmpty(t, rule.Cases)
	for _, c := range rule.Cases {
		assert.Equal(t, c.Refusal, pdk.ExplainSourceRefusal(rule.Sources, c.Source, c.Method, c.Path), c.Name)
	}
}
