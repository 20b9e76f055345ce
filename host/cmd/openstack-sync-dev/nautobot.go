package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/openstack-sync/openstack-sync/host/internal/fakenautobot"
)

func readSeed(file string) (fakenautobot.Seed, error) {
	var seed fakenautobot.Seed
	raw, err := os.ReadFile(file)
	if err != nil {
		return seed, err
	}
	if err := yaml.UnmarshalStrict(raw, &seed); err != nil {
		return seed, fmt.Errorf("%s: %w", file, err)
	}
	return seed, nil
}

// embeddedNautobot starts the in-process Nautobot of `run --embedded-nautobot` with a seed file's
// IPAM, points the specs at it and accepts the tokens of the Secrets they name.
func embeddedNautobot(seedFile string, specs []map[string]any, secrets map[string]map[string][]byte) (string, string, func(), error) {
	seed, err := readSeed(seedFile)
	if err != nil {
		return "", "", nil, err
	}
	nb := fakenautobot.New()
	nb.Load(seed)
	for _, ref := range nb.PointSpecs(specs) {
		if v, ok := secrets[ref.Secret][ref.Key]; ok {
			nb.AddToken(fakenautobot.Token{Key: strings.TrimSpace(string(v))})
		}
	}
	return nb.URL(), seed.Site, nb.Close, nil
}

// serveNautobot is `openstack-sync-dev nautobot`: the in-process Nautobot as a process of its own,
// for a test whose hooks run in other processes (the e2e tier's shell-operator). The token is
// read from a file so that it is on no command line.
func serveNautobot(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("openstack-sync-dev nautobot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seedFile := fs.String("seed", "", "the IPAM to serve (site, locations, prefixes; examples/nautobot/seed.yaml)")
	tokenFile := fs.String("token-file", "", "a file holding the API token it accepts")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *seedFile == "" || *tokenFile == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "openstack-sync-dev nautobot: --seed and --token-file are required, and nothing else")
		return 2
	}
	seed, err := readSeed(*seedFile)
	if err != nil {
		fmt.Fprintf(stderr, "openstack-sync-dev nautobot: --seed: %v\n", err)
		return 1
	}
	raw, err := os.ReadFile(*tokenFile)
	token := strings.TrimSpace(string(raw))
	if err == nil && token == "" {
		err = errors.New("the file is empty")
	}
	if err != nil {
		fmt.Fprintf(stderr, "openstack-sync-dev nautobot: --token-file: %v\n", err)
		return 1
	}
	nb := fakenautobot.New()
	defer nb.Close()
	nb.Load(seed)
	nb.AddToken(fakenautobot.Token{Key: token})
	fmt.Fprintln(stdout, nb.URL())
	<-ctx.Done()
	return 0
}
