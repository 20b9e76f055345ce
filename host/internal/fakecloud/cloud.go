// Package fakecloud is an in-process, stateful OpenStack (Keystone, Neutron, Ironic) served over
// loopback HTTP, so the same gophercloud and session code that talks to a real cloud runs against
// it. It serves the unit tier and the demo; host/internal/openstack/contract checks each rule below
// against the real servers of hack/os-harness.sh.
//
// Rules copied from the real 2025.1 servers (Keystone 27, Neutron 26, Ironic 29), each pinned by
// host/internal/openstack/contract against them:
//
//   - Keystone: password tokens scoped to a project or to the system; a wrong password or an
//     unknown user is 401. HEAD/GET /v3/auth/tokens validate X-Subject-Token (404 when invalid).
//   - Every Neutron and Ironic API call needs a valid X-Auth-Token (401 otherwise).
//   - Neutron answers a system-scoped token with empty lists and refuses its writes (403
//     InvalidScope): Neutron work needs a project-scoped cloud.
//   - Neutron list filters are limited: segment ranges cannot be filtered by shared, default,
//     minimum or maximum, routers not by flavor_id, flavors not by service_profiles (400).
//   - Neutron flavors: service_type must be L3_ROUTER_NAT (400); service_type is read-only (400);
//     deleting a flavor a router uses is 409 FlavorInUse; names need not be unique.
//   - Neutron service profiles: the driver must be a registered L3 provider (404
//     ServiceProfileDriverNotFound); updating or deleting a profile bound to a flavor is 409.
//   - Association: POST /flavors/{id}/service_profiles answers with the *flavor* id (quirk); a
//     second bind is 409; GET of the association list is 500; unbinding is allowed while routers
//     use the flavor.
//   - Routers: a router's flavor must exist and have a bound profile (404), and an enabled one
//     (503 ServiceProfileDisabled).
//   - Segment ranges: admin only (a member lists nothing, writes are 403 or 404); network_type,
//     physical_network, project_id and shared are read-only (400); vlan needs physical_network
//     (400), gre/flat are unsupported (400); overlapping ranges of one type are 409.
//   - Ironic: microversion from X-OpenStack-Ironic-API-Version or OpenStack-API-Version (absent →
//     1.1, "latest" → max); above max or malformed → 406. Its collections (runbooks, deploy
//     templates) are osapi's, served with the negotiated microversion.
package fakecloud

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
)

// Names of the clouds in CloudsYAML; the same names as the clouds.yaml hack/os-harness.sh writes,
// so a scenario runs unchanged against either.
const (
	// AdminCloud is the admin user scoped to the admin project.
	AdminCloud = "local-admin"
	// SystemCloud is the admin user with a system-scoped token (Ironic public runbooks need it).
	SystemCloud = "local-system"
	// MemberCloud is the demo user with the member role in the demo project.
	MemberCloud = "local-demo"
)

// Service types in the catalog and in request records.
const (
	Identity  = "identity"
	Network   = "network"
	Baremetal = "baremetal"
)

// DefaultIronicMaxVersion is the newest Ironic microversion of the Debian trixie packages.
const DefaultIronicMaxVersion = "1.96"

// Options configure a Cloud. The zero value is a cloud like the real harness.
type Options struct {
	// IronicMaxVersion is the newest microversion Ironic accepts, e.g. "1.112". Default 1.96.
	IronicMaxVersion string
	// TokenTTL is how long a token lives. Default one hour.
	TokenTTL time.Duration
	// TLS serves every API over HTTPS with a certificate only CACertPEM vouches for.
	TLS bool
	// Latency delays every answer by this long, as a real cloud's round trip does (a loopback
	// fake answers in microseconds, which hides what concurrency could save).
	Latency time.Duration
}

// region is the catalog region, as in the harness's Keystone.
const region = "RegionOne"

