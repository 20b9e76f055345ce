package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// The whole-object reads and writes of custom resources that openstack-sync migrate makes
// (host/internal/migrate): a list, a read, a create, a JSON patch returning the new
// resourceVersion and a delete with preconditions. dryRun sends the write as a server-side dry
// run: the API server checks it (validation, admission, permissions) and stores nothing.

// ListCRs lists every object of the custom resource (in namespace, or in every namespace when it
// is ""), following the list's continue tokens.
func (c *Client) ListCRs(ctx context.Context, t kubeapi.Target, namespace string) ([]map[string]any, error) {
	path := []string{"/apis", t.Group, t.Version, t.Plural}
	if namespace != "" {
		path = []string{"/apis", t.Group, t.Version, "namespaces", namespace, t.Plural}
	}
	var out []map[string]any
	cont := ""
	for {
		req := c.rest.Get().AbsPath(path...).Param("limit", "500")
		if cont != "" {
			req = req.Param("continue", cont)
		}
		body, err := do(ctx, req)
		if err != nil {
			return nil, err
		}
		var list struct {
			Items    []map[string]any `json:"items"`
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		if err := decode(body, &list); err != nil {
			return nil, fmt.Errorf("listing %s.%s: %w", t.Plural, t.Group, err)
		}
		out = append(out, list.Items...)
		if cont = list.Metadata.Continue; cont == "" {
			return out, nil
		}
	}
}

// GetCR reads one object.
func (c *Client) GetCR(ctx context.Context, t kubeapi.Target) (map[string]any, error) {
	body, err := do(ctx, c.rest.Get().AbsPath(segments(t)...))
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := decode(body, &obj); err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", t.Namespace, t.Name, err)
	}
	return obj, nil
}

// CreateCR creates the object body in t's namespace (t.Name is ignored).
func (c *Client) CreateCR(ctx context.Context, t kubeapi.Target, body []byte, dryRun bool) error {
	req := c.rest.Post().AbsPath("/apis", t.Group, t.Version, "namespaces", t.Namespace, t.Plural).Body(body)
	_, err := do(ctx, withDryRun(req, dryRun))
	return err
}

// PatchCR applies a JSON patch and returns the object's resourceVersion after it.
func (c *Client) PatchCR(ctx context.Context, t kubeapi.Target, patch []byte, dryRun bool) (string, error) {
	body, err := do(ctx, withDryRun(c.rest.Patch(types.JSONPatchType).AbsPath(segments(t)...).Body(patch), dryRun))
	if err != nil {
		return "", err
	}
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		return "", fmt.Errorf("reading %s/%s: %w", t.Namespace, t.Name, err)
	}
	return obj.Metadata.ResourceVersion, nil
}

// DeleteCR deletes the object if it is still the one of uid at resourceVersion.
func (c *Client) DeleteCR(ctx context.Context, t kubeapi.Target, uid, resourceVersion string, dryRun bool) error {
	pre := map[string]any{}
	if uid != "" {
		pre["uid"] = uid
	}
	if resourceVersion != "" {
		pre["resourceVersion"] = resourceVersion
	}
	opts := map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": pre}
	if dryRun {
		// A DELETE's options come from its body when it has one: the API server then ignores
		// the dryRun query parameter, and the delete would be real.
		opts["dryRun"] = []string{"All"}
	}
	body, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	_, err = do(ctx, c.rest.Delete().AbsPath(segments(t)...).Body(body))
	return err
}

func withDryRun(req *rest.Request, dryRun bool) *rest.Request {
	if dryRun {
		return req.Param("dryRun", "All")
	}
	return req
}

// decode reads JSON keeping numbers as json.Number, as binding contexts are read.
func decode(body []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	return d.Decode(v)
}
