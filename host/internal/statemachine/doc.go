// Package statemachine is a property test of the framework (issue 11 item 8): random sequences
// of Kubernetes changes (create, spec edit, credential move, delete, recreate), each followed by
// one hook pass over binding contexts shaped the way shell-operator delivers them and then
// mangled (collapsed, duplicated, reordered, without a snapshot, with unreadable objects), with
// faults injected in every double (Kubernetes 409/404/500 and transport errors on patches,
// OpenStack 5xx, timeouts and 409 on create and delete, plugin errors, traps and terminal
// failures, unreachable clouds), and passes killed at a plugin call and run again with what they
// finished taken as done, as the hook's supervisor does. After every pass it checks the invariants of
// docs/reliability.md ("State-machine property test").
//
// The doubles are the framework's own small interfaces: runner.Kube over the fakekube store
// (in process, no HTTP), plugin.Connector, plugin.Session and plugin.Plugin over an in-memory
// cloud of projects shared by credential groups. Everything is driven by one seed, printed on
// failure; see the test for the knobs that run more sequences or replay one.
package statemachine