// l3Drivers are the L3_ROUTER_NAT providers a service profile may name: Neutron's built-ins and
// the harness's test stub.
var l3Drivers = []string{
	"neutron.services.l3_router.service_providers.single_node.SingleNodeDriver",
	"neutron.services.l3_router.service_providers.ha.HaDriver",
	"neutron.services.l3_router.service_providers.dvr.DvrDriver",
	"neutron.services.l3_router.service_providers.dvrha.DvrHaDriver",
	"stub_l3.StubL3Driver",
}

// Cloud is a running fake cloud. It is safe for concurrent use.
type Cloud struct {
	opts      Options
	ironicMax version

	keystone, neutron, ironic *httptest.Server

	mu       sync.Mutex
	users    map[string]*user
	projects map[string]string // name -> id
	tokens   map[string]*token
	appCreds []*appCred
	faults   []*faultRule
	requests []Request

	flavors  []*Flavor
	profiles []*ServiceProfile
	// flavorIDs and profileIDs find flavors and profiles by id (idIndex).
	flavorIDs  idIndex[Flavor]
	profileIDs idIndex[ServiceProfile]
	routers    []*routerRec
	ranges     []*rangeRec
	pools      []*subnetPoolRec
	// collections are the authors' own (AddCollection).
	collections []*collection
	// known serves every collection whose real rules osapi holds (Keystone projects, Neutron
	// address scopes, ...).
	known *osapi.Store
}

type user struct {
	id, name, password, project string
	roles                       []string
}

type appCred struct {
	id, name, secret string
	user             *user
}

type token struct {
	user      *user
	projectID string // empty for a system-scoped token
	system    bool
	expires   time.Time
}

// New starts a fake cloud on loopback. Close it when done.
func New(opts Options) *Cloud {
	if opts.IronicMaxVersion == "" {
		opts.IronicMaxVersion = DefaultIronicMaxVersion
	}
	if opts.TokenTTL == 0 {
		opts.TokenTTL = time.Hour
	}
	max, err := parseVersion(opts.IronicMaxVersion)
	if err != nil {
		panic(fmt.Sprintf("fakecloud: IronicMaxVersion %q: %v", opts.IronicMaxVersion, err))
	}
	c := &Cloud{opts: opts, ironicMax: max, tokens: map[string]*token{},
		flavorIDs:  idIndex[Flavor]{id: func(f *Flavor) string { return f.ID }},
		profileIDs: idIndex[ServiceProfile]{id: func(p *ServiceProfile) string { return p.ID }}}
	c.projects = map[string]string{"admin": newHexID(), "demo": newHexID(), "service": newHexID()}
	c.users = map[string]*user{
		"admin": {id: newHexID(), name: "admin", password: "admin-secret", project: "admin",
			roles: []string{"admin", "member", "reader"}},
		"demo": {id: newHexID(), name: "demo", password: "demo-secret", project: "demo",
			roles: []string{"member", "reader"}},
	}
	c.seedDefaultRanges()
	start := func(h http.Handler) *httptest.Server {
		srv := httptest.NewUnstartedServer(h)
		// Refused handshakes and client hang-ups are what fault tests provoke; they are not news.
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		if opts.TLS {
			srv.StartTLS()
		} else {
			srv.Start()
		}
		return srv
	}
	c.keystone = start(c.wrap(Identity, http.HandlerFunc(c.serveKeystone)))
	c.neutron = start(c.wrap(Network, http.HandlerFunc(c.serveNeutron)))
	c.ironic = start(c.wrap(Baremetal, http.HandlerFunc(c.serveIronic)))
	c.known = osapi.New(osapi.Options{
		URL: func(service string) string {
			switch service {
			case Identity:
				return c.keystone.URL
			case Network:
				return c.neutron.URL
			}
			return c.ironic.URL
		},
		// The harness's bootstrap: the admin project first, then the service and demo projects.
		Projects: []osapi.Project{
			{ID: c.projects["admin"], Name: "admin", Description: "Bootstrap project for initializing the cloud."},
			{ID: c.projects["service"], Name: "service"}, {ID: c.projects["demo"], Name: "demo"},
		},
	})
	return c
}

