package runcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// stateVersion changes when the state file's shape does.
const stateVersion = 1

// state is what `run --state FILE` keeps between runs, so create, edit and delete are three
// commands: each CR's status and finalizers as the last pass left them and, for the embedded
// cloud, everything the cloud holds (ids included). A real cloud keeps its own.
type state struct {
	Version int `json:"version"`
	// Cloud is the embedded cloud's content; absent for a real cloud.
	Cloud json.RawMessage `json:"cloud,omitempty"`
	// CRs are by "Kind namespace/name".
	CRs map[string]savedCR `json:"crs"`
}

type savedCR struct {
	Status     map[string]any `json:"status,omitempty"`
	Finalizers []any          `json:"finalizers,omitempty"`
}

// readState reads a state file; a missing one is a fresh state.
func readState(path string) (*state, error) {
	s := &state{Version: stateVersion, CRs: map[string]savedCR{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--state: %w", err)
	}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("--state %s: not a state file this command wrote: %w", path, err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("--state %s: version %d; this openstack-sync reads version %d (start a new file)", path, s.Version, stateVersion)
	}
	if s.CRs == nil {
		s.CRs = map[string]savedCR{}
	}
	return s, nil
}

// write saves the state whole or not at all: a run killed while writing keeps the last one.
func (s *state) write(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("--state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--state: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

func crKey(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", obj["kind"], meta["namespace"], meta["name"])
}

// apply gives each CR that carries no status of its own in its file the status (and, for a live
// CR, the finalizers) the last run left it; a status in the file wins.
func (s *state) apply(live, deleted []map[string]any) {
	for i, group := range [][]map[string]any{live, deleted} {
		for _, obj := range group {
			saved, ok := s.CRs[crKey(obj)]
			if !ok {
				continue
			}
			if _, has := obj["status"]; !has && saved.Status != nil {
				obj["status"] = saved.Status
			}
			meta, _ := obj["metadata"].(map[string]any)
			if _, has := meta["finalizers"]; !has && len(saved.Finalizers) > 0 && i == 0 {
				meta["finalizers"] = saved.Finalizers
			}
		}
	}
}

// record keeps what the pass left: every live CR, and the deleted ones that still hold the
// framework's finalizer (their delete is not done); a deleted CR whose finalizer went is gone.
func (s *state) record(crs []map[string]any) {
	for _, obj := range crs {
		meta, _ := obj["metadata"].(map[string]any)
		fs, _ := meta["finalizers"].([]any)
		if meta["deletionTimestamp"] != nil && !slices.Contains(fs, any(resource.Finalizer)) {
			delete(s.CRs, crKey(obj))
			continue
		}
		status, _ := obj["status"].(map[string]any)
		s.CRs[crKey(obj)] = savedCR{Status: status, Finalizers: fs}
	}
}
