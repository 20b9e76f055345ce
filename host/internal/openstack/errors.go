package openstack

import (
	"fmt"
	"net/http"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/httpretry"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// AuthError is Keystone refusing a credential group's credentials (401 or 403 when a token is
// requested). Retrying cannot fix it, so it is permanent and the group fails at once. Its message
// is stable: no request id, time or response text.
type AuthError struct {
	Credentials plugin.Credentials
	// Status is Keystone's answer, 401 or 403.
	Status int
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("OpenStack refused the credentials of cloud %q in Secret %s/%s: Keystone answered %d %s; check the user, password and project in its clouds.yaml",
		e.Credentials.CloudName, e.Credentials.Namespace, e.Credentials.SecretName, e.Status, http.StatusText(e.Status))
}

// Permanent marks the error for plugin.IsPermanent.
func (e *AuthError) Permanent() bool { return true }

// TransportError is a request that got no HTTP answer (httpretry.TransportError): its message
// names the cause in stable words, so a status message built from it stays the same run after run.
type TransportError = httpretry.TransportError

// classifyTransport turns an http.Client error into a TransportError. timeout is the per-request
// limit, named when it expired.
func classifyTransport(op, host string, err error, timeout time.Duration) *TransportError {
	return httpretry.Classify(op, host, err, timeout, "set the Secret's CA bundle or fix the endpoint")
}

// stableText is the innermost cause of err without addresses, so it does not vary between runs.
func stableText(err error) string { return httpretry.StableText(err) }