// CACertPEM is the PEM certificate that verifies the servers of a cloud started with TLS; nil
// without TLS. Put it in a Secret's CA bundle key.
func (c *Cloud) CACertPEM() []byte {
	cert := c.keystone.Certificate()
	if cert == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// Close stops the servers.
func (c *Cloud) Close() {
	c.keystone.Close()
	c.neutron.Close()
	c.ironic.Close()
}

// AuthURL is the Keystone v3 endpoint.
func (c *Cloud) AuthURL() string { return c.keystone.URL + "/v3" }

// NetworkURL is the Neutron endpoint in the catalog.
func (c *Cloud) NetworkURL() string { return c.neutron.URL + "/" }

// BaremetalURL is the Ironic endpoint in the catalog.
func (c *Cloud) BaremetalURL() string { return c.ironic.URL + "/" }

// CloudsYAML is a clouds.yaml with the clouds AdminCloud, SystemCloud and MemberCloud.
func (c *Cloud) CloudsYAML() string {
	entry := func(name, userName, password, scope string) string {
		return fmt.Sprintf("  %s:\n    auth:\n      auth_url: %s\n      username: %s\n      password: %s\n"+
			"      user_domain_name: Default\n%s    region_name: %s\n",
			name, c.AuthURL(), userName, password, scope, region)
	}
	project := func(p string) string {
		return fmt.Sprintf("      project_name: %s\n      project_domain_name: Default\n", p)
	}
	return "clouds:\n" +
		entry(AdminCloud, "admin", c.userPassword("admin"), project("admin")) +
		entry(SystemCloud, "admin", c.userPassword("admin"), "      system_scope: all\n") +
		entry(MemberCloud, "demo", c.userPassword("demo"), project("demo"))
}

func (c *Cloud) userPassword(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.users[name].password
}

// SetPassword changes a user's password ("admin" or "demo"), so Keystone refuses the old one.
func (c *Cloud) SetPassword(userName, password string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[userName]
	if !ok {
		panic(fmt.Sprintf("fakecloud: no user %q", userName))
	}
	u.password = password
}

// AddApplicationCredential gives a user ("admin" or "demo") an application credential scoped to
// the user's project and returns its id and secret. A clouds.yaml entry uses them with
// auth_type v3applicationcredential.
func (c *Cloud) AddApplicationCredential(userName, name string) (id, secret string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[userName]
	if !ok {
		panic(fmt.Sprintf("fakecloud: no user %q", userName))
	}
	ac := &appCred{id: newHexID(), name: name, secret: newHexID(), user: u}
	c.appCreds = append(c.appCreds, ac)
	return ac.id, ac.secret
}

// ExpireTokens invalidates every issued token, so the next API call gets 401 and the client must
// authenticate again.
func (c *Cloud) ExpireTokens() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.tokens)
}

// TokensIssued counts successful authentications since the cloud started.
func (c *Cloud) TokensIssued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.requests {
		if r.Service == Identity && r.Method == http.MethodPost && r.Path == "/v3/auth/tokens" && r.Status == http.StatusCreated {
			n++
		}
	}
	return n
}

// Request is one request the cloud answered (or a fault answered for it).
type Request struct {
	Service  string
	Method   string
	Path     string
	RawQuery string
	// Microversion is the Ironic microversion the request asked for, if any.
	Microversion string
	// Status is the answered status; 0 when a fault reset the connection.
	Status int
	// Body is the request body of a write (anything but GET and HEAD), e.g. a JSON patch.
	Body string
}

func (r Request) String() string {
	q := ""
	if r.RawQuery != "" {
		q = "?" + r.RawQuery
	}
	return fmt.Sprintf("%s %s %s%s -> %d", r.Service, r.Method, r.Path, q, r.Status)
}

// Requests returns every request so far, oldest first.
func (c *Cloud) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.requests)
}

// Writes returns the Neutron and Ironic requests that could change state (anything but GET and
// HEAD), so a test can assert that a converged run writes nothing.
func (c *Cloud) Writes() []Request {
	var out []Request
	for _, r := range c.Requests() {
		if r.Service != Identity && r.Method != http.MethodGet && r.Method != http.MethodHead {
			out = append(out, r)
		}
	}
	return out
}

