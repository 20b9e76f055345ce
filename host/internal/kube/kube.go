// Package kube is the hook's Kubernetes client (client-go): JSON patches of CR metadata, merge
// patches of the status subresource, reads of CR finalizers and of credential Secrets, and the
// Events (events.k8s.io/v1) recorded about CRs.
//
// It speaks raw paths rather than typed clients because the CRD is known only at run time, and it
// keeps each rejected request's status code and body: the framework's verify-on-reject rules
// (docs/contract.md §5.2, §6.2) depend on them.
package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

func segments(t kubeapi.Target, sub ...string) []string {
	return append([]string{"/apis", t.Group, t.Version, "namespaces", t.Namespace, t.Plural, t.Name}, sub...)
}

// Client talks to one API server. One client serves a whole run.
type Client struct {
	rest *rest.RESTClient
}

// Config is the in-cluster service account, else the KUBECONFIG file(s).
func Config() (*rest.Config, error) {
	cfg, err := rest.InClusterConfig()
	if err == nil {
		return cfg, nil
	}
	if !errors.Is(err, rest.ErrNotInCluster) {
		return nil, fmt.Errorf("in-cluster Kubernetes configuration: %w", err)
	}
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		return nil, errors.New("no Kubernetes configuration: not running in a cluster and KUBECONFIG is not set")
	}
	rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(path)}
	cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("KUBECONFIG %s: %w", path, err)
	}
	return cfg, nil
}

// Limit is the client-side limit on the client's requests: QPS per second with bursts of Burst.
// QPS 0 sets none, leaving the API server's priority and fairness to decide.
type Limit struct {
	QPS   float32
	Burst int
}

// New connects with Config.
func New(l Limit) (*Client, error) {
	cfg, err := Config()
	if err != nil {
		return nil, err
	}
	return NewForConfig(cfg, l)
}

// NewForConfig builds a client for cfg within l; l replaces whatever limit cfg carried.
func NewForConfig(cfg *rest.Config, l Limit) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	// Only Status objects are decoded; everything else is read as raw JSON.
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	cfg.ContentType = "application/json"
	// client-go reads a zero rate as its default of 5 per second and a negative one as none.
	cfg.QPS, cfg.Burst, cfg.RateLimiter = l.QPS, l.Burst, nil
	if l.QPS <= 0 {
		cfg.QPS = -1
	}
	cfg.WarningHandler = rest.NoWarnings{}
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return &Client{rest: rc}, nil
}

// JSONPatch applies a JSON patch (RFC 6902) to the object.
func (c *Client) JSONPatch(ctx context.Context, t kubeapi.Target, patch []byte) error {
	_, err := do(ctx, c.rest.Patch(types.JSONPatchType).AbsPath(segments(t)...).Body(patch))
	return err
}

// MergePatchStatus applies a JSON merge patch to the object's status subresource.
func (c *Client) MergePatchStatus(ctx context.Context, t kubeapi.Target, patch []byte) error {
	_, err := do(ctx, c.rest.Patch(types.MergePatchType).AbsPath(segments(t, "status")...).Body(patch))
	return err
}

// Finalizers reads the live object's metadata.finalizers.
func (c *Client) Finalizers(ctx context.Context, t kubeapi.Target) ([]string, error) {
	body, err := do(ctx, c.rest.Get().AbsPath(segments(t)...))
	if err != nil {
		return nil, err
	}
	var obj struct {
		Metadata struct {
			Finalizers []string `json:"finalizers"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", t.Namespace, t.Name, err)
	}
	return obj.Metadata.Finalizers, nil
}

// GetSecretData reads a Secret's data. A refusal is a *kubeapi.APIError, so kubeapi.IsNotFound
// applies (client-go's error stays in its chain).
func (c *Client) GetSecretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	body, err := do(ctx, c.rest.Get().AbsPath("/api/v1", "namespaces", namespace, "secrets", name))
	if err != nil {
		return nil, err
	}
	var secret struct {
		Data map[string][]byte `json:"data"`
	}
	if err := json.Unmarshal(body, &secret); err != nil {
		return nil, fmt.Errorf("reading secret %s/%s: %w", namespace, name, err)
	}
	return secret.Data, nil
}

func eventPath(namespace string, name ...string) []string {
	return append([]string{"/apis/events.k8s.io/v1/namespaces", namespace, "events"}, name...)
}

// CreateEvent creates an events.k8s.io/v1 Event; a taken name is an APIError with code 409.
func (c *Client) CreateEvent(ctx context.Context, namespace string, body []byte) error {
	_, err := do(ctx, c.rest.Post().AbsPath(eventPath(namespace)...).Body(body))
	return err
}

// GetEvent reads an Event as raw JSON.
func (c *Client) GetEvent(ctx context.Context, namespace, name string) ([]byte, error) {
	return do(ctx, c.rest.Get().AbsPath(eventPath(namespace, name)...))
}

// UpdateEvent replaces an Event; a stale resourceVersion is an APIError with code 409.
func (c *Client) UpdateEvent(ctx context.Context, namespace, name string, body []byte) error {
	_, err := do(ctx, c.rest.Put().AbsPath(eventPath(namespace, name)...).Body(body))
	return err
}

// do sends req and turns an error status into an APIError carrying the code and body.
func do(ctx context.Context, req *rest.Request) ([]byte, error) {
	res := req.Do(ctx)
	err := res.Error()
	if err == nil {
		body, _ := res.Raw()
		return body, nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return nil, err
	}
	body, _ := res.Raw()
	text := string(bytes.TrimSpace(body))
	if text == "" {
		text = status.Status().Message
	}
	return nil, &kubeapi.APIError{Code: int(status.Status().Code), Body: text, Err: err}
}

// ListCRNames lists up to limit objects of the custom resource t names (its Name is ignored; an
// empty Namespace lists every namespace) and returns them as namespace/name. A kind the API server
// does not serve is an APIError with code 404.
func (c *Client) ListCRNames(ctx context.Context, t kubeapi.Target, limit int) ([]string, error) {
	path := []string{"/apis", t.Group, t.Version, t.Plural}
	if t.Namespace != "" {
		path = []string{"/apis", t.Group, t.Version, "namespaces", t.Namespace, t.Plural}
	}
	body, err := do(ctx, c.rest.Get().AbsPath(path...).Param("limit", fmt.Sprint(limit)))
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("listing %s.%s: %w", t.Plural, t.Group, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, it := range list.Items {
		names = append(names, it.Metadata.Namespace+"/"+it.Metadata.Name)
	}
	return names, nil
}
