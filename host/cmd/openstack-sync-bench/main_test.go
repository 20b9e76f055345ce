package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRowReportsMedianAndRange(t *testing.T) {
	var out bytes.Buffer
	printRow(&out, row{plugin: "ironic-runbooks", shape: "site", workload: "converged", host: "wasm", size: 1000, groups: 10,
		samples: []sample{
			{Wall: 30 * time.Millisecond, CPU: 20 * time.Millisecond, RSS: 50 << 20},
			{Wall: 10 * time.Millisecond, CPU: 8 * time.Millisecond, RSS: 40 << 20},
			{Wall: 20 * time.Millisecond, CPU: 9 * time.Millisecond, RSS: 45 << 20, Context: 4_512_000,
				OpenStack: map[string]int{"GET": 1006, "keystone": 1}, Kube: map[string]int{"GET": 10, "PATCH": 2}},
		}})
	assert.Equal(t, "| ironic-runbooks | site | converged | 1,000 × 10 | wasm | 20 (10–30) | 9 (8–20) | 45 (40–50) | "+
		"4.5 MB | 4,512 B | GET 1,006 (+1 Keystone) | GET 10, PATCH 2 |\n", out.String())

	out.Reset()
	printRow(&out, row{plugin: "p", workload: "--config", host: "wasm", samples: []sample{
		{Wall: 2 * time.Millisecond}, {Wall: 4 * time.Millisecond}}})
	assert.Contains(t, out.String(), "| p | — | --config | — | wasm | 3 (2–4) |", "an even count takes the mean of the middle two")

	out.Reset()
	printRow(&out, row{plugin: "neutron-subnet-pools", workload: "converged", host: "wasm", size: 100, groups: 1, nautobot: true,
		samples: []sample{{OpenStack: map[string]int{"GET": 3}, Nautobot: 100}}})
	assert.Contains(t, out.String(), "| GET 3 (+100 Nautobot GET, 1.00 per CR) |", "a source outside OpenStack is counted apart")
}

func TestRequestSummary(t *testing.T) {
	assert.Equal(t, "0", requestSummary(nil))
	assert.Equal(t, "GET 5, POST 1,200, DELETE 3", requestSummary(map[string]int{"DELETE": 3, "GET": 5, "POST": 1200, "keystone": 2}))
	assert.Equal(t, "999", thousands(999))
	assert.Equal(t, "1,000,000", thousands(1000000))
}

func TestFlagsAreChecked(t *testing.T) {
	var out, errs bytes.Buffer
	assert.Equal(t, 2, run(t.Context(), []string{"--sizes", "1,x"}, &out, &errs))
	assert.Contains(t, errs.String(), `--sizes: "x" is not a positive count`)
	errs.Reset()
	assert.Equal(t, 2, run(t.Context(), []string{"--objects", "plain,huge"}, &out, &errs))
	assert.Contains(t, errs.String(), `--objects: "huge" is neither plain nor site`)
}
