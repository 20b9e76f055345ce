package hookenv

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadSources(t *testing.T) {
	pem, err := os.ReadFile("testdata/source-ca.pem")
	require.NoError(t, err)
	caJSON, _ := json.Marshal(string(pem))
	cases := []struct {
		name, value string
		want        []Source
		err         string
	}{
		{name: "unset is no source", value: "\x00"},
		{name: "blank is no source", value: "  "},
		{name: "defaults: Nautobot's header and scheme, burst 1, normalised URL",
			value: `[{"name":"nautobot","url":"HTTPS://Nautobot.Example.COM:443/"}]`,
			want: []Source{{Name: "nautobot", URL: "https://nautobot.example.com", Burst: 1,
				Auth: SourceAuth{Header: "Authorization", Scheme: "Token"}}}},
		{name: "everything set",
			value: `[{"name":"nautobot","url":"https://nautobot.example.com/nb","ca":` + string(caJSON) + `,"rate":5,"burst":10,"auth":{"header":"x-api-key","scheme":"none"}},` +
				`{"name":"nautobot","url":"http://127.0.0.1:8080"}]`,
			want: []Source{{Name: "nautobot", URL: "https://nautobot.example.com/nb", CA: string(pem), Rate: 5, Burst: 10,
				Auth: SourceAuth{Header: "X-Api-Key", Scheme: "none"}},
				{Name: "nautobot", URL: "http://127.0.0.1:8080", Burst: 1, Auth: SourceAuth{Header: "Authorization", Scheme: "Token"}}}},
		{name: "not JSON", value: `nautobot=https://x`, err: "X_SOURCES must be a JSON array of"},
		{name: "two arrays", value: `[{"name":"nautobot","url":"https://x"}] [{"name":"nautobot","url":"https://y"}]`,
			err: "X_SOURCES must be a JSON array of {\"name\", \"url\", \"ca\", \"rate\", \"burst\", \"auth\"}: invalid character '[' after top-level value"},
		{name: "unknown key", value: `[{"name":"nautobot","url":"https://x","token":"abc"}]`, err: `unknown field "token"`},
		{name: "bad name", value: `[{"name":"Nautobot","url":"https://x"}]`, err: `X_SOURCES entry 0 (Nautobot): name "Nautobot" must be a lower-case DNS label`},
		{name: "no url", value: `[{"name":"nautobot"}]`, err: `X_SOURCES entry 0 (nautobot): url: "" must be an http or https URL`},
		{name: "user info", value: `[{"name":"nautobot","url":"https://admin:pw@x"}]`, err: "must not hold user information"},
		{name: "query", value: `[{"name":"nautobot","url":"https://x/?a=b"}]`, err: "must not hold a query or fragment"},
		{name: "dot-dot path", value: `[{"name":"nautobot","url":"https://x/a/../b"}]`, err: "has a path a server could read differently"},
		{name: "twice", value: `[{"name":"nautobot","url":"https://x"},{"name":"nautobot","url":"https://X/"}]`, err: "entry 1 (nautobot): https://x is listed twice"},
		{name: "ca that is not PEM", value: `[{"name":"nautobot","url":"https://x","ca":"hello"}]`, err: "ca holds no readable PEM certificate"},
		{name: "ca on http", value: `[{"name":"nautobot","url":"http://x","ca":` + string(caJSON) + `}]`, err: "ca is set but http://x is not https"},
		{name: "negative rate", value: `[{"name":"nautobot","url":"https://x","rate":-1}]`, err: "rate must be a number of requests per second"},
		{name: "zero burst given as negative", value: `[{"name":"nautobot","url":"https://x","burst":-2}]`, err: "burst must be at least 1"},
		{name: "a framing header for the credential", value: `[{"name":"nautobot","url":"https://x","auth":{"header":"Host"}}]`, err: `auth.header "Host" cannot carry a credential`},
		{name: "a header name with a line break", value: `[{"name":"nautobot","url":"https://x","auth":{"header":"A\r\nB"}}]`, err: "cannot carry a credential"},
		{name: "a scheme of two words", value: `[{"name":"nautobot","url":"https://x","auth":{"scheme":"Token x"}}]`, err: `auth.scheme "Token x" must be one word`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lookup := func(name string) (string, bool) {
				if name != "X_SOURCES" || c.value == "\x00" {
					return "", false
				}
				return c.value, true
			}
			got, err := LoadSources(lookup, "X")
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				assert.NotContains(t, err.Error(), "\n", "one line")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestSourceURLMatchesOneSpellingPerPlace(t *testing.T) {
	for _, same := range [][]string{
		{"https://nautobot.example.com", "https://nautobot.example.com/", "HTTPS://NAUTOBOT.example.com:443", "https://nautobot.example.com//"[:29]},
		{"http://127.0.0.1:8080/nb", "http://127.0.0.1:8080/nb/", "HTTP://127.0.0.1:8080/nb"},
	} {
		want, err := SourceURL(same[0])
		require.NoError(t, err)
		for _, s := range same[1:] {
			got, err := SourceURL(s)
			require.NoError(t, err, s)
			assert.Equal(t, want, got, s)
		}
	}
	a, _ := SourceURL("https://x/NB")
	b, _ := SourceURL("https://x/nb")
	assert.NotEqual(t, a, b, "the path is case-sensitive")
	a, _ = SourceURL("http://x")
	b, _ = SourceURL("https://x")
	assert.NotEqual(t, a, b)
	a, _ = SourceURL("https://x:8443")
	b, _ = SourceURL("https://x")
	assert.NotEqual(t, a, b)
}
