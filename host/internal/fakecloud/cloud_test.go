package fakecloud

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// client talks to a fake cloud with a token, as a test of the fake itself.
type client struct {
	t     *testing.T
	c     *Cloud
	token string
}

func login(t *testing.T, c *Cloud, userName, password, project string) (*client, int) {
	t.Helper()
	scope := `"scope": {"project": {"name": "` + project + `", "domain": {"id": "default"}}}`
	if project == "" {
		scope = `"scope": {"system": {"all": true}}`
	}
	body := `{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "` + userName +
		`", "domain": {"id": "default"}, "password": "` + password + `"}}}, ` + scope + `}}`
	resp, err := http.Post(c.AuthURL()+"/auth/tokens", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	return &client{t: t, c: c, token: resp.Header.Get("X-Subject-Token")}, resp.StatusCode
}

func (cl *client) do(method, url, microversion string, body string) (int, map[string]any) {
	cl.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(cl.t, err)
	req.Header.Set("X-Auth-Token", cl.token)
	if microversion != "" {
		req.Header.Set("X-OpenStack-Ironic-API-Version", microversion)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(cl.t, err)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	_ = json.Unmarshal(data, &doc)
	return resp.StatusCode, doc
}

func TestCloudsYAMLNamesEveryCloud(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	var file struct {
		Clouds map[string]struct {
			Auth       map[string]string `json:"auth"`
			RegionName string            `json:"region_name"`
		} `json:"clouds"`
	}
	require.NoError(t, yaml.UnmarshalStrict([]byte(c.CloudsYAML()), &file))
	require.Len(t, file.Clouds, 3)
	assert.Equal(t, "all", file.Clouds[SystemCloud].Auth["system_scope"])
	assert.Equal(t, "demo", file.Clouds[MemberCloud].Auth["project_name"])
	for name, cl := range file.Clouds {
		assert.Equal(t, c.AuthURL(), cl.Auth["auth_url"], name)
		assert.Equal(t, "RegionOne", cl.RegionName, name)
	}

	c.SetPassword("demo", "rotated")
	assert.Contains(t, c.CloudsYAML(), "password: rotated", "CloudsYAML follows password changes")
	_, status := login(t, c, "demo", "demo-secret", "demo")
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestKeystoneScopes(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	_, status := login(t, c, "demo", "demo-secret", "admin")
	assert.Equal(t, http.StatusUnauthorized, status, "demo has no role on the admin project")
	_, status = login(t, c, "demo", "demo-secret", "")
	assert.Equal(t, http.StatusUnauthorized, status, "only an admin gets a system-scoped token")
	_, status = login(t, c, "nobody", "x", "demo")
	assert.Equal(t, http.StatusUnauthorized, status)
}

func TestExpireTokensForcesReauthentication(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	cl, _ := login(t, c, "admin", "admin-secret", "admin")
	status, _ := cl.do(http.MethodGet, c.NetworkURL()+"v2.0/flavors", "", "")
	require.Equal(t, http.StatusOK, status)
	c.ExpireTokens()
	status, _ = cl.do(http.MethodGet, c.NetworkURL()+"v2.0/flavors", "", "")
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Equal(t, 1, c.TokensIssued())
}

func TestRunbookTraitsAndDescriptionAt1112(t *testing.T) {
	c := New(Options{IronicMaxVersion: "1.112"})
	defer c.Close()
	sys, _ := login(t, c, "admin", "admin-secret", "")
	base := c.BaremetalURL() + "v1/runbooks"

	status, doc := sys.do(http.MethodPost, base, "1.112",
		`{"name": "lower-case.ok", "description": "d", "public": true, "steps": [{"interface": "bios", "step": "s", "args": {}, "order": 1}]}`)
	require.Equal(t, http.StatusCreated, status, doc)
	assert.Equal(t, "d", doc["description"])
	assert.Equal(t, []any{}, doc["traits"])
	uuid := doc["uuid"].(string)

	status, _ = sys.do(http.MethodPut, base+"/"+uuid+"/traits", "1.112", `{"traits": ["CUSTOM_B", "CUSTOM_A", "CUSTOM_A"]}`)
	require.Equal(t, http.StatusNoContent, status)
	status, doc = sys.do(http.MethodGet, base+"/"+uuid+"/traits", "1.112", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []any{"CUSTOM_A", "CUSTOM_B"}, doc["traits"])
	status, _ = sys.do(http.MethodPut, base+"/"+uuid+"/traits", "1.112", `{"traits": ["not-a-trait"]}`)
	assert.Equal(t, http.StatusBadRequest, status)
	status, _ = sys.do(http.MethodPut, base+"/"+uuid+"/traits/CUSTOM_C", "1.112", "")
	assert.Equal(t, http.StatusNoContent, status)
	status, _ = sys.do(http.MethodDelete, base+"/"+uuid+"/traits/CUSTOM_A", "1.112", "")
	assert.Equal(t, http.StatusNoContent, status)
	status, _ = sys.do(http.MethodDelete, base+"/"+uuid+"/traits/CUSTOM_A", "1.112", "")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, []string{"CUSTOM_B", "CUSTOM_C"}, c.Runbooks()[0].Traits)

	status, doc = sys.do(http.MethodPatch, base+"/"+uuid, "1.112", `[{"op": "add", "path": "/description", "value": "d2"}]`)
	require.Equal(t, http.StatusOK, status, doc)
	assert.Equal(t, "d2", doc["description"])

	// At 1.96 the same runbook shows neither field and the sub-resource does not exist.
	status, doc = sys.do(http.MethodGet, base+"/"+uuid, "1.96", "")
	require.Equal(t, http.StatusOK, status)
	assert.NotContains(t, doc, "traits")
	assert.NotContains(t, doc, "description")
	status, _ = sys.do(http.MethodGet, base+"/"+uuid+"/traits", "1.96", "")
	assert.Equal(t, http.StatusBadRequest, status)
	status, _ = sys.do(http.MethodGet, base, "1.113", "")
	assert.Equal(t, http.StatusNotAcceptable, status)
}

func TestIronicLatestMeansMax(t *testing.T) {
	c := New(Options{IronicMaxVersion: "1.100"})
	defer c.Close()
	resp, err := http.Get(c.BaremetalURL())
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "1.100", resp.Header.Get("X-OpenStack-Ironic-API-Maximum-Version"))
	assert.Equal(t, "1.1", resp.Header.Get("X-OpenStack-Ironic-API-Version"))
	req, _ := http.NewRequest(http.MethodGet, c.BaremetalURL(), nil)
	req.Header.Set("OpenStack-API-Version", "baremetal latest")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "1.100", resp.Header.Get("X-OpenStack-Ironic-API-Version"))
}

