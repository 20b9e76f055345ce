package fakekube

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
)

// Server is a stateful in-process Kubernetes API for the resources it was started with plus core
// Secrets, served over loopback HTTP. It is safe for concurrent use.
type Server struct {
	mu        sync.Mutex
	resources map[schema.GroupVersionResource]Resource
	objects   map[objectKey]Object
	events    []Event
	// discardEvents: keep no event log (DiscardEvents).
	discardEvents bool
	requests      []Request
	revision      int64
	now           func() time.Time
	token         string
	caPEM         []byte
	http          *httptest.Server
}

// Request is one HTTP request the server answered, for tests and the demo's "writes" count.
type Request struct {
	Method      string
	Path        string
	ContentType string
	Code        int
}

// Start serves resources (and Secrets) on a loopback port. Close stops it.
func Start(resources ...Resource) (*Server, error) {
	s := &Server{
		resources: map[schema.GroupVersionResource]Resource{SecretResource.GVR(): SecretResource},
		objects:   map[objectKey]Object{},
		now:       time.Now,
		token:     string(uuid.NewUUID()),
	}
	for _, r := range resources {
		if r.Plural == "" || r.Kind == "" || r.Version == "" {
			return nil, fmt.Errorf("fakekube: resource %+v needs a version, plural and kind", r)
		}
		if prev, dup := s.resources[r.GVR()]; dup && prev != r {
			return nil, fmt.Errorf("fakekube: resource %s is declared twice, differently", r.ResourceName())
		}
		s.resources[r.GVR()] = r
	}
	// TLS, as the real server: client-go sends a kubeconfig's token only over TLS.
	s.http = httptest.NewTLSServer(http.HandlerFunc(s.serveHTTP))
	s.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.http.Certificate().Raw})
	return s, nil
}

// Close stops serving.
func (s *Server) Close() { s.http.Close() }

// URL is the server's base URL (https://127.0.0.1:<port>).
func (s *Server) URL() string { return s.http.URL }

// RESTConfig is a client-go configuration for the server.
func (s *Server) RESTConfig() *rest.Config {
	return &rest.Config{Host: s.http.URL, BearerToken: s.token, TLSClientConfig: rest.TLSClientConfig{CAData: s.caPEM}}
}

// Kubeconfig is a kubeconfig document pointing at the server, for clients in other processes.
func (s *Server) Kubeconfig() []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: fakekube
  cluster:
    server: %q
    certificate-authority-data: %s
users:
- name: fakekube
  user:
    token: %q
contexts:
- name: fakekube
  context:
    cluster: fakekube
    user: fakekube
    namespace: default
