package openstack

import (
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCloudVariants(t *testing.T) {
	text := string(fixture(t, "variants.yaml"))
	tests := []struct {
		cloud    string
		auth     gophercloud.AuthOptions
		region   string
		iface    gophercloud.Availability
		insecure bool
	}{
		{cloud: "project-by-name", region: "RegionTwo", iface: gophercloud.AvailabilityInternal,
			auth: gophercloud.AuthOptions{Username: "alice", Password: "pw", DomainName: "Users",
				Scope: &gophercloud.AuthScope{ProjectName: "ops", DomainName: "Projects"}}},
		{cloud: "project-by-id", iface: gophercloud.AvailabilityAdmin,
			auth: gophercloud.AuthOptions{UserID: "0123abcd", Password: "pw", Scope: &gophercloud.AuthScope{ProjectID: "4567ef"}}},
		{cloud: "default-domain", iface: gophercloud.AvailabilityPublic,
			auth: gophercloud.AuthOptions{Username: "bob", Password: "pw", DomainID: "default",
				Scope: &gophercloud.AuthScope{ProjectName: "ops", DomainID: "default"}}},
		{cloud: "system", iface: gophercloud.AvailabilityPublic, insecure: true,
			auth: gophercloud.AuthOptions{Username: "admin", Password: "pw", DomainID: "default", Scope: &gophercloud.AuthScope{System: true}}},
		{cloud: "app-credential", iface: gophercloud.AvailabilityPublic,
			auth: gophercloud.AuthOptions{ApplicationCredentialID: "ac1", ApplicationCredentialSecret: "s3cret"}},
	}
	for _, tc := range tests {
		t.Run(tc.cloud, func(t *testing.T) {
			cfg, err := parseCloud("test", text, tc.cloud, nil, "ca")
			require.NoError(t, err)
			want := tc.auth
			want.IdentityEndpoint = "https://keystone.example:5000/v3"
			want.AllowReauth = true
			assert.Equal(t, want, cfg.auth)
			assert.True(t, cfg.auth.AllowReauth, "set in code: gophercloud ignores clouds.yaml's allow_reauth")
			assert.Equal(t, tc.region, cfg.region)
			assert.Equal(t, tc.iface, cfg.iface)
			assert.Equal(t, tc.insecure, cfg.tls.InsecureSkipVerify)
			assert.Nil(t, cfg.tls.RootCAs, "no bundle: the system roots")
		})
	}
	_, err := parseCloud("test", text, "project-without-domain", nil, "ca")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `cloud "project-without-domain": auth.project_name needs auth.project_domain_name or auth.project_domain_id`)
}
