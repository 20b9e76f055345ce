// Package contract holds the contract suite: the same request/answer scenarios (testdata/*.yaml)
// run through the host's OpenStack session against the in-process fakecloud and, when
// OPENSTACK_SYNC_E2E_CLOUDS names the clouds.yaml of hack/os-harness.sh, against real Keystone,
// Neutron and Ironic. Every rule the fake enforces is pinned here, so the fake cannot drift from
// the servers it imitates.
package contract
