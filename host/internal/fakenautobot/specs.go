package fakenautobot

// TokenRef is the Secret key a CR names for its Nautobot token (spec.nautobot.tokenSecretRef).
type TokenRef struct{ Secret, Key string }

// PointSpecs aims every CR spec that names a Nautobot (spec.nautobot, the subnet pools plugin's
// field: docs/plugins/neutron-subnet-pools.md) at the server, as a test or demo points a cloud
// Secret's clouds.yaml at the in-process cloud, and returns the token Secret keys they name, for
// the caller to serve tokens the server accepts. Specs naming none are left as they are.
func (s *Server) PointSpecs(specs []map[string]any) []TokenRef {
	var refs []TokenRef
	for _, spec := range specs {
		nb, _ := spec["nautobot"].(map[string]any)
		if nb == nil {
			continue
		}
		nb["url"] = s.URL()
		ref, _ := nb["tokenSecretRef"].(map[string]any)
		name, _ := ref["secretName"].(string)
		key, _ := ref["key"].(string)
		if name != "" && key != "" {
			refs = append(refs, TokenRef{Secret: name, Key: key})
		}
	}
	return refs
}
