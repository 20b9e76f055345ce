package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// TestApplicationCredentials connects with an application credential of the member user, the
// usual way to give an operator its own revocable credentials.
func TestApplicationCredentials(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Options{})
		defer cloud.Close()
		id, secret := cloud.AddApplicationCredential("demo", "operator")
		checkAppCred(t, cloud.AuthURL(), id, secret)
	})
	t.Run("real", func(t *testing.T) {
		path := os.Getenv(EnvClouds)
		if path == "" {
			t.Skipf("%s is not set: the real-cloud half did not run", EnvClouds)
		}
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		authURL, id, secret := createRealAppCred(t, string(text))
		checkAppCred(t, authURL, id, secret)
	})
}

// TestUnversionedAuthURL connects through Keystone's version discovery (auth_url without /v3).
func TestUnversionedAuthURL(t *testing.T) {
	check := func(t *testing.T, clouds string) {
		unversioned := strings.ReplaceAll(clouds, "/v3\n", "\n")
		require.NotEqual(t, clouds, unversioned)
		sec := secretReader{"contract/clouds": {"clouds.yaml": []byte(unversioned)}}
		s, err := openstack.NewConnector(sec, openstack.Options{}).Connect(context.Background(),
			plugin.Credentials{Namespace: "contract", SecretName: "clouds", CloudName: fakecloud.AdminCloud})
		require.NoError(t, err)
		resp, err := s.Do(context.Background(), plugin.Request{Service: "identity", Method: http.MethodHead, Path: "v3/auth/tokens"})
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	t.Run("fake", func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Options{})
		defer cloud.Close()
		check(t, cloud.CloudsYAML())
	})
	t.Run("real", func(t *testing.T) {
		path := os.Getenv(EnvClouds)
		if path == "" {
			t.Skipf("%s is not set: the real-cloud half did not run", EnvClouds)
		}
		text, err := os.ReadFile(path)
		require.NoError(t, err)
		check(t, string(text))
	})
}

func checkAppCred(t *testing.T, authURL, id, secret string) {
	clouds := fmt.Sprintf("clouds:\n  operator:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: %s\n"+
		"      application_credential_id: %s\n      application_credential_secret: %s\n    region_name: RegionOne\n", authURL, id, secret)
	sec := secretReader{"contract/appcred": {"clouds.yaml": []byte(clouds)}}
	s, err := openstack.NewConnector(sec, openstack.Options{}).Connect(context.Background(),
		plugin.Credentials{Namespace: "contract", SecretName: "appcred", CloudName: "operator"})
	require.NoError(t, err)
	resp, err := s.Do(context.Background(), plugin.Request{Service: "identity", Method: http.MethodGet, Path: "v3/auth/tokens"})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var doc struct {
		Token struct {
			Project struct{ Name string } `json:"project"`
			User    struct{ Name string } `json:"user"`
		} `json:"token"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &doc))
	assert.Equal(t, "demo", doc.Token.Project.Name, "an application credential carries its project")
	assert.Equal(t, "demo", doc.Token.User.Name)
	resp, err = s.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// createRealAppCred lets the member user create its own application credential and deletes it
// when the test ends.
func createRealAppCred(t *testing.T, clouds string) (authURL, id, secret string) {
	var file struct {
		Clouds map[string]struct {
			Auth map[string]string `json:"auth"`
		} `json:"clouds"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(clouds), &file))
	member := file.Clouds[fakecloud.MemberCloud].Auth
	authURL = strings.TrimSuffix(member["auth_url"], "/")
	body := fmt.Sprintf(`{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": %q, "domain": {"name": %q}, "password": %q}}}, "scope": {"project": {"name": %q, "domain": {"name": %q}}}}}`,
		member["username"], member["user_domain_name"], member["password"], member["project_name"], member["project_domain_name"])
	resp, err := http.Post(authURL+"/auth/tokens", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var tok struct {
		Token struct {
			User struct{ ID string } `json:"user"`
		} `json:"token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	token, userID := resp.Header.Get("X-Subject-Token"), tok.Token.User.ID

	call := func(method, url, body string) *http.Response {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-Auth-Token", token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp
	}
	resp = call(http.MethodPost, authURL+"/users/"+userID+"/application_credentials",
		`{"application_credential": {"name": "contract-`+newVars().m["run"]+`"}}`)
	var created struct {
		ApplicationCredential struct{ ID, Secret string } `json:"application_credential"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	id, secret = created.ApplicationCredential.ID, created.ApplicationCredential.Secret
	t.Cleanup(func() {
		call(http.MethodDelete, authURL+"/users/"+userID+"/application_credentials/"+id, "").Body.Close()
	})
	return authURL, id, secret
}
