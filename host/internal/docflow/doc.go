// Package docflow runs docs/writing-plugins.md in CI: its tests turn the page's shell commands
// into one script (the few that need a cluster or a public repository replaced, each with its
// reason) and run it with this checkout's binaries, an in-process cloud and a registry on
// loopback, so the page's commands are the ones that work. It has no non-test code.
package docflow
