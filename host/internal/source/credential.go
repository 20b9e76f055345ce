package source

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// minCredentialBytes is the shortest credential the host sends. Every answer is scrubbed of the
// credential, and a short one would match ordinary text: "abc" redacted from every body would
// corrupt what the plugin reads, and not redacting it would hand it over.
const minCredentialBytes = 8

// credential is one Secret key's value, read once per run, with the pattern that finds it in an
// answer.
type credential struct {
	value string
	// find matches the value as a server could echo it back: raw, URL- or JSON-escaped, in
	// base64, in any letter case.
	find *regexp.Regexp
	err  error
}

// credential reads the Secret key ref in namespace, once per run. A Kubernetes API failure is
// retryable and not kept; everything else (missing, empty, unsendable) is permanent and kept, so a
// pass with a thousand CRs naming a missing Secret reads it once.
func (p *Proxy) credential(ctx context.Context, namespace string, ref plugin.SecretKeyRef) (*credential, error) {
	id := secretID{namespace, ref.Name, ref.Key}
	p.mu.Lock()
	c, ok := p.creds[id]
	p.mu.Unlock()
	if ok {
		return c, c.err
	}
	c, err := p.readCredential(ctx, id)
	if err != nil && !plugin.IsPermanent(err) {
		return nil, err
	}
	if c == nil {
		c = &credential{err: err}
	}
	p.mu.Lock()
	p.creds[id] = c
	p.mu.Unlock()
	return c, c.err
}

func (p *Proxy) readCredential(ctx context.Context, id secretID) (*credential, error) {
	where := "Secret " + id.namespace + "/" + id.name
	switch {
	case id.name == "":
		return nil, refuse(plugin.SourceSecret, true, "the credential's Secret name is empty")
	case id.key == "":
		return nil, refuse(plugin.SourceSecret, true, "%s: the credential's key is empty", where)
	}
	data, err := p.secrets.GetSecretData(ctx, id.namespace, id.name)
	if kubeapi.IsNotFound(err) {
		return nil, refuse(plugin.SourceSecret, true, "%s not found", where)
	}
	if err != nil {
		return nil, refuse(plugin.SourceSecret, false, "reading %s: %v", where, err)
	}
	raw, ok := data[id.key]
	if !ok {
		return nil, refuse(plugin.SourceSecret, true, "%s has no key %q", where, id.key)
	}
	// A Secret written with echo or a YAML block ends in a newline; no credential does.
	v := strings.TrimSpace(string(raw))
	switch {
	case v == "":
		return nil, refuse(plugin.SourceSecret, true, "%s key %q is empty", where, id.key)
	case !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }):
		// A line break would end the header and start another: refused, never sent.
		return nil, refuse(plugin.SourceSecret, true, "%s key %q holds a line break or control character; it cannot be sent as a header", where, id.key)
	case len(v) < minCredentialBytes:
		return nil, refuse(plugin.SourceSecret, true, "%s key %q is shorter than %d characters, too short to keep out of the answers the plugin reads", where, id.key, minCredentialBytes)
	}
	return &credential{value: v, find: findPattern(v)}, nil
}

// findPattern matches every spelling of v a server might echo.
func findPattern(v string) *regexp.Regexp {
	forms := map[string]bool{}
	add := func(s string) {
		if len(s) >= minCredentialBytes {
			forms[s] = true
		}
	}
	add(v)
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	if b, err := json.Marshal(v); err == nil {
		add(strings.Trim(string(b), `"`))
	}
	add(hex.EncodeToString([]byte(v)))
	// In base64 the credential reads differently at each of the three byte offsets it can start
	// at within what is encoded ("Token <v>", "user:<v>", a JSON document). Whatever surrounds
	// it, the characters between the first and the last group it shares with its neighbours
	// depend on the credential alone: those are what is looked for.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		add(enc.EncodeToString([]byte(v)))
		for k := range 3 {
			e := enc.Strict().EncodeToString(append(make([]byte, k), v...))
			e = strings.TrimRight(e, "=")
			if len(e) > 8 {
				add(e[4 : len(e)-4])
			}
		}
	}
	alts := make([]string, 0, len(forms))
	for f := range forms {
		alts = append(alts, regexp.QuoteMeta(f))
	}
	return regexp.MustCompile(`(?i)` + strings.Join(alts, "|"))
}

// headerValue is the credential as the source's auth header carries it.
func (c *credential) headerValue(scheme string) string {
	if scheme == "none" {
		return c.value
	}
	return scheme + " " + c.value
}

var redacted = []byte("[redacted]")

// clean makes an answer fit for the plugin: no header that carries credentials (the source's own
// auth header included) and no trace of this request's credential in any header or the body.
// c may be nil (a request without a credential): the headers are still removed.
func (c *credential) clean(resp *plugin.Response, authHeader string) *plugin.Response {
	h := resp.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	for _, name := range plugin.CredentialHeaders {
		h.Del(name)
	}
	h.Del(authHeader)
	h.Del("Proxy-Authenticate")
	body := resp.Body
	if c != nil && c.find != nil {
		for k, vs := range h {
			for i, v := range vs {
				vs[i] = c.find.ReplaceAllLiteralString(v, string(redacted))
			}
			if nk := c.find.ReplaceAllLiteralString(k, string(redacted)); nk != k {
				delete(h, k)
				h[nk] = vs
			}
		}
		body = c.find.ReplaceAllLiteral(body, redacted)
	}
	return &plugin.Response{StatusCode: resp.StatusCode, Header: h, Body: body}
}
