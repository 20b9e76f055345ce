package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/fakecloud"
	"github.com/openstack-sync/openstack-sync/host/internal/openstack"
	"github.com/openstack-sync/openstack-sync/host/internal/osapi"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// EnvRecord, set to 1 with EnvClouds, rewrites testdata/collections from the real cloud's
// answers instead of comparing with them.
const EnvRecord = "OPENSTACK_SYNC_CONTRACT_RECORD"

// TestCollections holds the embedded cloud to the real one for every collection an author may
// name (osapi.Resources): each collection's generated probes (probes_test.go) go to both, and
// any difference in a status or in an answer (after the ids, times and URLs each cloud makes up
// are replaced by placeholders) fails. The real cloud's answers are recorded in
// testdata/collections, so the fast tier compares the embedded cloud with them without a real
// cloud, and the real-parts tier fails when a recording no longer matches the real services.
func TestCollections(t *testing.T) {
	base := "ct-" + newVars().m["run"]
	t.Run("embedded", func(t *testing.T) {
		for _, r := range osapi.Resources() {
			t.Run(r.Ref(), func(t *testing.T) {
				cloud := fakecloud.New(fakecloud.Options{})
				t.Cleanup(cloud.Close)
				got := observe(t, cloud.CloudsYAML(), r, base)
				if dir := os.Getenv("OPENSTACK_SYNC_CONTRACT_DUMP"); dir != "" {
					b, _ := json.MarshalIndent(got, "", "  ")
					require.NoError(t, os.WriteFile(filepath.Join(dir, r.Service+"-"+r.Name+".json"), b, 0o644))
				}
				want, err := readRecording(r)
				require.NoError(t, err, "no recording of the real cloud: run the suite against it with %s=1", EnvRecord)
				compareObservations(t, "recorded real", want, "embedded", got)
			})
		}
	})
	t.Run("real", func(t *testing.T) {
		clouds := realClouds(t)
		for _, r := range osapi.Resources() {
			t.Run(r.Ref(), func(t *testing.T) {
				// Keystone and Neutron answer at the same time; each collection's probes are its own.
				t.Parallel()
				real := observe(t, clouds, r, base)
				cloud := fakecloud.New(fakecloud.Options{})
				t.Cleanup(cloud.Close)
				embedded := observe(t, cloud.CloudsYAML(), r, base)
				if os.Getenv(EnvRecord) == "1" {
					require.NoError(t, writeRecording(r, real))
				} else if want, err := readRecording(r); assert.NoError(t, err) {
					compareObservations(t, "recorded real", want, "real", real)
				}
				compareObservations(t, "real", real, "embedded", embedded)
			})
		}
	})
}

// observation is one probe's answer, normalised.
type observation struct {
	Probe   string `json:"probe"`
	Request string `json:"request"`
	Status  int    `json:"status"`
	Body    any    `json:"body,omitempty"`
}

func recordingPath(r *osapi.Resource) string {
	return filepath.Join("testdata", "collections", r.Service+"-"+r.Name+".json")
}

func readRecording(r *osapi.Resource) ([]observation, error) {
	b, err := os.ReadFile(recordingPath(r))
	if err != nil {
		return nil, err
	}
	var out []observation
	return out, json.Unmarshal(b, &out)
}

