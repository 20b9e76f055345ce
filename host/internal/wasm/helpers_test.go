package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm/wasmtest"
)

// guest builds (or finds cached) one of the Go test guests in testdata/guests.
func guest(tb testing.TB, name string) string {
	tb.Helper()
	return wasmtest.BuildGuest(tb, "testdata/guests", name, "../../../pdk")
}

// logBuffer is a goroutine-safe log sink for asserting on log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func testLogger() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// testOptions are Options for a test: a private cache directory, the given environment and a
// captured log.
func testOptions(t testing.TB, env ...string) (Options, *logBuffer) {
	log, lb := testLogger()
	return Options{CacheDir: sharedCacheDir(t), LookupEnv: lookupIn(env), Logger: log}, lb
}

// lookupIn is a LookupEnv over "KEY=value" entries.
func lookupIn(env []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

var (
	cacheDirOnce sync.Once
	cacheDir     string
)

// sharedCacheDir is one compilation cache for the whole test binary, so each guest compiles once.
func sharedCacheDir(t testing.TB) string {
	cacheDirOnce.Do(func() {
		dir, err := tempDirOutsideTest()
		require.NoError(t, err)
		cacheDir = dir
	})
	return cacheDir
}

func loadTest(t testing.TB, path string, o Options) *Plugin {
	t.Helper()
	p, err := load(context.Background(), path, o)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// fakeSession answers the mock plugin's requests like a small Neutron would.
type fakeSession struct {
	mu       sync.Mutex
	requests []plugin.Request
	// fail, when set, is returned for every request.
	fail error
}

func (s *fakeSession) Do(_ context.Context, req plugin.Request) (*plugin.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	jsonResp := func(status int, v any) *plugin.Response {
		b, _ := json.Marshal(v)
		return &plugin.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
	}
	switch {
	case req.Method == "GET" && req.Path == "v2.0/things" && req.Query.Get("size") != "":
		n := 0
		for _, c := range req.Query.Get("size") {
			n = n*10 + int(c-'0')
		}
		return jsonResp(200, map[string]string{"data": strings.Repeat("x", n)}), nil
	case req.Method == "GET" && req.Path == "v2.0/things":
		return jsonResp(200, map[string]any{"things": []any{}}), nil
	case req.Method == "GET" && strings.HasPrefix(req.Path, "v2.0/things/"):
		return jsonResp(404, map[string]any{"NeutronError": map[string]string{"message": "Thing not found"}}), nil
	case req.Method == "POST" && req.Path == "v2.0/things":
		var body struct {
			Thing struct{ Name string } `json:"thing"`
		}
		_ = json.Unmarshal(req.Body, &body)
		return jsonResp(201, map[string]any{"thing": map[string]string{"id": "id-" + body.Thing.Name}}), nil
	}
	return jsonResp(400, map[string]any{"NeutronError": map[string]string{"message": "unexpected " + req.Method + " " + req.Path}}), nil
}

func (s *fakeSession) Requests() []plugin.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plugin.Request(nil), s.requests...)
}

func crRequest(name string, spec map[string]any) plugin.ReconcileRequest {
	gen := int64(3)
	raw, err := json.Marshal(spec)
	if err != nil {
		panic(err)
	}
	if spec == nil {
		raw = nil
	}
	return plugin.ReconcileRequest{
		Object: plugin.Object{APIVersion: "test.openstack-sync.io/v1alpha1", Kind: "Mock", Namespace: "ns", Name: name,
			UID: "uid-" + name, Generation: &gen},
		Spec: raw,
	}
}
