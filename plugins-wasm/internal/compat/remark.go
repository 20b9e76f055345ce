package compat

import (
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// Move is the profiles one remark moves a CR's resources between.
type Move struct{ From, To Profile }

// MoveOf reads and checks the profiles of a remark request.
func MoveOf(req *pdk.RemarkRequest) (Move, error) {
	from, err := Parse(req.From)
	if err != nil {
		return Move{}, pdk.Permanent(fmt.Errorf("remark from: %w", err))
	}
	to, err := Parse(req.To)
	if err != nil {
		return Move{}, pdk.Permanent(fmt.Errorf("remark to: %w", err))
	}
	if from == to {
		return Move{}, pdk.Permanent(fmt.Errorf("remark from and to are both %s", from))
	}
	return Move{From: from, To: to}, nil
}

// ReadRemark is MoveOf plus the CR's spec decoded into spec; a spec that does not decode is
// permanent, as in reconcile.
func ReadRemark(req *pdk.RemarkRequest, spec any) (Move, error) {
	move, err := MoveOf(req)
	if err != nil {
		return Move{}, err
	}
	if err := req.DecodeSpec(spec); err != nil {
		return Move{}, pdk.Permanent(err)
	}
	return move, nil
}