func writeRecording(r *osapi.Resource, obs []observation) error {
	b, err := json.MarshalIndent(obs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(recordingPath(r)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(recordingPath(r), append(b, '\n'), 0o644)
}

// observe sends r's probes to a cloud and returns its normalised answers; whatever the probes
// made is deleted at the end.
func observe(t *testing.T, clouds string, r *osapi.Resource, base string) []observation {
	sec := secretReader{"contract/clouds": {"clouds.yaml": []byte(clouds)}}
	conn := openstack.NewConnector(sec, openstack.Options{Plugin: "contract", MaxAttempts: 1, Logger: slog.New(slog.DiscardHandler)})
	ctx := context.Background()
	sessions := map[string]plugin.Session{}
	session := func(cloud string) plugin.Session {
		if s, ok := sessions[cloud]; ok {
			return s
		}
		s, err := conn.Connect(ctx, plugin.Credentials{Namespace: "contract", SecretName: "clouds", CloudName: cloudNames[cloud]})
		require.NoError(t, err)
		sessions[cloud] = s
		return s
	}
	ids := map[string]string{}
	var made []string
	cleaner := "admin"
	if r.Service == osapi.Baremetal {
		// The system-scoped admin may delete whatever a probe made, whoever owns it.
		cleaner = "system"
	}
	t.Cleanup(func() {
		for _, id := range slices.Backward(made) {
			path := r.Path + "/" + id
			if r.DeleteEnabled != "" {
				body, _ := json.Marshal(map[string]any{r.Key: map[string]any{"enabled": false}})
				_, _ = session("admin").Do(ctx, plugin.Request{Service: r.Service, Method: r.Update, Path: path, Body: body})
			}
			resp, err := session(cleaner).Do(ctx, plugin.Request{Service: r.Service, Method: http.MethodDelete, Path: path,
				Microversion: ironicVersion(r)})
			if err != nil || resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusNotFound {
				t.Logf("cleanup: DELETE %s: %v %s", path, err, responseText(resp))
			}
		}
	})
	n := newNormaliser(r, base)
	var out []observation
	for _, p := range probes(r, base) {
		path, ok := expandPath(p.path, ids)
		query, qok := expandQuery(p.query, ids)
		ok = ok && qok
		req := plugin.Request{Service: r.Service, Method: p.method, Path: path, Query: query, Microversion: p.microversion}
		if p.microversion == "none" {
			req.Microversion = ""
		}
		label := p.method + " " + p.path
		if len(p.query) > 0 {
			label += "?" + p.query.Encode()
		}
		label = strings.ReplaceAll(strings.ReplaceAll(label, ironicName(base, ""), "CUSTOM_CT_RUN_"), base, "ct-RUN")
		if p.microversion != "" && p.microversion != osapi.IronicVersion {
			label += " @" + p.microversion
		}
		if !ok {
			out = append(out, observation{Probe: p.name, Request: label, Status: -1})
			continue
		}
		if p.body != nil {
			req.Body, _ = json.Marshal(p.body)
		}
		resp, err := session(p.cloud).Do(ctx, req)
		require.NoError(t, err, "%s: %s", p.name, label)
		var body any
		if len(resp.Body) > 0 {
			if json.Unmarshal(resp.Body, &body) != nil {
				body = string(resp.Body)
			}
		}
		if p.method == http.MethodPost && p.capture != "" {
			if id := createdID(r, resp, body); id != "" {
				ids[p.capture] = id
				made = append(made, id)
			}
		}
		if p.ours {
			body = keepOurs(body, r.Plural, ourPrefix(r, base))
		}
		out = append(out, observation{Probe: p.name, Request: label, Status: resp.StatusCode, Body: n.normalise(body)})
	}
	return out
}

// storedIDPattern finds the id Keystone shows when it refuses to answer with an object it stored.
var storedIDPattern = regexp.MustCompile(`'id': '([0-9a-f]{32})'`)

// createdID is the id of what a create made: in the answer, or in the error of a create that
// stored an object it could not show.
func createdID(r *osapi.Resource, resp *plugin.Response, body any) string {
	if resp.StatusCode/100 == 2 {
		if doc, ok := body.(map[string]any); ok {
			if r.JSONPatch {
				// Ironic answers with the bare object.
				return fmt.Sprint(doc[r.ID()])
			}
			if obj, ok := doc[r.Key].(map[string]any); ok {
				return fmt.Sprint(obj["id"])
			}
		}
		return ""
	}
	if m := storedIDPattern.FindSubmatch(resp.Body); m != nil {
		return string(m[1])
	}
	return ""
}

func responseText(r *plugin.Response) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%d %s", r.StatusCode, r.Body)
}

// ironicVersion is the microversion of a cleanup's request: the one the probes use.
func ironicVersion(r *osapi.Resource) string {
	if r.Service == osapi.Baremetal {
		return osapi.IronicVersion
	}
	return ""
}

// ourPrefix is how the names of what this run makes begin.
func ourPrefix(r *osapi.Resource, base string) string {
	if r.Service == osapi.Baremetal {
		return ironicName(base, "")
	}
	return base
}

// expandQuery replaces {name} values with captured ids.
func expandQuery(q url.Values, ids map[string]string) (url.Values, bool) {
	if q == nil {
		return nil, true
	}
	out := url.Values{}
	ok := true
	for k, vs := range q {
		for _, v := range vs {
			if strings.HasPrefix(v, "{") && strings.HasSuffix(v, "}") {
				id, have := ids[strings.Trim(v, "{}")]
				ok = ok && have
				v = id
			}
			out[k] = append(out[k], v)
		}
	}
	return out, ok
}

// keepOurs keeps, in a list answer, the items this run made.
func keepOurs(body any, plural, base string) any {
	doc, ok := body.(map[string]any)
	if !ok {
		return body
	}
	items, ok := doc[plural].([]any)
	if !ok {
		return body
	}
	doc = maps.Clone(doc)
	kept := []any{}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok && strings.HasPrefix(fmt.Sprint(m["name"]), base) {
			kept = append(kept, it)
		}
	}
	doc[plural] = kept
	return doc
}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b[0-9a-f]{32}\b`)
	timePattern = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
	urlPattern  = regexp.MustCompile(`https?://(127\.0\.0\.1|localhost):\d+`)
)

