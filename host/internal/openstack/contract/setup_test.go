package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// realClouds is the clouds.yaml text of the real cloud named by EnvClouds; without it the
// calling test skips and says so.
func realClouds(t *testing.T) string {
	t.Helper()
	path := os.Getenv(EnvClouds)
	if path == "" {
		t.Skipf("%s is not set: the real-cloud half did not run (bash hack/os-harness.sh up /var/tmp/os-chroot prints the path)", EnvClouds)
	}
	text, err := os.ReadFile(path)
	require.NoError(t, err, "reading %s=%s", EnvClouds, path)
	return string(text)
}

// connect opens a session on cloud of clouds, served from a Secret contract/<secret> as the
// host would read it.
func connect(t *testing.T, clouds, secret, cloud string) plugin.Session {
	t.Helper()
	sec := secretReader{"contract/" + secret: {"clouds.yaml": []byte(clouds)}}
	s, err := openstack.NewConnector(sec, openstack.Options{}).Connect(context.Background(),
		plugin.Credentials{Namespace: "contract", SecretName: secret, CloudName: cloud})
	require.NoError(t, err)
	return s
}

// keystone is a project-scoped token of one user of a real cloud, for the set-up the session
// under test must not do itself (creating credentials, revoking tokens).
type keystone struct {
	t       *testing.T
	authURL string
	token   string
	userID  string
}

// keystoneAs authenticates as the user of cloud in clouds with its password.
func keystoneAs(t *testing.T, clouds, cloud string) *keystone {
	t.Helper()
	auth := cloudAuth(t, clouds, cloud)
	k := &keystone{t: t, authURL: strings.TrimSuffix(auth["auth_url"], "/")}
	body := fmt.Sprintf(`{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": %q, "domain": {"name": %q}, "password": %q}}}, "scope": {"project": {"name": %q, "domain": {"name": %q}}}}}`,
		auth["username"], auth["user_domain_name"], auth["password"], auth["project_name"], auth["project_domain_name"])
	resp, err := http.Post(k.authURL+"/auth/tokens", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var tok struct {
		Token struct {
			User struct{ ID string } `json:"user"`
		} `json:"token"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tok))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	k.token, k.userID = resp.Header.Get("X-Subject-Token"), tok.Token.User.ID
	return k
}

// call sends one Keystone request with the token; path is below the auth URL.
func (k *keystone) call(method, path, body string) *http.Response {
	req, err := http.NewRequest(method, k.authURL+path, strings.NewReader(body))
	require.NoError(k.t, err)
	req.Header.Set("X-Auth-Token", k.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(k.t, err)
	return resp
}

// cloudAuth is the auth section of cloud in clouds.
func cloudAuth(t *testing.T, clouds, cloud string) map[string]string {
	t.Helper()
	var file struct {
		Clouds map[string]struct {
			Auth map[string]string `json:"auth"`
		} `json:"clouds"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(clouds), &file))
	return file.Clouds[cloud].Auth
}
