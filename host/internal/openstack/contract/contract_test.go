package contract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// EnvClouds names the clouds.yaml of a real cloud (hack/os-harness.sh prints it). Unset, the real
// half of the suite skips and says so.
const EnvClouds = "OPENSTACK_SYNC_E2E_CLOUDS"

// scenario is one testdata file: steps run in order against one cloud, cleanup always runs.
type scenario struct {
	Description string `json:"description"`
	Steps       []step `json:"steps"`
	Cleanup     []step `json:"cleanup"`
}

type step struct {
	Name string `json:"name"`
	// Cloud is admin, system, member or refused (admin with a wrong password).
	Cloud   string            `json:"cloud"`
	Request request           `json:"request"`
	Expect  expect            `json:"expect"`
	Capture map[string]string `json:"capture"`
}

type request struct {
	Service      string              `json:"service"`
	Method       string              `json:"method"`
	Path         string              `json:"path"`
	Query        map[string][]string `json:"query"`
	Microversion string              `json:"microversion"`
	Body         any                 `json:"body"`
}

type expect struct {
	Status int `json:"status"`
	// JSON maps a dotted path ("flavor.service_profiles", "runbooks.0.name") to its exact value.
	JSON map[string]any `json:"json"`
	Len  map[string]int `json:"len"`
	// Some maps a list's path to fields one of its items must have (other clients may add items).
	Some     map[string]map[string]any `json:"some"`
	Present  []string                  `json:"present"`
	Absent   []string                  `json:"absent"`
	Null     []string                  `json:"isNull"`
	NotNull  []string                  `json:"notNull"`
	Contains []string                  `json:"contains"`
	// Error expects the session to fail with this text instead of answering.
	Error     string `json:"error"`
	Permanent *bool  `json:"permanent"`
}

// target is a cloud the scenarios run against.
type target struct {
	name   string
	clouds string // clouds.yaml text
}

var cloudNames = map[string]string{"admin": fakecloud.AdminCloud, "system": fakecloud.SystemCloud,
	"member": fakecloud.MemberCloud, "refused": "refused"}

func TestContract(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)

	t.Run("fake", func(t *testing.T) {
		cloud := fakecloud.New(fakecloud.Options{})
		defer cloud.Close()
		runAll(t, target{name: "fake", clouds: cloud.CloudsYAML()}, files)
	})
	t.Run("real", func(t *testing.T) {
		runAll(t, target{name: "real", clouds: realClouds(t)}, files)
	})
}

func runAll(t *testing.T, tg target, files []string) {
	clouds := withRefusedCloud(t, tg.clouds)
	sec := secretReader{"contract/clouds": {"clouds.yaml": []byte(clouds)}}
	conn := openstack.NewConnector(sec, openstack.Options{Plugin: "contract"})
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var sc scenario
			require.NoError(t, yaml.UnmarshalStrict(raw, &sc), f)
			vars := newVars()
			ctx := context.Background()
			t.Cleanup(func() {
				for _, st := range sc.Cleanup {
					if _, err := do(ctx, conn, st, vars); err != nil {
						t.Logf("cleanup %q: %v", st.Name, err)
					}
				}
			})
			for i, st := range sc.Steps {
				label := fmt.Sprintf("step %d %q (%s %s %s)", i+1, st.Name, st.Request.Method, st.Request.Service, vars.expand(st.Request.Path))
				resp, err := do(ctx, conn, st, vars)
				check(t, label, st, vars, resp, err)
			}
		})
	}
}

// withRefusedCloud adds cloud "refused": the admin cloud with a password Keystone rejects.
func withRefusedCloud(t *testing.T, text string) string {
	var file map[string]map[string]map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(text), &file))
	admin, ok := file["clouds"][fakecloud.AdminCloud]
	require.True(t, ok, "clouds.yaml has no %s cloud", fakecloud.AdminCloud)
	refused := map[string]any{}
	for k, v := range admin {
		refused[k] = v
	}
	auth := map[string]any{}
	for k, v := range admin["auth"].(map[string]any) {
		auth[k] = v
	}
	auth["password"] = "not-the-password"
	refused["auth"] = auth
	file["clouds"]["refused"] = refused
	out, err := yaml.Marshal(file)
	require.NoError(t, err)
	return string(out)
}

type secretReader map[string]map[string][]byte

func (s secretReader) GetSecretData(_ context.Context, namespace, name string) (map[string][]byte, error) {
	d, ok := s[namespace+"/"+name]
	if !ok {
		return nil, fmt.Errorf("no secret %s/%s", namespace, name)
	}
	return d, nil
}