// normaliser replaces what each cloud makes up on its own: ids become <id1>, <id2>, ... in the
// order they first appear (so the same id stays the same placeholder), times <time>, endpoint
// URLs <url>, the run's names ct-RUN, and the resource's volatile fields <volatile>.
type normaliser struct {
	r    *osapi.Resource
	base string
	ids  map[string]string
}

func newNormaliser(r *osapi.Resource, base string) *normaliser {
	return &normaliser{r: r, base: base, ids: map[string]string{}}
}

func (n *normaliser) normalise(v any) any {
	switch x := v.(type) {
	case string:
		s := strings.ReplaceAll(x, n.base, "ct-RUN")
		s = strings.ReplaceAll(s, ironicName(n.base, ""), "CUSTOM_CT_RUN_")
		s = urlPattern.ReplaceAllString(s, "<url>")
		s = timePattern.ReplaceAllString(s, "<time>")
		return uuidPattern.ReplaceAllStringFunc(s, func(id string) string {
			if p, ok := n.ids[id]; ok {
				return p
			}
			p := fmt.Sprintf("<id%d>", len(n.ids)+1)
			n.ids[id] = p
			return p
		})
	case []any:
		if objects, ok := idsOf(x); ok && len(x) > 1 && n.r.Service != osapi.Baremetal {
			// Ironic lists come in creation order (its database's ids), the same on both clouds.
			return n.normaliseObjects(x, objects)
		}
		out := make([]any, len(x))
		for i, it := range x {
			out[i] = n.normalise(it)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if text, ok := x[k].(string); ok && k == "error_message" {
				// Ironic's error is JSON text; compared as what it says, not how it is spaced.
				var fault map[string]any
				if json.Unmarshal([]byte(text), &fault) == nil {
					out[k] = n.normalise(fault)
					continue
				}
			}
			if slices.Contains(n.r.Volatile, k) {
				out[k] = "<volatile>"
				continue
			}
			out[k] = n.normalise(x[k])
		}
		return out
	}
	return v
}

// idsOf returns the ids of a list of objects that all have one.
func idsOf(list []any) ([]string, bool) {
	var ids []string
	for _, it := range list {
		m, ok := it.(map[string]any)
		id, isString := m["id"].(string)
		if !ok || !isString {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// normaliseObjects normalises a list of objects. Each cloud makes up its own random ids, so the
// order of a list sorted by id differs between them: the list becomes its order ("by id" when its
// ids ascend) and its items sorted by their text, each cloud's placeholders given in name order.
func (n *normaliser) normaliseObjects(list []any, ids []string) any {
	order := "by id"
	if !slices.IsSorted(ids) {
		order = "not by id"
	}
	byName := slices.Clone(list)
	slices.SortStableFunc(byName, func(a, b any) int {
		return strings.Compare(fmt.Sprint(a.(map[string]any)["name"]), fmt.Sprint(b.(map[string]any)["name"]))
	})
	items := make([]any, len(byName))
	for i, it := range byName {
		items[i] = n.normalise(it)
	}
	slices.SortFunc(items, func(a, b any) int { return strings.Compare(mustJSON(a), mustJSON(b)) })
	return map[string]any{"order": order, "items": items}
}

// compareObservations fails on every probe whose status or answer differs.
func compareObservations(t *testing.T, wantName string, want []observation, gotName string, got []observation) {
	t.Helper()
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) {
			t.Errorf("%s has %d answers, %s %d: the probes changed; record again", wantName, len(want), gotName, len(got))
			return
		}
		w, g := want[i], got[i]
		if w.Probe != g.Probe || w.Request != g.Request {
			t.Errorf("answer %d: %s probed %q (%s), %s %q (%s): the probes changed; record again", i+1, wantName, w.Probe,
				w.Request, gotName, g.Probe, g.Request)
			return
		}
		if w.Status != g.Status {
			t.Errorf("%s (%s): status %d on the %s cloud, %d on the %s cloud\n  %s: %s\n  %s: %s", w.Probe, w.Request,
				w.Status, wantName, g.Status, gotName, wantName, mustJSON(w.Body), gotName, mustJSON(g.Body))
			continue
		}
		assert.Equal(t, indentJSON(w.Body), indentJSON(g.Body), "%s (%s): the answers differ (expected: %s, actual: %s)", w.Probe,
			w.Request, wantName, gotName)
	}
}

func indentJSON(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b)
}
