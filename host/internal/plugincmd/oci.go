package plugincmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/openstack-sync/openstack-sync/host/internal/ociplugin"
	"github.com/openstack-sync/openstack-sync/host/internal/wasm"
)

func push(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("push", stderr)
	insecure := fs.Bool("insecure", false, "speak plain HTTP to the registry")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "openstack-sync plugin push: want FILE REF")
		return exitUsage
	}
	file, ref := fs.Arg(0), fs.Arg(1)
	// Only a module the host would load is worth publishing.
	info, err := wasm.Inspect(ctx, file, loadOptions(stderr))
	if err != nil {
		fmt.Fprintf(stderr, "openstack-sync plugin push: %s is refused by the host:\n", file)
		for _, p := range problems(err) {
			fmt.Fprintf(stderr, "  - %s\n", p)
		}
		return exitFail
	}
	module, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync plugin push:", err)
		return exitFail
	}
	if sum := sha256.Sum256(module); hex.EncodeToString(sum[:]) != info.SHA256 {
		fmt.Fprintf(stderr, "openstack-sync plugin push: %s changed while it was checked; push again\n", file)
		return exitFail
	}
	o := ociplugin.Options{Insecure: *insecure}
	pushed, err := ociplugin.Push(ctx, file, module, ociplugin.Metadata{Name: info.Name, Version: info.Version,
		Description: info.Description, Source: info.Source, EnvPrefix: info.EnvPrefix, ABIVersion: info.ABIVersion}, ref, o)
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync plugin push:", err)
		return exitFail
	}
	fmt.Fprintf(stderr, "pushed %s (%s, module %s)\n", file, info.Name, pushed.ModuleDigest)
	fmt.Fprintln(stdout, pushed.Ref)
	return exitOK
}

func pull(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("pull", stderr)
	insecure := fs.Bool("insecure", false, "speak plain HTTP to the registry")
	out := fs.String("o", "", "the file to write (default: <last repository segment>.wasm here)")
	allowTag := fs.Bool("allow-tag", false, "accept a reference without @sha256:<digest> (a tag can move)")
	moduleDigest := fs.String("sha256", "", "also require this module sha256 (sha256:<hex> or <hex>)")
	timeout := fs.Duration("timeout", ociplugin.DefaultTimeout, "give up when the registry has not answered the whole pull by then")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *timeout <= 0 {
		fmt.Fprintln(stderr, "openstack-sync plugin pull: --timeout must be positive")
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "openstack-sync plugin pull: want exactly one REF")
		return exitUsage
	}
	o := ociplugin.Options{Insecure: *insecure, Timeout: *timeout}
	target := *out
	if target == "" {
		var err error
		if target, err = ociplugin.DefaultFile(fs.Arg(0), o); err != nil {
			fmt.Fprintln(stderr, "openstack-sync plugin pull:", err)
			return exitUsage
		}
	}
	// A module that is not the required one is refused before it is written: whatever target
	// already holds stays.
	pulled, err := ociplugin.Pull(ctx, fs.Arg(0), target, !*allowTag, *moduleDigest, o)
	if err != nil {
		fmt.Fprintln(stderr, "openstack-sync plugin pull:", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "pulled %s to %s (module %s)\n", pulled.Ref, target, pulled.ModuleDigest)
	return exitOK
}