func do(ctx context.Context, conn plugin.Connector, st step, vars *vars) (*plugin.Response, error) {
	cloudName, ok := cloudNames[st.Cloud]
	if !ok {
		return nil, fmt.Errorf("step %q: cloud %q is not admin, system, member or refused", st.Name, st.Cloud)
	}
	s, err := conn.Connect(ctx, plugin.Credentials{Namespace: "contract", SecretName: "clouds", CloudName: cloudName})
	if err != nil {
		return nil, err
	}
	req := plugin.Request{Service: st.Request.Service, Method: st.Request.Method, Path: vars.expand(st.Request.Path),
		Microversion: st.Request.Microversion}
	if len(st.Request.Query) > 0 {
		req.Query = map[string][]string{}
		for k, vs := range st.Request.Query {
			for _, v := range vs {
				req.Query[k] = append(req.Query[k], vars.expand(v))
			}
		}
	}
	if st.Request.Body != nil {
		b, err := json.Marshal(vars.expandAny(st.Request.Body))
		if err != nil {
			return nil, err
		}
		req.Body = b
	}
	return s.Do(ctx, req)
}

func check(t *testing.T, label string, st step, vars *vars, resp *plugin.Response, err error) {
	t.Helper()
	ex := st.Expect
	if ex.Error != "" {
		require.Error(t, err, label)
		assert.Contains(t, err.Error(), vars.expand(ex.Error), label)
		if ex.Permanent != nil {
			assert.Equal(t, *ex.Permanent, plugin.IsPermanent(err), "%s: permanent", label)
		}
		return
	}
	require.NoError(t, err, label)
	require.Equal(t, ex.Status, resp.StatusCode, "%s: status; body: %s", label, resp.Body)
	var doc any
	if len(resp.Body) > 0 {
		_ = json.Unmarshal(resp.Body, &doc)
	}
	for path, want := range ex.JSON {
		got, ok := lookup(doc, vars.expand(path))
		if assert.True(t, ok, "%s: %s missing in %s", label, path, resp.Body) {
			assert.JSONEq(t, mustJSON(vars.expandAny(want)), mustJSON(got), "%s: %s", label, path)
		}
	}
	for path, n := range ex.Len {
		got, ok := lookup(doc, path)
		list, isList := got.([]any)
		if assert.True(t, ok && isList, "%s: %s is not a list in %s", label, path, resp.Body) {
			assert.Len(t, list, n, "%s: %s", label, path)
		}
	}
	for path, fields := range ex.Some {
		got, _ := lookup(doc, path)
		list, _ := got.([]any)
		found := false
		for _, item := range list {
			matches := true
			for k, want := range fields {
				v, ok := lookup(item, k)
				matches = matches && ok && mustJSON(v) == mustJSON(vars.expandAny(want))
			}
			found = found || matches
		}
		assert.True(t, found, "%s: no item of %s has %v in %s", label, path, fields, resp.Body)
	}
	for _, path := range ex.Present {
		_, ok := lookup(doc, path)
		assert.True(t, ok, "%s: %s missing in %s", label, path, resp.Body)
	}
	for _, path := range ex.Absent {
		_, ok := lookup(doc, path)
		assert.False(t, ok, "%s: %s present in %s", label, path, resp.Body)
	}
	for _, path := range ex.Null {
		got, ok := lookup(doc, path)
		assert.True(t, ok && got == nil, "%s: %s is not null in %s", label, path, resp.Body)
	}
	for _, path := range ex.NotNull {
		got, ok := lookup(doc, path)
		assert.True(t, ok && got != nil, "%s: %s is null or missing in %s", label, path, resp.Body)
	}
	for _, s := range ex.Contains {
		assert.Contains(t, string(resp.Body), vars.expand(s), label)
	}
	for name, path := range st.Capture {
		got, ok := lookup(doc, path)
		require.True(t, ok, "%s: capture %s: %s missing in %s", label, name, path, resp.Body)
		vars.set(name, fmt.Sprint(got))
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// lookup follows a dotted path through decoded JSON; numeric parts index lists.
func lookup(doc any, path string) (any, bool) {
	cur := doc
	for part := range strings.SplitSeq(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// vars holds ${name} values: run (a per-run hex id), RUN (upper case, for trait names) and captures.
type vars struct{ m map[string]string }

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func newVars() *vars {
	var b [4]byte
	_, _ = rand.Read(b[:])
	run := hex.EncodeToString(b[:])
	return &vars{m: map[string]string{"run": run, "RUN": strings.ToUpper(run)}}
}

func (v *vars) set(name, value string) { v.m[name] = value }

func (v *vars) expand(s string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		name := varRE.FindStringSubmatch(m)[1]
		if val, ok := v.m[name]; ok {
			return val
		}
		return m
	})
}

func (v *vars) expandAny(x any) any {
	switch x := x.(type) {
	case string:
		return v.expand(x)
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			out[v.expand(k)] = v.expandAny(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = v.expandAny(val)
		}
		return out
	default:
		return x
	}
}
