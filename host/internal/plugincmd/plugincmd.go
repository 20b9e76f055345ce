// Package plugincmd is `openstack-sync plugin ...`: the commands a plugin author and an operator
// run on a module file (inspect, verify) and on an OCI registry (push, pull), without a cluster.
package plugincmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
	"github.com/openstack-sync/openstack-sync/pdk/abi/grant"
)

// Exit codes, as the hook's: 0 done, 1 refused or failed, 2 bad usage.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usage = `usage: openstack-sync plugin <command> [arguments]

commands:
  new [--dir DIR] [--module M] [--group G] [--kind K] [--path v2.0/C] [--key K] [--pdk DIR] [--host-module DIR] NAME
          write a new plugin module (plugin, tests, conformance suite, CRD, example CR, Makefile)
  inspect [--json] FILE
          what the module declares (name, version, grants, cleanup, ABI) and is made of
  verify [--sha256 DIGEST] [--grants FILE] FILE...
          run every load-time check; exit 1 naming each problem
  push [--insecure] FILE REF
          store a module that passes verify in an OCI registry; prints REF@sha256:<manifest digest>
  pull [--insecure] [-o FILE] [--sha256 MODULE_DIGEST] [--allow-tag] REF@sha256:<digest>
          fetch a pushed module, pinned by its manifest digest unless --allow-tag
