package openstack

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// secrets is an in-memory SecretReader answering like package kube.
type secrets struct {
	mu    sync.Mutex
	data  map[string]map[string][]byte // "ns/name" -> data
	err   error
	reads int
}

func (s *secrets) GetSecretData(_ context.Context, namespace, name string) (map[string][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return nil, s.err
	}
	d, ok := s.data[namespace+"/"+name]
	if !ok {
		return nil, &kubeapi.APIError{Code: http.StatusNotFound, Body: `{"kind":"Status","reason":"NotFound","details":{"name":"` + name + `","kind":"secrets"}}`}
	}
	return d, nil
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

func TestConnectRejectsBadSecrets(t *testing.T) {
	cloud := fakecloud.New(fakecloud.Options{})
	defer cloud.Close()
	valid := []byte(cloud.CloudsYAML())

	tests := []struct {
		name      string
		data      map[string][]byte // nil: no Secret
		cloudName string
		want      []string
	}{
		{"secret missing", nil, fakecloud.AdminCloud, []string{"Secret ns1/creds not found"}},
		{"clouds.yaml key missing", map[string][]byte{"other": valid}, fakecloud.AdminCloud,
			[]string{"Secret ns1/creds", `no key "clouds.yaml"`}},
		{"yaml unparsable", map[string][]byte{"clouds.yaml": fixture(t, "unparsable.yaml")}, fakecloud.AdminCloud,
			[]string{`Secret ns1/creds key "clouds.yaml" is not a valid clouds.yaml`}},
		{"no clouds map", map[string][]byte{"clouds.yaml": fixture(t, "no-clouds.yaml")}, fakecloud.AdminCloud,
			[]string{`key "clouds.yaml" defines no clouds`}},
		{"cloud unknown", map[string][]byte{"clouds.yaml": valid}, "nope",
			[]string{`key "clouds.yaml" has no cloud "nope"`, fakecloud.AdminCloud, fakecloud.MemberCloud}},
		{"ca bundle unreadable", map[string][]byte{"clouds.yaml": valid, "cacert": fixture(t, "not-a-cert.pem")}, fakecloud.AdminCloud,
			[]string{`Secret ns1/creds key "cacert" holds no readable PEM certificate`}},
		{"cacert is a file path", map[string][]byte{"clouds.yaml": fixture(t, "cacert-path.yaml")}, "local-admin",
			[]string{`cloud "local-admin"`, "/etc/ssl/openstack-ca.pem", `key "cacert"`}},
		{"vendor profile", map[string][]byte{"clouds.yaml": fixture(t, "profile.yaml")}, "local-admin",
			[]string{"vendor profiles"}},
		{"unsupported auth type", map[string][]byte{"clouds.yaml": fixture(t, "oidc.yaml")}, "local-admin",
			[]string{`auth_type "v3oidcpassword" is not supported`}},
		{"password missing", map[string][]byte{"clouds.yaml": fixture(t, "no-password.yaml")}, "local-admin",
			[]string{"needs auth.password"}},
		{"keystone v2", map[string][]byte{"clouds.yaml": fixture(t, "identity-v2.yaml")}, "local-admin",
			[]string{"identity_api_version 2 is not supported"}},
		{"unknown interface", map[string][]byte{"clouds.yaml": fixture(t, "bad-interface.yaml")}, "local-admin",
			[]string{`interface "private"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec := &secrets{data: map[string]map[string][]byte{}}
			if tc.data != nil {
				sec.data["ns1/creds"] = tc.data
			}
			_, err := NewConnector(sec, Options{}).Connect(context.Background(),
				plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: tc.cloudName})
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.True(t, plugin.IsPermanent(err), "a broken Secret cannot heal by retrying")
		})
	}
}

func TestConnectReportsAPIErrorsAsRetryable(t *testing.T) {
	unavailable := &kubeapi.APIError{Code: http.StatusServiceUnavailable, Body: "etcd is down"}
	sec := &secrets{err: unavailable}
	_, err := NewConnector(sec, Options{}).Connect(context.Background(),
		plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: "c"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reading Secret ns1/creds")
	assert.False(t, plugin.IsPermanent(err))
	assert.ErrorIs(t, err, unavailable, "the API server's answer stays in the chain")
}

func TestConnectRejectsEmptyCredentials(t *testing.T) {
	for _, creds := range []plugin.Credentials{
		{SecretName: "s", CloudName: "c"}, {Namespace: "n", CloudName: "c"}, {Namespace: "n", SecretName: "s"},
	} {
		_, err := NewConnector(&secrets{}, Options{}).Connect(context.Background(), creds)
		require.Error(t, err, creds.String())
		assert.True(t, plugin.IsPermanent(err))
	}
}

func TestConnectMemoisesPerGroup(t *testing.T) {
	cloud := fakecloud.New(fakecloud.Options{})
	defer cloud.Close()
	sec := &secrets{data: map[string]map[string][]byte{
		"ns1/creds": {"clouds.yaml": []byte(cloud.CloudsYAML())},
		"ns2/creds": {"clouds.yaml": []byte(cloud.CloudsYAML())},
	}}
	conn := NewConnector(sec, Options{})
	ctx := context.Background()
	admin := plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: fakecloud.AdminCloud}
	a1, err := conn.Connect(ctx, admin)
	require.NoError(t, err)
	a2, err := conn.Connect(ctx, admin)
	require.NoError(t, err)
	assert.Same(t, a1, a2)
	assert.Equal(t, 1, sec.reads)

	member := admin
	member.CloudName = fakecloud.MemberCloud
	m, err := conn.Connect(ctx, member)
	require.NoError(t, err)
	assert.NotSame(t, a1, m)
	otherNS := admin
	otherNS.Namespace = "ns2"
	o, err := conn.Connect(ctx, otherNS)
	require.NoError(t, err)
	assert.NotSame(t, a1, o, "the namespace is part of the group")

	// Each session authenticated as its own user: the member cannot see segment ranges.
	resp, err := m.Do(ctx, plugin.Request{Service: "network", Method: http.MethodPost, Path: "v2.0/network_segment_ranges",
		Body: []byte(`{"network_segment_range": {"name": "x", "network_type": "vxlan", "minimum": 9000, "maximum": 9001}}`)})
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// TestConnectIgnoresEnvironmentAndFiles proves the Secret is the only input: every OS_* variable
// and a clouds.yaml in the usual search locations point somewhere useless.
func TestConnectIgnoresEnvironmentAndFiles(t *testing.T) {
	cloud := fakecloud.New(fakecloud.Options{})
	defer cloud.Close()
	home := t.TempDir()
	decoy := "clouds:\n  " + fakecloud.AdminCloud + ":\n    auth:\n      auth_url: http://127.0.0.1:1/v3\n      username: x\n      password: y\n    region_name: Nowhere\n"
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config", "openstack"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".config", "openstack", "clouds.yaml"), []byte(decoy), 0o600))
	for k, v := range map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"OS_CLOUD": "decoy", "OS_CLIENT_CONFIG_FILE": filepath.Join(home, ".config", "openstack", "clouds.yaml"),
		"OS_REGION_NAME": "Nowhere", "OS_INTERFACE": "admin", "OS_CACERT": "/nonexistent/ca.pem",
		"OS_CERT": "/nonexistent/cert.pem", "OS_KEY": "/nonexistent/key.pem", "OS_AUTH_URL": "http://127.0.0.1:1/v3",
		"OS_USERNAME": "decoy", "OS_PASSWORD": "decoy", "OS_PROJECT_NAME": "decoy",
	} {
		t.Setenv(k, v)
	}
	t.Chdir(filepath.Join(home, ".config", "openstack")) // ./clouds.yaml is searched first by clouds.Parse

	sec := &secrets{data: map[string]map[string][]byte{"ns1/creds": {"clouds.yaml": []byte(cloud.CloudsYAML())}}}
	s, err := NewConnector(sec, Options{}).Connect(context.Background(),
		plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: fakecloud.AdminCloud})
	require.NoError(t, err)
	resp, err := s.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestAuthErrorIsPermanentAndStable(t *testing.T) {
	err := error(&AuthError{Credentials: plugin.Credentials{Namespace: "ns1", SecretName: "creds", CloudName: "prod"}, Status: 401})
	assert.True(t, plugin.IsPermanent(err))
	assert.True(t, plugin.IsPermanent(errors.Join(errors.New("wrapped"), err)))
	assert.Equal(t, `OpenStack refused the credentials of cloud "prod" in Secret ns1/creds: Keystone answered 401 Unauthorized; check the user, password and project in its clouds.yaml`, err.Error())
}

func TestConnectTrustsOnlyTheSecretsCABundle(t *testing.T) {
	cloud := fakecloud.New(fakecloud.Options{TLS: true})
	defer cloud.Close()
	require.True(t, strings.HasPrefix(cloud.AuthURL(), "https://"))
	insecure := strings.Replace(cloud.CloudsYAML(), "    region_name:", "    verify: false\n    region_name:", 1)
	tests := []struct {
		name string
		data map[string][]byte
		ok   bool
	}{
		{"no bundle: the system roots do not know the cloud", map[string][]byte{"clouds.yaml": []byte(cloud.CloudsYAML())}, false},
		{"the Secret's bundle", map[string][]byte{"clouds.yaml": []byte(cloud.CloudsYAML()), "cacert": cloud.CACertPEM()}, true},
		{"verify: false", map[string][]byte{"clouds.yaml": []byte(insecure)}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sec := &secrets{data: map[string]map[string][]byte{"ns1/creds": tc.data}}
			s, err := NewConnector(sec, Options{MaxAttempts: 1}).Connect(context.Background(), testCreds)
			require.NoError(t, err)
			resp, err := s.Do(context.Background(), plugin.Request{Service: "network", Method: http.MethodGet, Path: "v2.0/flavors"})
			if !tc.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "TLS certificate not trusted")
				assert.True(t, plugin.IsPermanent(err), "waiting will not make the certificate trusted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		})
	}
}
