// Package kubetest is a small Kubernetes API server over httptest for testing the hook's client:
// it stores custom resources and Secrets, applies JSON and merge patches the way the API server
// does (a failed "test" op is a 422), answers unknown routes with a plain-text 404, and records
// every request. Intercept injects any other answer.
package kubetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/client-go/rest"
)

// Request is one recorded request.
type Request struct {
	Method, Path, ContentType, Body string
}

// Server is the fake API server.
type Server struct {
	URL string
	// Intercept, when set, may answer a request before the store does.
	Intercept func(r Request) (code int, body string, handled bool)

	srv     *httptest.Server
	mu      sync.Mutex
	objects map[string][]byte
	secrets map[string]map[string][]byte
	reqs    []Request
}

// NewServer starts a server that stops with the test.
func NewServer(t testing.TB) *Server {
	s := &Server{objects: map[string][]byte{}, secrets: map[string]map[string][]byte{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Config is a client configuration for the server.
func (s *Server) Config() *rest.Config { return &rest.Config{Host: s.URL} }

// Close stops the server early (to test transport errors).
func (s *Server) Close() { s.srv.Close() }

// ObjectPath is the API path of a namespaced custom resource.
func ObjectPath(group, version, plural, namespace, name string) string {
	return "/apis/" + group + "/" + version + "/namespaces/" + namespace + "/" + plural + "/" + name
}

// Put stores obj at path (as returned by ObjectPath).
func (s *Server) Put(path string, obj map[string]any) {
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[path] = data
}

// Object returns the stored object at path, nil when absent.
func (s *Server) Object(path string) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.objects[path]
	if !ok {
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		panic(err)
	}
	return obj
}

// Delete removes the object at path.
func (s *Server) Delete(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.objects, path)
}

// PutSecret stores a Secret's data.
func (s *Server) PutSecret(namespace, name string, data map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[namespace+"/"+name] = data
}

// Requests returns the recorded requests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Status is an API Status body as the server sends it.
func Status(code int, reason, name, message string) string {
	st := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
		"message": message, "reason": reason, "code": code}
	if name != "" {
		st["details"] = map[string]any{"name": name}
	}
	data, _ := json.Marshal(st)
	return string(data)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"), Body: string(body)}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	intercept := s.Intercept
	s.mu.Unlock()
	if intercept != nil {
		if code, out, ok := intercept(req); ok {
			write(w, code, out)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns, name, ok := secretPath(req.Path); ok && r.Method == http.MethodGet {
		data, found := s.secrets[ns+"/"+name]
		if !found {
			write(w, 404, Status(404, "NotFound", name, fmt.Sprintf("secrets %q not found", name)))
			return
		}
		enc := map[string]string{}
		for k, v := range data {
			enc[k] = base64.StdEncoding.EncodeToString(v)
		}
		out, _ := json.Marshal(map[string]any{"kind": "Secret", "apiVersion": "v1", "data": enc})
		write(w, 200, string(out))
		return
	}
	path, sub := strings.CutSuffix(req.Path, "/status")
	if !strings.HasPrefix(path, "/apis/") {
		http.NotFound(w, r)
		return
	}
	obj, found := s.objects[path]
	name := path[strings.LastIndex(path, "/")+1:]
	if !found {
		write(w, 404, Status(404, "NotFound", name, fmt.Sprintf("%q not found", name)))
		return
	}
	switch {
	case r.Method == http.MethodGet && !sub:
		write(w, 200, string(obj))
	case r.Method == http.MethodPatch && !sub && req.ContentType == "application/json-patch+json":
		patch, err := jsonpatch.DecodePatch(body)
		if err == nil {
			obj, err = patch.Apply(obj)
		}
		if err != nil {
			write(w, 422, Status(422, "Invalid", name, "the server rejected our request due to an error in our request: "+err.Error()))
			return
		}
		s.objects[path] = bumpVersion(obj)
		write(w, 200, string(s.objects[path]))
	case r.Method == http.MethodPatch && sub && req.ContentType == "application/merge-patch+json":
		var p map[string]json.RawMessage
		if err := json.Unmarshal(body, &p); err != nil {
			write(w, 400, Status(400, "BadRequest", name, err.Error()))
			return
		}
		// The status subresource ignores everything but status.
		only, _ := json.Marshal(map[string]json.RawMessage{"status": p["status"]})
		merged, err := jsonpatch.MergePatch(obj, only)
		if err != nil {
			write(w, 422, Status(422, "Invalid", name, err.Error()))
			return
		}
		s.objects[path] = bumpVersion(merged)
		write(w, 200, string(s.objects[path]))
	default:
		write(w, 405, Status(405, "MethodNotAllowed", name, "method not allowed"))
	}
}

func bumpVersion(obj []byte) []byte {
	var m map[string]any
	if json.Unmarshal(obj, &m) != nil {
		return obj
	}
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		return obj
	}
	rv, _ := strconv.Atoi(fmt.Sprint(md["resourceVersion"]))
	md["resourceVersion"] = strconv.Itoa(rv + 1)
	out, _ := json.Marshal(m)
	return out
}

func secretPath(p string) (ns, name string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/api/v1/namespaces/"), "/")
	if !strings.HasPrefix(p, "/api/v1/namespaces/") || len(parts) != 3 || parts[1] != "secrets" {
		return "", "", false
	}
	return parts[0], parts[2], true
}

func write(w http.ResponseWriter, code int, body string) {
	if strings.HasPrefix(body, "{") {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}
