package main

import (
	"fmt"
	"net/netip"
	"slices"
)

// networks parses CIDRs as the original's ipaddress.ip_network(strict=True) does: host bits set is
// an error, as is anything that is not a CIDR.
func networks(cidrs []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(cidrs))
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil || p.Masked() != p {
			return nil, fmt.Errorf("Invalid subnet pool prefix: '%s' does not appear to be an IPv4 or IPv6 network", c)
		}
		out = append(out, p)
	}
	return out, nil
}

func family(p netip.Prefix) int {
	if p.Addr().Is4() {
		return 4
	}
	return 6
}

// compact is what Neutron stores for a list of prefixes: covered ones dropped, adjacent halves
// joined into their parent, sorted (netaddr.cidr_merge). Neutron answers a create of 10.0.0.0/24
// and 10.0.1.0/24 with 10.0.0.0/23, so a pool is compared with its CR in this form.
func compact(in []netip.Prefix) []netip.Prefix {
	ps := slices.Clone(in)
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var stack []netip.Prefix
	for _, p := range ps {
		if n := len(stack); n > 0 && stack[n-1].Bits() <= p.Bits() && stack[n-1].Contains(p.Addr()) {
			continue // covered by what is already there
		}
		stack = append(stack, p)
		// Join the top two while they are the halves of one parent.
		for len(stack) >= 2 {
			a, b := stack[len(stack)-2], stack[len(stack)-1]
			if a.Bits() != b.Bits() || a.Bits() == 0 {
				break
			}
			parent, _ := a.Addr().Prefix(a.Bits() - 1)
			if parent.Addr() != a.Addr() || !parent.Contains(b.Addr()) {
				break
			}
			stack = append(stack[:len(stack)-2], parent)
			// A parent may now cover what came before it.
			for len(stack) >= 2 && stack[len(stack)-1].Contains(stack[len(stack)-2].Addr()) &&
				stack[len(stack)-1].Bits() <= stack[len(stack)-2].Bits() {
				stack = append(stack[:len(stack)-2], stack[len(stack)-1])
			}
		}
	}
	return stack
}

func strs(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// uncovered lists the prefixes of have that no prefix of want contains: what an update to want
// would remove, which Neutron refuses (a pool only grows).
func uncovered(have, want []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, h := range have {
		if !slices.ContainsFunc(want, func(w netip.Prefix) bool { return w.Bits() <= h.Bits() && w.Contains(h.Addr()) }) {
			out = append(out, h)
		}
	}
	return out
}
