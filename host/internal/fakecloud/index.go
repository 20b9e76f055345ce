package fakecloud

// idIndex finds the entries of one of the cloud's lists by id. The router flavors plugin reads a
// flavor and a profile by id for each CR it creates, and scanning the lists made a pass creating
// 20,000 flavors quadratic in the fake's CPU. The index is built on first use, extended by
// appends (added) and dropped by anything else that changes the list (reset); the first entry
// with an id wins, as a scan's would.
type idIndex[T any] struct {
	byID map[string]*T
	id   func(*T) string
}

func (x *idIndex[T]) find(list []*T, id string) *T {
	if x.byID == nil {
		x.byID = make(map[string]*T, len(list))
		for _, e := range list {
			x.add(e)
		}
	}
	return x.byID[id]
}

// added notes an entry appended to the list.
func (x *idIndex[T]) added(e *T) {
	if x.byID != nil {
		x.add(e)
	}
}

func (x *idIndex[T]) add(e *T) {
	if _, ok := x.byID[x.id(e)]; !ok {
		x.byID[x.id(e)] = e
	}
}

// reset drops the index after a delete or a restore.
func (x *idIndex[T]) reset() { x.byID = nil }
