// Package leasetest is an in-memory lease.Store with the API server's optimistic concurrency: a
// create of an existing lease and an update at a stale resourceVersion are lease.ErrConflict.
package leasetest

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/lease"
)

// Store holds leases by namespace/name. Fail, when set, answers every call with its error.
type Store struct {
	mu      sync.Mutex
	leases  map[string]lease.Record
	version int
	Fail    error
	writes  int
}

// Writes counts the successful creates and updates.
func (s *Store) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func key(namespace, name string) string { return namespace + "/" + name }

// Get implements lease.Store.
func (s *Store) Get(_ context.Context, namespace, name string) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail != nil {
		return lease.Record{}, s.Fail
	}
	r, ok := s.leases[key(namespace, name)]
	if !ok {
		return lease.Record{}, lease.ErrNotFound
	}
	return r, nil
}

// Create implements lease.Store.
func (s *Store) Create(_ context.Context, namespace, name string, r lease.Record) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail != nil {
		return lease.Record{}, s.Fail
	}
	if _, ok := s.leases[key(namespace, name)]; ok {
		return lease.Record{}, fmt.Errorf("%w: %s exists", lease.ErrConflict, key(namespace, name))
	}
	return s.put(namespace, name, r), nil
}

// Update implements lease.Store.
func (s *Store) Update(_ context.Context, namespace, name string, r lease.Record) (lease.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail != nil {
		return lease.Record{}, s.Fail
	}
	cur, ok := s.leases[key(namespace, name)]
	if !ok {
		return lease.Record{}, lease.ErrNotFound
	}
	if cur.ResourceVersion != r.ResourceVersion {
		return lease.Record{}, fmt.Errorf("%w: %s is at version %s, not %s", lease.ErrConflict, key(namespace, name), cur.ResourceVersion, r.ResourceVersion)
	}
	return s.put(namespace, name, r), nil
}

// Set stores r as if another replica wrote it (not counted in Writes).
func (s *Store) Set(namespace, name string, r lease.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(namespace, name, r)
	s.writes--
}

func (s *Store) put(namespace, name string, r lease.Record) lease.Record {
	if s.leases == nil {
		s.leases = map[string]lease.Record{}
	}
	s.version++
	s.writes++
	r.ResourceVersion = strconv.Itoa(s.version)
	s.leases[key(namespace, name)] = r
	return r
}
