package runcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
)

// store stands in for the Kubernetes API of one run: it holds the CRs read from files, applies
// the framework's finalizer and status patches to them as the API server would, and answers
// every credential Secret with the clouds.yaml file. Nothing is written anywhere.
type store struct {
	mu      sync.Mutex
	objects map[string]map[string]any // namespace/name -> object
	clouds  []byte                    // the clouds.yaml every Secret holds
	// secrets are the Secrets of sources' credentials, by name (Pass.Secrets).
	secrets map[string]map[string][]byte
}

func key(namespace, name string) string { return namespace + "/" + name }

func (s *store) object(t kubeapi.Target) (map[string]any, error) {
	o, ok := s.objects[key(t.Namespace, t.Name)]
	if !ok {
		return nil, &kubeapi.APIError{Code: 404, Body: fmt.Sprintf("%s %s/%s not found", t.Plural, t.Namespace, t.Name)}
	}
	return o, nil
}

func (s *store) patch(t kubeapi.Target, apply func([]byte) ([]byte, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.object(t)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	out, err := apply(raw)
	if err != nil {
		// The API server answers a failed test operation with 422.
		return &kubeapi.APIError{Code: 422, Body: err.Error()}
	}
	var next map[string]any
	if err := json.Unmarshal(out, &next); err != nil {
		return err
	}
	s.objects[key(t.Namespace, t.Name)] = next
	return nil
}

// JSONPatch applies a finalizer patch.
func (s *store) JSONPatch(_ context.Context, t kubeapi.Target, patch []byte) error {
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return &kubeapi.APIError{Code: 400, Body: err.Error()}
	}
	return s.patch(t, p.Apply)
}

// MergePatchStatus applies a status patch.
func (s *store) MergePatchStatus(_ context.Context, t kubeapi.Target, patch []byte) error {
	return s.patch(t, func(doc []byte) ([]byte, error) { return jsonpatch.MergePatch(doc, patch) })
}

// Finalizers reads a CR's finalizers.
func (s *store) Finalizers(_ context.Context, t kubeapi.Target) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.object(t)
	if err != nil {
		return nil, err
	}
	var out []string
	meta, _ := o["metadata"].(map[string]any)
	fs, _ := meta["finalizers"].([]any)
	for _, f := range fs {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// GetSecretData answers a Secret the pass names (a source's credential) with its data, and every
// other with the clouds.yaml: a run has one credential Secret.
func (s *store) GetSecretData(_ context.Context, _, name string) (map[string][]byte, error) {
	if data, ok := s.secrets[name]; ok {
		return data, nil
	}
	return map[string][]byte{"clouds.yaml": s.clouds}, nil
}
