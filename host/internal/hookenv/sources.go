package hookenv

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// SourcesSuffix names the operator's allow-list of sources outside OpenStack: <P>_SOURCES.
const SourcesSuffix = "_SOURCES"

// Source is one source of truth outside OpenStack the operator allows a plugin to read (chart
// values pluginData.<name>.sources, docs/operators/values.md): where it is, the CA that vouches for
// it, how fast the plugin may call it and how the credential is sent. Nothing in it is secret: the
// credential stays in the Secret a CR names, and the plugin may read this list (<P>_SOURCES is one
// of its variables).
type Source struct {
	// Name is the source's name as a plugin declares it (metadata sources), e.g. "nautobot".
	Name string `json:"name"`
	// URL is the base URL, normalised (SourceURL): a CR must name exactly this URL.
	URL string `json:"url"`
	// CA is a PEM bundle, the only CA trusted for this source; empty: the system's.
	CA string `json:"ca,omitempty"`
	// Rate is requests per second to this source (0: unlimited), with bursts of Burst.
	Rate  float64 `json:"rate,omitempty"`
	Burst int     `json:"burst,omitempty"`
	// Auth says how the host sends the credential: Header: Scheme <credential>.
	Auth SourceAuth `json:"auth"`
}

// SourceAuth is the credential's header; the defaults are Nautobot's (and NetBox's):
// Authorization: Token <key>.
type SourceAuth struct {
	Header string `json:"header,omitempty"`
	// Scheme precedes the credential with one space; "none" sends the credential alone.
	Scheme string `json:"scheme,omitempty"`
}

// Default credential header and scheme of a source.
const (
	DefaultSourceAuthHeader = "Authorization"
	DefaultSourceAuthScheme = "Token"
)

var sourceNameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

// framingHeaders would let the credential's header change how the request is framed or routed.
var framingHeaders = map[string]bool{"Host": true, "Content-Length": true, "Content-Type": true, "Transfer-Encoding": true,
	"Connection": true, "Te": true, "Trailer": true, "Upgrade": true, "Expect": true, "Cookie": true, "Accept": true,
	"Keep-Alive": true, "Proxy-Connection": true}

// LoadSources reads <P>_SOURCES: a JSON array of Source. Unset or blank: no source. Every error
// is one line naming the variable and the entry.
func LoadSources(lookup LookupFunc, prefix string) ([]Source, error) {
	name := prefix + SourcesSuffix
	raw, ok := lookup(name)
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var list []Source
	if err := decodeStrict(raw, &list); err != nil {
		return nil, errorf(name, "must be a JSON array of {\"name\", \"url\", \"ca\", \"rate\", \"burst\", \"auth\"}: %v", err)
	}
	seen := map[[2]string]bool{}
	for i := range list {
		s := &list[i]
		where := fmt.Sprintf("entry %d", i)
		if s.Name != "" {
			where += fmt.Sprintf(" (%s)", s.Name)
		}
		if !sourceNameRE.MatchString(s.Name) {
			return nil, errorf(name, "%s: name %q must be a lower-case DNS label (a plugin declares the sources it reads by name)", where, cut(s.Name))
		}
		u, err := SourceURL(s.URL)
		if err != nil {
			return nil, errorf(name, "%s: url: %v", where, err)
		}
		s.URL = u
		if seen[[2]string{s.Name, s.URL}] {
			return nil, errorf(name, "%s: %s is listed twice", where, s.URL)
		}
		seen[[2]string{s.Name, s.URL}] = true
		if s.CA != "" {
			if !strings.HasPrefix(s.URL, "https://") {
				return nil, errorf(name, "%s: ca is set but %s is not https", where, s.URL)
			}
			if !x509.NewCertPool().AppendCertsFromPEM([]byte(s.CA)) {
				return nil, errorf(name, "%s: ca holds no readable PEM certificate", where)
			}
		}
		if math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0) || s.Rate < 0 {
			return nil, errorf(name, "%s: rate must be a number of requests per second, 0 or more (0: unlimited)", where)
		}
		if s.Burst == 0 {
			s.Burst = 1
		}
		if s.Burst < 1 {
			return nil, errorf(name, "%s: burst must be at least 1", where)
		}
		if s.Auth.Header == "" {
			s.Auth.Header = DefaultSourceAuthHeader
		}
		s.Auth.Header = http.CanonicalHeaderKey(s.Auth.Header)
		if !isToken(s.Auth.Header) || framingHeaders[s.Auth.Header] {
			return nil, errorf(name, "%s: auth.header %q cannot carry a credential (a header name, not one that frames, routes or negotiates the request)", where, cut(s.Auth.Header))
		}
		if s.Auth.Scheme == "" {
			s.Auth.Scheme = DefaultSourceAuthScheme
		}
		if s.Auth.Scheme != "none" && !isToken(s.Auth.Scheme) {
			return nil, errorf(name, "%s: auth.scheme %q must be one word such as Token or Bearer, or none", where, cut(s.Auth.Scheme))
		}
	}
	return list, nil
}

// SourceURL normalises a source's base URL, the operator's and a CR's alike, so the two compare
// as strings: an absolute http or https URL with a host, without user information, query or
// fragment; scheme and host in lower case, the scheme's default port dropped, no trailing slash.
func SourceURL(raw string) (string, error) {
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }) {
		return "", fmt.Errorf("%q holds a space, control character or backslash", cut(raw))
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", fmt.Errorf("%q is not a URL", cut(raw))
	case u.Scheme != "https" && u.Scheme != "http":
		return "", fmt.Errorf("%q must be an http or https URL", cut(raw))
	case u.Host == "" || u.Opaque != "":
		return "", fmt.Errorf("%q names no host", cut(raw))
	case u.User != nil:
		return "", fmt.Errorf("%q must not hold user information; the credential comes from a Secret", cut(raw))
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#"):
		return "", fmt.Errorf("%q must not hold a query or fragment", cut(raw))
	}
	host := strings.ToLower(u.Host)
	if p := u.Port(); (u.Scheme == "https" && p == "443") || (u.Scheme == "http" && p == "80") {
		host = strings.TrimSuffix(host, ":"+p)
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	for seg := range strings.SplitSeq(strings.TrimPrefix(path, "/"), "/") {
		dec, err := url.PathUnescape(seg)
		if path != "" && (seg == "" || err != nil || dec == "." || dec == ".." || strings.ContainsAny(dec, `/\`)) {
			return "", fmt.Errorf("%q has a path a server could read differently (an empty, \".\" or \"..\" segment, or an escaped slash)", cut(raw))
		}
	}
	return u.Scheme + "://" + host + path, nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// cut shortens a value quoted in an error, so one line stays one line.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// SourcesJSON renders sources as <P>_SOURCES holds them (tests, the dev command).
func SourcesJSON(sources []Source) string {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(sources)
	return strings.TrimSpace(b.String())
}
