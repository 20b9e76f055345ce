package openstack

import (
	"bytes"
	"regexp"
)

// fernetToken matches a Keystone Fernet token: base64url of a version byte 0x80 (so "gAAAAA")
// followed by a timestamp, IV, ciphertext and HMAC; real ones are 180-250 characters.
var fernetToken = regexp.MustCompile(`gAAAAA[A-Za-z0-9_-]{100,}={0,2}`)

var redacted = []byte("[redacted]")

// redactTokens is the body half of "a plugin never sees a token" (docs/abi.md): the session's own
// token, whatever its format, and anything shaped like a Fernet token are replaced wherever a
// response body carries them (a server echoing the request, a token-info API, a misbehaving
// proxy). UUID tokens have no shape to tell them from the UUIDs every API returns, so only the
// session's own is caught. The common case (no match) costs two scans and no copy.
func redactTokens(body []byte, token string) []byte {
	if token != "" && bytes.Contains(body, []byte(token)) {
		body = bytes.ReplaceAll(body, []byte(token), redacted)
	}
	if bytes.Contains(body, []byte("gAAAAA")) {
		body = fernetToken.ReplaceAllLiteral(body, redacted)
	}
	return body
}
