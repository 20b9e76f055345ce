package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// TestReauthenticationAfterRevocation revokes the member's tokens behind the session's back; the
// next request must still succeed, through a 401 and a new token. On the fake the tokens expire;
// on the real cloud resetting the user's password (to the same value) makes Keystone revoke them.
func TestReauthenticationAfterRevocation(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Options{})
		defer cloud.Close()
		checkReauth(t, cloud.CloudsYAML(), func(t *testing.T) { cloud.ExpireTokens() })
		assert.Equal(t, 2, cloud.TokensIssued())
	})
	t.Run("real", func(t *testing.T) {
		text := realClouds(t)
		checkReauth(t, text, func(t *testing.T) {
			revokeByPasswordReset(t, text)
			// Keystone revokes by the second: a token issued in the same second as the revocation is
			// refused too, so the session's single re-authentication would get a dead token.
			time.Sleep(1100 * time.Millisecond)
		})
	})
}

func checkReauth(t *testing.T, clouds string, revoke func(*testing.T)) {
	s := connect(t, clouds, "clouds", fakecloud.MemberCloud)
	list := plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"}
	resp, err := s.Do(context.Background(), list)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	revoke(t)
	resp, err = s.Do(context.Background(), list)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the session re-authenticates after a revoked token")
}

// revokeByPasswordReset sets the member's password to its current value as the admin; Keystone
// then revokes every token of that user.
func revokeByPasswordReset(t *testing.T, clouds string) {
	k := keystoneAs(t, clouds, fakecloud.AdminCloud)
	member := cloudAuth(t, clouds, fakecloud.MemberCloud)
	resp := k.call(http.MethodGet, "/users?name="+member["username"], "")
	var users struct {
		Users []struct{ ID string } `json:"users"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&users))
	resp.Body.Close()
	require.Len(t, users.Users, 1)
	resp = k.call(http.MethodPatch, "/users/"+users.Users[0].ID, fmt.Sprintf(`{"user": {"password": %q}}`, member["password"]))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