current-context: fakekube
`, s.http.URL, base64.StdEncoding.EncodeToString(s.caPEM), s.token)
}

// WriteKubeconfig writes Kubeconfig to path with owner-only permissions (it holds the token).
func (s *Server) WriteKubeconfig(path string) error {
	return os.WriteFile(path, s.Kubeconfig(), 0o600)
}

// Requests returns the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Resource looks up a served resource by group and plural.
func (s *Server) Resource(group, plural string) (Resource, bool) {
	for gvr, r := range s.resources {
		if gvr.Group == group && gvr.Resource == plural {
			return r, true
		}
	}
	return Resource{}, false
}

type route struct {
	resource    Resource
	namespace   string
	name        string
	subresource string
}

// parseRoute maps a path to a resource; ok is false for paths the server does not serve, which
// the real server answers with a plain-text 404.
func (s *Server) parseRoute(path string) (route, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var gv schema.GroupVersion
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return route{}, false
	}
	var rt route
	switch {
	case len(parts) == 1:
		rt = route{}
	case len(parts) >= 3 && len(parts) <= 5 && parts[0] == "namespaces":
		rt = route{namespace: parts[1]}
		parts = parts[2:]
	default:
		return route{}, false
	}
	r, ok := s.resources[gv.WithResource(parts[0])]
	if !ok {
		return route{}, false
	}
	rt.resource = r
	if len(parts) > 1 {
		rt.name = parts[1]
	}
	if len(parts) > 2 {
		rt.subresource = parts[2]
	}
	return rt, true
}

func (s *Server) serveHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	s.handle(rec, req)
	s.mu.Lock()
	s.requests = append(s.requests, Request{
		Method: req.Method, Path: req.URL.Path, ContentType: req.Header.Get("Content-Type"), Code: rec.code,
	})
	s.mu.Unlock()
}

func (s *Server) handle(w http.ResponseWriter, req *http.Request) {
	if req.Header.Get("Authorization") != "Bearer "+s.token {
		writeError(w, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	if req.URL.Path == "/version" {
		writeJSON(w, http.StatusOK, map[string]string{"major": "1", "minor": "34", "gitVersion": "v1.34.4-fakekube"})
		return
	}
	rt, ok := s.parseRoute(req.URL.Path)
	if !ok {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return
	}
	r := rt.resource
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		writeError(w, apierrors.NewMethodNotSupported(r.GroupResource(), "watch"))
		return
	}
	switch {
	case rt.name == "" && req.Method == http.MethodGet:
		items, err := s.List(r, rt.namespace, req.URL.Query().Get("labelSelector"))
		if err != nil {
			writeError(w, err)
			return
		}
		s.writeList(w, r, items)
	case rt.name == "" && req.Method == http.MethodPost && rt.namespace != "":
		obj, err := readObject(req)
		if err == nil {
			obj, err = s.Create(r, rt.namespace, obj)
		}
		writeResult(w, http.StatusCreated, obj, err)
	case rt.name == "" || rt.namespace == "":
		writeError(w, apierrors.NewMethodNotSupported(r.GroupResource(), strings.ToLower(req.Method)))
	case req.Method == http.MethodGet && (rt.subresource == "" || rt.subresource == statusSubresource && r.StatusSubresource):
		obj, err := s.Get(r, rt.namespace, rt.name)
		writeResult(w, http.StatusOK, obj, err)
	case req.Method == http.MethodPut:
		obj, err := readObject(req)
		if err == nil {
			obj, err = s.Update(r, rt.namespace, rt.name, rt.subresource, obj)
		}
		writeResult(w, http.StatusOK, obj, err)
	case req.Method == http.MethodPatch:
		body, err := io.ReadAll(req.Body)
		var obj Object
		if err == nil {
			ct, _, _ := strings.Cut(req.Header.Get("Content-Type"), ";")
			obj, err = s.Patch(r, rt.namespace, rt.name, rt.subresource, strings.TrimSpace(ct), body)
		}
		writeResult(w, http.StatusOK, obj, err)
	case req.Method == http.MethodDelete && rt.subresource == "":
		s.serveDelete(w, req, rt)
	default:
		writeError(w, apierrors.NewMethodNotSupported(r.GroupResource(), strings.ToLower(req.Method)))
	}
}

func (s *Server) serveDelete(w http.ResponseWriter, req *http.Request, rt route) {
	var opts metav1.DeleteOptions
	body, err := io.ReadAll(req.Body)
	if err == nil && len(strings.TrimSpace(string(body))) > 0 {
		if jerr := json.Unmarshal(body, &opts); jerr != nil {
			writeError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid delete options: %v", jerr)))
			return
		}
	}
	var pre DeleteOptions
	if opts.Preconditions != nil {
		if opts.Preconditions.UID != nil {
			pre.UID = string(*opts.Preconditions.UID)
		}
		if opts.Preconditions.ResourceVersion != nil {
			pre.ResourceVersion = *opts.Preconditions.ResourceVersion
		}
	}
	obj, deleted, err := s.Delete(rt.resource, rt.namespace, rt.name, pre)
	if err != nil {
		writeError(w, err)
		return
	}
	if !deleted {
		// Finalizers hold the object: the real server answers 202 with the terminating object.
		writeJSON(w, http.StatusAccepted, obj)
		return
	}
	uid, _ := metadataOf(obj)["uid"].(string)
	writeJSON(w, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name: rt.name, Group: rt.resource.Group, Kind: rt.resource.Plural, UID: types.UID(uid),
		},
	})
}

func (s *Server) writeList(w http.ResponseWriter, r Resource, items []Object) {
	s.mu.Lock()
	rv := fmt.Sprint(s.revision)
	s.mu.Unlock()
	list := make([]any, 0, len(items))
	for _, it := range items {
		if r.Core {
			delete(it, "apiVersion")
			delete(it, "kind")
		}
		list = append(list, it)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"apiVersion": r.APIVersion(),
		"kind":       r.Kind + "List",
		"metadata":   map[string]any{"resourceVersion": rv},
		"items":      list,
	})
}

func readObject(req *http.Request) (Object, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	obj, err := decodeObject(body)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the body of the request is not a JSON object: %v", err))
	}
	return obj, nil
}

func writeResult(w http.ResponseWriter, code int, obj Object, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, code, obj)
}

// writeError writes err as the metav1.Status the real server sends.
func writeError(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	status := st.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	writeJSON(w, code, &status)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// ResourceFor looks up a served resource by apiVersion and kind, as a hook binding names it.
func (s *Server) ResourceFor(apiVersion, kind string) (Resource, bool) {
	for _, r := range s.resources {
		if r.APIVersion() == apiVersion && r.Kind == kind {
			return r, true
		}
	}
	return Resource{}, false
}
