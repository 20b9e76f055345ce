package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/pdk/abi"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// The table of grant cases (pdk/testdata/grant-rule.json) the grant rule (pdk/abi/grant) is tested
// with: what pdktest allows the host's openstack_request sends, and what it refuses the host
// refuses with the same kind and words, before any Session sees it.
func TestServeFollowsTheGrantRuleSharedWithThePDK(t *testing.T) {
	raw, err := os.ReadFile("../../../pdk/testdata/grant-rule.json")
	require.NoError(t, err)
	var rule struct {
		Grants []grant.Grant `json:"grants"`
		Cases  []struct {
			Name, Service, Method, Path, Kind, Refusal string
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &rule))
	require.NotEmpty(t, rule.Cases)
	log, _ := testLogger()
	p := &Plugin{grants: grant.NewSet(rule.Grants, nil)}
	for _, c := range rule.Cases {
		t.Run(c.Name, func(t *testing.T) {
			s := &echoSession{}
			in, err := json.Marshal(abi.OpenStackRequest{Service: c.Service, Method: c.Method, Path: c.Path})
			require.NoError(t, err)
			out := p.serve(context.Background(), &callInfo{entry: abi.EntryReconcile, session: s, log: log}, in)
			head, _, _ := bytes.Cut(out, []byte("\n"))
			var m struct {
				Status int `json:"status"`
				Error  *struct {
					Kind, Message string
					Permanent     bool
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(head, &m))
			if c.Refusal == "" {
				require.Nil(t, m.Error, "%+v", m.Error)
				assert.Equal(t, 1, s.calls)
				return
			}
			require.NotNil(t, m.Error)
			assert.Equal(t, c.Kind, m.Error.Kind)
			assert.Equal(t, c.Refusal, m.Error.Message)
			assert.True(t, m.Error.Permanent)
			assert.Zero(t, s.calls, "a refused call never reaches the Session")
		})
	}
}