// RequestCounts counts the requests so far by method; Keystone's are counted apart, under
// "keystone", since they are the session's cost rather than the plugin's.
func (c *Cloud) RequestCounts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for _, r := range c.requests {
		if r.Service == Identity {
			out["keystone"]++
		} else {
			out[r.Method]++
		}
	}
	return out
}

// ResetRequests forgets the request log.
func (c *Cloud) ResetRequests() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests = nil
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
	record func()
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets a fault reach the hijackable connection underneath.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// wrap records every request and applies injected faults before the service handler.
func (c *Cloud) wrap(service string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := Request{Service: service, Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && service != Identity {
			// Identity bodies carry passwords; the log keeps none.
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			rec.Body = string(body)
		}
		if service == Baremetal {
			rec.Microversion = requestedIronicVersion(r.Header)
		}
		sr := &statusRecorder{ResponseWriter: w}
		// A reset fault records before it closes the connection: the client sees the reset at
		// once, and a test reading the log then must find the request already there.
		var once sync.Once
		sr.record = func() {
			once.Do(func() {
				rec.Status = sr.status
				c.mu.Lock()
				c.requests = append(c.requests, rec)
				c.mu.Unlock()
			})
		}
		defer sr.record()
		if c.opts.Latency > 0 {
			time.Sleep(c.opts.Latency)
		}
		if c.applyFault(service, sr, r) {
			return
		}
		h.ServeHTTP(sr, r)
	})
}

// authenticate returns the token of a request, or writes 401 and returns nil.
func (c *Cloud) authenticate(w http.ResponseWriter, r *http.Request) *token {
	c.mu.Lock()
	t, ok := c.tokens[r.Header.Get("X-Auth-Token")]
	if ok && time.Now().After(t.expires) {
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		writeKeystoneUnauthorized(w)
		return nil
	}
	return t
}

func (t *token) hasRole(role string) bool { return slices.Contains(t.user.roles, role) }

func (t *token) isAdmin() bool { return t.hasRole("admin") }

func writeKeystoneUnauthorized(w http.ResponseWriter) {
	writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
		"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// newUUID returns a random RFC 4122 version 4 UUID, the id shape Neutron and Ironic use.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newHexID returns a Keystone-shaped id (32 hex digits).
func newHexID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// pathSegments splits a URL path below prefix into its segments.
func pathSegments(path, prefix string) ([]string, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return nil, false
	}
	rest = strings.Trim(rest, "/")
	if rest == "" {
		return nil, true
	}
	return strings.Split(rest, "/"), true
}

// serveKnown answers a request under a collection osapi knows; false when the path is not one.
// microversion is the Ironic microversion negotiated ("" elsewhere).
func (c *Cloud) serveKnown(service string, w http.ResponseWriter, r *http.Request, t *token, microversion string) bool {
	body, _ := io.ReadAll(r.Body)
	resp, ok := c.known.Serve(osapi.Request{Service: service, Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(),
		RawQuery: r.URL.RawQuery, Body: body, Microversion: microversion,
		Caller: osapi.Caller{ProjectID: t.projectID, Admin: t.isAdmin(), System: t.system}})
	if !ok {
		r.Body = io.NopCloser(bytes.NewReader(body))
		return false
	}
	switch {
	case resp.Text != "":
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(resp.Status)
		_, _ = io.WriteString(w, resp.Text)
	case resp.Encoded != nil:
		// What writeJSON's encoder writes: the JSON and a newline.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		_, _ = w.Write(append(resp.Encoded, '\n'))
	case resp.Body != nil || resp.Null:
		writeJSON(w, resp.Status, resp.Body)
	default:
		w.WriteHeader(resp.Status)
	}
	return true
}

// Known returns the objects of a collection osapi knows ("identity:projects"), oldest first.
func (c *Cloud) Known(ref string) []map[string]any { return c.known.Objects(ref) }

// AddKnown stores an object in a collection osapi knows without the API's checks (one made by
// hand) and returns it as stored.
func (c *Cloud) AddKnown(ref string, obj map[string]any) (map[string]any, error) {
	return c.known.Add(ref, obj)
}
