package main

import (
	"encoding/binary"
	"hash/crc64"
	"hash/fnv"
)

// digestSize is the size of a digest: two 64-bit hashes.
const digestSize = 16

var crcTable = crc64.MakeTable(crc64.ECMA)

// digest stands for the JSON of a listed runbook the catalog does not keep, as the memo's
// evidence: FNV-64a and CRC-64 (ECMA) of it, 128 bits from two unrelated hash families. Not
// FNV-128a, as the router flavors' view digest: at four times the cost per byte, the 15,000
// runbooks past the default budget of a 20,000-runbook group (~30 MB of JSON) took a tenth of a
// second more in the guest. Nor sha256, which brings Go's FIPS module into the plugin (about
// 150 KB of compiled code in every hook process). An accidental collision is negligible; a crafted
// one needs write access to runbooks in Ironic and could at worst replay a write-free verdict until
// the memo's maximum age (docs/operating.md, "The memo's window").
func digest(b []byte) [digestSize]byte {
	var out [digestSize]byte
	h := fnv.New64a()
	h.Write(b)
	binary.BigEndian.PutUint64(out[:8], h.Sum64())
	binary.BigEndian.PutUint64(out[8:], crc64.Checksum(b, crcTable))
	return out
}
