package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
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
		authURL, id, secret := createRealAppCred(t, realClouds(t))
		checkAppCred(t, authURL, id, secret)
	})
}

// TestUnversionedAuthURL connects through Keystone's version discovery (auth_url without /v3).
func TestUnversionedAuthURL(t *testing.T) {
	check := func(t *testing.T, clouds string) {
		unversioned := strings.ReplaceAll(clouds, "/v3\n", "\n")
		require.NotEqual(t, clouds, unversioned)
		s := connect(t, unversioned, "clouds", fakecloud.AdminCloud)
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
		check(t, realClouds(t))
	})
}

func checkAppCred(t *testing.T, authURL, id, secret string) {
	clouds := fmt.Sprintf("clouds:\n  operator:\n    auth_type: v3applicationcredential\n    auth:\n      auth_url: %s\n"+
		"      application_credential_id: %s\n      application_credential_secret: %s\n    region_name: RegionOne\n", authURL, id, secret)
	s := connect(t, clouds, "appcred", "operator")
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
	k := keystoneAs(t, clouds, fakecloud.MemberCloud)
	resp := k.call(http.MethodPost, "/users/"+k.userID+"/application_credentials",
		`{"application_credential": {"name": "contract-`+newVars().m["run"]+`"}}`)
	var created struct {
		ApplicationCredential struct{ ID, Secret string } `json:"application_credential"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&created))
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	id, secret = created.ApplicationCredential.ID, created.ApplicationCredential.Secret
	t.Cleanup(func() {
		k.call(http.MethodDelete, "/users/"+k.userID+"/application_credentials/"+id, "").Body.Close()
	})
	return k.authURL, id, secret
}
