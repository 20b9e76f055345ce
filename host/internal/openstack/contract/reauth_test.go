package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
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
		path := os.Getenv(EnvClouds)
		if path == "" {
			t.Skipf("%s is not set: the real-cloud half did not run", EnvClouds)
		}
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		checkReauth(t, string(text), func(t *testing.T) {
			revokeByPasswordReset(t, string(text))
			// Keystone revokes by the second: a token issued in the same second as the revocation is
			// refused too, so the session's single re-authentication would get a dead token.
			time.Sleep(1100 * time.Millisecond)
		})
	})
}

func checkReauth(t *testing.T, clouds string, revoke func(*testing.T)) {
	sec := secretReader{"contract/clouds": {"clouds.yaml": []byte(clouds)}}
	s, err := openstack.NewConnector(sec, openstack.Options{}).Connect(context.Background(),
		plugin.Credentials{Namespace: "contract", SecretName: "clouds", CloudName: fakecloud.MemberCloud})
	require.NoError(t, err)
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
	var file struct {
		Clouds map[string]struct {
			Auth map[string]string `json:"auth"`
		} `json:"clouds"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(clouds), &file))
	admin, member := file.Clouds[fakecloud.AdminCloud].Auth, file.Clouds[fakecloud.MemberCloud].Auth
	authURL := strings.TrimSuffix(admin["auth_url"], "/")
	body := fmt.Sprintf(`{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": %q, "domain": {"name": %q}, "password": %q}}}, "scope": {"project": {"name": %q, "domain": {"name": %q}}}}}`,
		admin["username"], admin["user_domain_name"], admin["password"], admin["project_name"], admin["project_domain_name"])
	resp, err := http.Post(authURL+"/auth/tokens", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	token := resp.Header.Get("X-Subject-Token")

	call := func(method, url, body string) *http.Response {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Auth-Token", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp = call(http.MethodGet, authURL+"/users?name="+member["username"], "")
	var users struct {
		Users []struct{ ID string } `json:"users"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&users))
	resp.Body.Close()
	require.Len(t, users.Users, 1)
	resp = call(http.MethodPatch, authURL+"/users/"+users.Users[0].ID, fmt.Sprintf(`{"user": {"password": %q}}`, member["password"]))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