func TestFaultsMatchCountAndRemove(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	cl, _ := login(t, c, "admin", "admin-secret", "admin")
	flavors := c.NetworkURL() + "v2.0/flavors"

	remove := c.Inject(Fault{Service: Network, Method: http.MethodGet, Path: "/v2.0/flavors", Status: 503, RetryAfter: "3", Times: 2})
	c.Inject(Fault{Service: Baremetal, Status: 500}) // another service: never matches here
	for _, want := range []int{503, 503, 200} {
		status, _ := cl.do(http.MethodGet, flavors, "", "")
		assert.Equal(t, want, status)
	}
	status, _ := cl.do(http.MethodPost, flavors, "", `{"flavor": {"name": "x", "service_type": "L3_ROUTER_NAT"}}`)
	assert.Equal(t, http.StatusCreated, status, "the fault names GET only")
	remove()

	always := c.Inject(Fault{Path: "/v2.0/service_profiles", Status: 502})
	for range 3 {
		status, _ = cl.do(http.MethodGet, c.NetworkURL()+"v2.0/service_profiles", "", "")
		assert.Equal(t, 502, status, "Times 0 means every request")
	}
	always()
	status, _ = cl.do(http.MethodGet, c.NetworkURL()+"v2.0/service_profiles", "", "")
	assert.Equal(t, http.StatusOK, status)

	c.Inject(Fault{Path: "/v2.0/routers", Reset: true, Times: 1})
	req, _ := http.NewRequest(http.MethodGet, c.NetworkURL()+"v2.0/routers", nil)
	req.Header.Set("X-Auth-Token", cl.token)
	// A fresh connection: net/http silently re-sends a GET that failed on a reused one.
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	_, err := fresh.Do(req)
	require.Error(t, err)
	assert.True(t, errors.Is(err, io.EOF) || strings.Contains(err.Error(), "reset"), err.Error())
	last := c.Requests()[len(c.Requests())-1]
	assert.Equal(t, 0, last.Status, "a reset request has no status")
}

