package openstack

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"sigs.k8s.io/yaml"
)

// cloudsFile is the part of the clouds.yaml format (openstacksdk's) this package understands.
type cloudsFile struct {
	Clouds map[string]cloudEntry `json:"clouds"`
}

type cloudEntry struct {
	Cloud              string     `json:"cloud"`
	Profile            string     `json:"profile"`
	AuthInfo           *cloudAuth `json:"auth"`
	AuthType           string     `json:"auth_type"`
	RegionName         string     `json:"region_name"`
	EndpointType       string     `json:"endpoint_type"`
	Interface          string     `json:"interface"`
	IdentityAPIVersion any        `json:"identity_api_version"` // YAML writes 3 or "3"
	Verify             *bool      `json:"verify"`
	CACertFile         string     `json:"cacert"`
	ClientCertFile     string     `json:"cert"`
	ClientKeyFile      string     `json:"key"`
}

type cloudAuth struct {
	AuthURL                     string `json:"auth_url"`
	Username                    string `json:"username"`
	UserID                      string `json:"user_id"`
	Password                    string `json:"password"`
	ApplicationCredentialID     string `json:"application_credential_id"`
	ApplicationCredentialName   string `json:"application_credential_name"`
	ApplicationCredentialSecret string `json:"application_credential_secret"`
	SystemScope                 string `json:"system_scope"`
	ProjectName                 string `json:"project_name"`
	ProjectID                   string `json:"project_id"`
	UserDomainName              string `json:"user_domain_name"`
	UserDomainID                string `json:"user_domain_id"`
	ProjectDomainName           string `json:"project_domain_name"`
	ProjectDomainID             string `json:"project_domain_id"`
	DomainName                  string `json:"domain_name"`
	DomainID                    string `json:"domain_id"`
	DefaultDomain               string `json:"default_domain"`
	TrustID                     string `json:"trust_id"`
}

// cloudConfig is everything a session needs from one clouds.yaml entry.
type cloudConfig struct {
	auth   gophercloud.AuthOptions
	region string
	iface  gophercloud.Availability
	tls    *tls.Config
}