`

// Version is the binary's version (main sets it): plugin new requires the openstack-sync modules
// at it when it is a semantic version, and replaces them with a checkout when it is not.
var Version string

// Main runs one plugin command.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "new":
		return newPlugin(args[1:], stdout, stderr)
	case "inspect":
		return inspect(ctx, args[1:], stdout, stderr)
	case "verify":
		return verify(ctx, args[1:], stdout, stderr)
	case "push":
		return push(ctx, args[1:], stdout, stderr)
	case "pull":
		return pull(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "openstack-sync plugin: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

// newFlags returns a flag set that reports to stderr and names the command.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("openstack-sync plugin "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// loadOptions load a module as the hook would, but independent of the plugin variables of this
// shell: no prefix, pin, grants or config leak in from variables the author happens to have set.
// Only where the compilation cache lives and the sandbox settings (OPENSTACK_SYNC_WASM_*) are read.
func loadOptions(stderr io.Writer) wasm.Options {
	return wasm.Options{
		LookupEnv: func(k string) (string, bool) {
			if k == wasm.CacheDirEnv || k == "XDG_CACHE_HOME" || k == "HOME" || strings.HasPrefix(k, "OPENSTACK_SYNC_WASM_") {
				return os.LookupEnv(k)
			}
			return "", false
		},
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

func inspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("inspect", stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "openstack-sync plugin inspect: want exactly one FILE")
		return exitUsage
	}
	// The metadata record of an earlier load (the hook's, verify's, a first inspect's) answers
	// without running guest code; the module is still compiled and checked.
	info, recorded, err := wasm.InspectRecorded(ctx, fs.Arg(0), loadOptions(stderr))
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync plugin inspect:", err)
		return exitFail
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(info); err != nil {
			fmt.Fprintln(stderr, "openstack-sync plugin inspect:", err)
			return exitFail
		}
		return exitOK
	}
	printInfo(stdout, info, recorded)
	return exitOK
}

func printInfo(w io.Writer, info wasm.Info, recorded bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	or := func(s, dflt string) string {
		if s == "" {
			return dflt
		}
		return s
	}
	rows := [][2]string{
		{"file", info.File},
		{"size", fmt.Sprintf("%d bytes", info.Size)},
		{"sha256", "sha256:" + info.SHA256},
		{"name", info.Name},
		{"noun", or(info.Noun, "(none)")},
		{"version", or(info.Version, "(not declared)")},
		{"description", or(info.Description, "(not declared)")},
		{"source", or(info.Source, "(not declared)")},
		{"env prefix", info.EnvPrefix},
		{"binding", or(info.BindingName, "(default)")},
		{"abi version", fmt.Sprint(info.ABIVersion)},
		{"probe", fmt.Sprint(info.Probe)},
		{"lifecycle", lifecycleSummary(info)},
		{"delete", deleteSummary(info)},
		{"prune", pruneSummary(info)},
		{"cleanup", fmt.Sprintf("PRUNE=true: %s; PRUNE=false: %s", info.Cleanup.WhenPrune, info.Cleanup.WhenNoPrune)},
		{"metadata", map[bool]string{true: "from the record of an earlier load (no guest code run)",
			false: "read by running the module's metadata entry point in the sandbox"}[recorded]},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	fmt.Fprintf(tw, "grants:\t%s\n", grantsSummary(info.Grants))
	for _, g := range info.Grants {
		fmt.Fprintf(tw, "\t%s %s %s\n", g.Service, strings.Join(g.Methods, ","), strings.Join(g.Paths, " "))
	}
	for _, s := range info.Sources {
		fmt.Fprintf(tw, "source:\t%s %s %s\n", s.Name, strings.Join(s.Methods, ","), strings.Join(s.Paths, " "))
	}
	fmt.Fprintf(tw, "imports:\t%d\n", len(info.Imports))
	for _, f := range info.Imports {
		fmt.Fprintf(tw, "\t%s.%s %s\n", f.Module, f.Name, f.Type)
	}
	fmt.Fprintf(tw, "exports:\t%d\n", len(info.Exports))
	for _, f := range info.Exports {
		fmt.Fprintf(tw, "\t%s %s\n", f.Name, f.Type)
	}
	tw.Flush()
}

func lifecycleSummary(info wasm.Info) string {
	if info.Lifecycle {
		return "true (status.id, status.resource, the Available and Progressing conditions)"
	}
	return "false"
}

// deleteSummary says how a CR being deleted is cleaned up: by the plugin's own delete of each
// CR, or only by the set prune.
func deleteSummary(info wasm.Info) string {
	if info.HasDelete {
		return "per CR (each CR being deleted goes to the plugin's delete; its finalizer waits for that delete)"
	}
	return "none (a deleted CR's resource goes only through the prune, if any)"
}

// pruneSummary says whether the plugin prunes by set and what a prune spares.
func pruneSummary(info wasm.Info) string {
	if !info.HasPrune {
		return "false"
	}
	if info.PruneScope == "group" {
		return "true, per credential group (it spares only the specs of the group's own CRs)"
	}
	return "true, over every credential group (it spares every live CR's spec)"
}

func grantsSummary(gs []grant.Grant) string {
	if len(gs) == 0 {
		return "none (the plugin makes no OpenStack call)"
	}
	return fmt.Sprint(len(gs))
}

func verify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("verify", stderr)
	digest := fs.String("sha256", "", "refuse a module whose sha256 is not this (sha256:<hex> or <hex>)")
	grantsFile := fs.String("grants", "", "a JSON file of operator grants (as <PREFIX>_GRANTS) to check and apply")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "openstack-sync plugin verify: want at least one FILE")
		return exitUsage
	}
	o := loadOptions(stderr)
	o.Digest = *digest
	if *grantsFile != "" {
		gs, err := readGrants(*grantsFile)
		if err != nil {
			fmt.Fprintln(stderr, "openstack-sync plugin verify:", err)
			return exitUsage
		}
		o.Grants = gs
	}
	code := exitOK
	for _, path := range fs.Args() {
		info, err := wasm.Inspect(ctx, path, o)
		if err != nil {
			code = exitFail
			fmt.Fprintf(stdout, "%s: refused\n", path)
			for _, p := range problems(err) {
				fmt.Fprintf(stdout, "  - %s\n", p)
			}
			continue
		}
		version := info.Version
		if version == "" {
			version = "no version"
		}
		fmt.Fprintf(stdout, "%s: ok (%s, %s, sha256:%s)\n", path, info.Name, version, info.SHA256)
	}
	return code
}

// problems lists each reason a load was refused.
func problems(err error) []string {
	var le *wasm.LoadError
	if !errors.As(err, &le) {
		return []string{err.Error()}
	}
	if len(le.Problems) > 0 {
		return le.Problems
	}
	if le.Err != nil {
		return []string{le.Reason + ": " + le.Err.Error()}
	}
	return []string{le.Reason}
}