func TestWritesAndSeeding(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	p := c.AddServiceProfile(ServiceProfile{Driver: "vendor.Old", MetaInfo: "{}", Enabled: true})
	f := c.AddFlavor(Flavor{Name: "unowned", Enabled: true, ServiceProfiles: []string{p.ID}})
	c.AddRouter(Router{Name: "r", FlavorID: f.ID})
	rb := c.AddRunbook(Runbook{Name: "CUSTOM_SEEDED", Public: true, Steps: []RunbookStep{{Interface: "bios", Step: "s", Order: 1}}})
	require.Len(t, c.SegmentRanges(), 3, "the ML2 defaults")

	cl, _ := login(t, c, "admin", "admin-secret", "admin")
	status, doc := cl.do(http.MethodGet, c.NetworkURL()+"v2.0/flavors/"+f.ID, "", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, []any{p.ID}, doc["flavor"].(map[string]any)["service_profiles"])
	status, _ = cl.do(http.MethodDelete, c.NetworkURL()+"v2.0/flavors/"+f.ID, "", "")
	assert.Equal(t, http.StatusConflict, status, "the seeded router keeps the flavor in use")
	status, doc = cl.do(http.MethodGet, c.BaremetalURL()+"v1/runbooks/CUSTOM_SEEDED", "1.96", "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, rb.UUID, doc["uuid"])
	assert.Equal(t, map[string]any{}, doc["extra"])

	status, _ = cl.do(http.MethodPatch, c.BaremetalURL()+"v1/runbooks/CUSTOM_SEEDED", "1.96", `[{"op": "add", "path": "/extra", "value": {}}]`)
	require.Equal(t, http.StatusForbidden, status, "a project admin may not touch a public runbook it does not own")
	require.Len(t, c.Writes(), 2)
	assert.Equal(t, `[{"op": "add", "path": "/extra", "value": {}}]`, c.Writes()[1].Body)
	assert.Equal(t, "network DELETE /v2.0/flavors/"+f.ID+" -> 409", c.Writes()[0].String())
	for _, r := range c.Requests() {
		assert.NotContains(t, r.Body, "admin-secret", "passwords stay out of the log")
	}
	assert.Equal(t, "1.96", c.Requests()[len(c.Requests())-1].Microversion)
	c.ResetRequests()
	assert.Empty(t, c.Requests())
}

// TestRecordedBodies keeps the fake's answers in the shape recorded from the real servers
// (testdata: request and top-level keys of the answer, recorded with curl against hack/os-harness.sh).
func TestRecordedBodies(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	cl, _ := login(t, c, "admin", "admin-secret", "admin")
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var rec struct {
			Method, Path, Body string
			Status             int
			Keys               []string
			Root               string
		}
		require.NoError(t, json.Unmarshal(raw, &rec), f)
		url := c.NetworkURL() + rec.Path
		if strings.HasPrefix(rec.Path, "v1/") {
			url = c.BaremetalURL() + rec.Path
		}
		status, doc := cl.do(rec.Method, url, "1.96", rec.Body)
		require.Equal(t, rec.Status, status, f)
		obj := doc
		if rec.Root != "" {
			obj, _ = doc[rec.Root].(map[string]any)
		}
		var keys []string
		for k := range obj {
			keys = append(keys, k)
		}
		assert.ElementsMatch(t, rec.Keys, keys, "%s: top-level keys differ from the real server's", f)
	}
}

// The latency knob delays every answer, Keystone's included, and the counts say what was asked.
func TestLatencyAndRequestCounts(t *testing.T) {
	c := New(Options{Latency: 30 * time.Millisecond})
	defer c.Close()
	start := time.Now()
	cl, status := login(t, c, "admin", "admin-secret", "admin")
	require.Equal(t, http.StatusCreated, status)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	start = time.Now()
	status, _ = cl.do(http.MethodGet, c.NetworkURL()+"v2.0/network_segment_ranges", "", "")
	require.Equal(t, http.StatusOK, status)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	cl.do(http.MethodGet, c.NetworkURL()+"v2.0/network_segment_ranges", "", "")
	cl.do(http.MethodDelete, c.NetworkURL()+"v2.0/network_segment_ranges/nope", "", "")
	assert.Equal(t, map[string]int{"keystone": 1, "GET": 2, "DELETE": 1}, c.RequestCounts())
	c.ResetRequests()
	assert.Empty(t, c.RequestCounts())
}

// TestIronicPagesAreSentAsTheEncoderWritesThem: a list page, put together from the store's cached
// encodings, goes on the wire as writeJSON sends every other answer (encoding/json's encoder:
// sorted keys, HTML characters escaped, a closing newline), so the cache changes no byte a client
// reads.
func TestIronicPagesAreSentAsTheEncoderWritesThem(t *testing.T) {
	c := New(Options{})
	defer c.Close()
	for _, name := range []string{"CUSTOM_B", "CUSTOM_A", "CUSTOM_C"} {
		c.AddRunbook(Runbook{Name: name, Extra: map[string]any{"note": "<a & b>", "caf\u00e9": 1.5},
			Steps: []RunbookStep{{Interface: "bios", Step: "apply_configuration", Args: map[string]any{"bmc_password": "p"}, Order: 1}}})
	}
	sys, _ := login(t, c, "admin", "admin-secret", "")
	for _, query := range []string{"?detail=true&limit=2", "?fields=uuid,name,extra", "?limit=1&sort_key=name&sort_dir=desc"} {
		req, err := http.NewRequest(http.MethodGet, c.BaremetalURL()+"v1/runbooks"+query, nil)
		require.NoError(t, err)
		req.Header.Set("X-Auth-Token", sys.token)
		req.Header.Set("X-OpenStack-Ironic-API-Version", "1.96")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", raw)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var doc any
		require.NoError(t, dec.Decode(&doc))
		var want bytes.Buffer
		require.NoError(t, json.NewEncoder(&want).Encode(doc))
		assert.Equal(t, want.String(), string(raw), query)
		assert.Contains(t, string(raw), `\u0026`, "%s: an extra's or the next link's & escaped", query)
	}
}