// parseCloud builds the configuration of cloud name from clouds.yaml text and an optional PEM CA
// bundle (nil: the system roots). It deliberately does not use clouds.Parse: that reads OS_CLOUD, OS_REGION_NAME,
// OS_INTERFACE, OS_CLIENT_CONFIG_FILE, OS_CACERT, OS_CERT and OS_KEY from the environment and
// opens secure.yaml, clouds-public.yaml and cacert files from disk, and a hook must act with the
// Secret's credentials alone.
// where names the source in messages, e.g. `Secret ns/name key "clouds.yaml"`.
func parseCloud(where, text, name string, ca *x509.CertPool, caWhere string) (*cloudConfig, error) {
	var file cloudsFile
	if err := yaml.Unmarshal([]byte(text), &file); err != nil {
		return nil, fmt.Errorf("%s is not a valid clouds.yaml: %v", where, err)
	}
	if len(file.Clouds) == 0 {
		return nil, fmt.Errorf("%s defines no clouds (expected a top-level \"clouds:\" map)", where)
	}
	cloud, ok := file.Clouds[name]
	if !ok {
		return nil, fmt.Errorf("%s has no cloud %q (it defines: %s)", where, name,
			strings.Join(slices.Sorted(maps.Keys(file.Clouds)), ", "))
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s, cloud %q: %s", where, name, fmt.Sprintf(format, args...))
	}
	switch {
	case cloud.Profile != "" || cloud.Cloud != "":
		return nil, bad("vendor profiles (profile/cloud) are not supported; write the auth section out in full")
	case cloud.AuthInfo == nil || cloud.AuthInfo.AuthURL == "":
		return nil, bad("auth.auth_url is required")
	case cloud.IdentityAPIVersion != nil && fmt.Sprint(cloud.IdentityAPIVersion) != "3":
		return nil, bad("identity_api_version %v is not supported; only Keystone v3 is", cloud.IdentityAPIVersion)
	case cloud.ClientCertFile != "" || cloud.ClientKeyFile != "":
		return nil, bad("client certificates (cert/key) are not supported")
	case cloud.CACertFile != "" && ca == nil:
		return nil, bad("cacert names a file (%q), but the hook reads no files; put the CA bundle in %s instead", cloud.CACertFile, caWhere)
	}
	a := cloud.AuthInfo
	cfg := &cloudConfig{region: cloud.RegionName}

	switch iface := coalesce(cloud.EndpointType, cloud.Interface, "public"); iface {
	case "public", "publicURL":
		cfg.iface = gophercloud.AvailabilityPublic
	case "internal", "internalURL":
		cfg.iface = gophercloud.AvailabilityInternal
	case "admin", "adminURL":
		cfg.iface = gophercloud.AvailabilityAdmin
	default:
		return nil, bad("interface %q is not one of public, internal, admin", iface)
	}

	opts := gophercloud.AuthOptions{
		IdentityEndpoint: a.AuthURL,
		// clouds.yaml's allow_reauth is not honoured by gophercloud; a run can outlive a token.
		AllowReauth: true,
		DomainID:    coalesce(a.UserDomainID, a.DomainID),
		DomainName:  coalesce(a.UserDomainName, a.DomainName),
	}
	if opts.DomainID == "" && opts.DomainName == "" && a.DefaultDomain != "" {
		opts.DomainID = a.DefaultDomain
	}
	switch t := cloud.AuthType; t {
	case "", "password", "v3password":
		if a.Password == "" || a.Username == "" && a.UserID == "" {
			return nil, bad("password authentication needs auth.password and auth.username or auth.user_id")
		}
		opts.Username, opts.UserID, opts.Password = a.Username, a.UserID, a.Password
	case "v3applicationcredential", "applicationcredential":
		if a.ApplicationCredentialSecret == "" || a.ApplicationCredentialID == "" && a.ApplicationCredentialName == "" {
			return nil, bad("application credentials need auth.application_credential_secret and its id or name")
		}
		opts.ApplicationCredentialID = a.ApplicationCredentialID
		opts.ApplicationCredentialName = a.ApplicationCredentialName
		opts.ApplicationCredentialSecret = a.ApplicationCredentialSecret
		opts.Username, opts.UserID = a.Username, a.UserID
		// Application credentials carry their own scope.
		return finishConfig(cfg, opts, ca, cloud)
	default:
		return nil, bad("auth_type %q is not supported (use password or v3applicationcredential)", t)
	}

	switch {
	case a.TrustID != "":
		opts.Scope = &gophercloud.AuthScope{TrustID: a.TrustID}
	case a.SystemScope != "":
		if a.SystemScope != "all" {
			return nil, bad("system_scope %q is not supported; only \"all\" is", a.SystemScope)
		}
		opts.Scope = &gophercloud.AuthScope{System: true}
	case a.ProjectID != "":
		opts.Scope = &gophercloud.AuthScope{ProjectID: a.ProjectID}
	case a.ProjectName != "":
		opts.Scope = &gophercloud.AuthScope{ProjectName: a.ProjectName,
			DomainID:   coalesce(a.ProjectDomainID, a.DomainID),
			DomainName: coalesce(a.ProjectDomainName, a.DomainName)}
		if opts.Scope.DomainID == "" && opts.Scope.DomainName == "" {
			if a.DefaultDomain == "" {
				return nil, bad("auth.project_name needs auth.project_domain_name or auth.project_domain_id")
			}
			opts.Scope.DomainID = a.DefaultDomain
		}
	case a.DomainID != "":
		opts.Scope = &gophercloud.AuthScope{DomainID: a.DomainID}
	case a.DomainName != "":
		opts.Scope = &gophercloud.AuthScope{DomainName: a.DomainName}
	}
	return finishConfig(cfg, opts, ca, cloud)
}

func finishConfig(cfg *cloudConfig, opts gophercloud.AuthOptions, ca *x509.CertPool, cloud cloudEntry) (*cloudConfig, error) {
	cfg.auth = opts
	// A nil pool means the system roots.
	cfg.tls = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: ca}
	if cloud.Verify != nil && !*cloud.Verify {
		cfg.tls.InsecureSkipVerify = true
	}
	return cfg, nil
}

func coalesce(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
