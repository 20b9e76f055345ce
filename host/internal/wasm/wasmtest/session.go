package wasmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
)

// The doubles the sandbox's tests and the native runner's tests (host/internal/nativeplugin)
// share, so that both run the test guests against the same cloud.

// LogBuffer is a goroutine-safe log sink for asserting on log lines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Logger is a debug-level logger writing into a new LogBuffer.
func Logger() (*slog.Logger, *LogBuffer) {
	lb := &LogBuffer{}
	return slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// LookupIn is a LookupEnv over "KEY=value" entries.
func LookupIn(env []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

// Session answers the mock guests' requests like a small Neutron would.
type Session struct {
	mu       sync.Mutex
	requests []plugin.Request
	// Fail, when set, is returned for every request.
	Fail error
}

func (s *Session) Do(_ context.Context, req plugin.Request) (*plugin.Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	fail := s.Fail
	s.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	switch {
	case req.Method == "GET" && req.Path == "v2.0/things" && req.Query.Get("size") != "":
		n := 0
		for _, c := range req.Query.Get("size") {
			n = n*10 + int(c-'0')
		}
		return jsonResponse(200, map[string]string{"data": strings.Repeat("x", n)}), nil
	case req.Method == "GET" && req.Path == "v2.0/things":
		return jsonResponse(200, map[string]any{"things": []any{}}), nil
	case req.Method == "GET" && strings.HasPrefix(req.Path, "v2.0/things/"):
		return jsonResponse(404, map[string]any{"NeutronError": map[string]string{"message": "Thing not found"}}), nil
	case req.Method == "POST" && req.Path == "v2.0/things":
		var body struct {
			Thing struct{ Name string } `json:"thing"`
		}
		_ = json.Unmarshal(req.Body, &body)
		return jsonResponse(201, map[string]any{"thing": map[string]string{"id": "id-" + body.Thing.Name}}), nil
	}
	return jsonResponse(400, map[string]any{"NeutronError": map[string]string{"message": "unexpected " + req.Method + " " + req.Path}}), nil
}

// Requests are the requests the session received, in order.
func (s *Session) Requests() []plugin.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plugin.Request(nil), s.requests...)
}

// Forget drops the requests recorded so far, so that a long benchmark does not grow memory.
func (s *Session) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = s.requests[:0]
}

func jsonResponse(status int, v any) *plugin.Response {
	b, _ := json.Marshal(v)
	return &plugin.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: b}
}

// CRRequest is a reconcile of the Mock CR name (generation 3) with spec.
func CRRequest(name string, spec map[string]any) plugin.ReconcileRequest {
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
