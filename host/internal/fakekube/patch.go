package fakekube

import (
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// applyPatch returns old with patch applied, with the errors the real API server gives: a patch
// that does not decode is 400; a JSON patch that fails to apply (a failed `test`, a missing path)
// is 422 with an empty details object; an unsupported patch type is 415.
func applyPatch(contentType string, old Object, patch []byte) (Object, error) {
	current, err := json.Marshal(old)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	var patched []byte
	switch contentType {
	case JSONPatchType:
		ops, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		patched, err = ops.Apply(current)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	case MergePatchType:
		patched, err = jsonpatch.MergePatch(current, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", schema.GroupResource{}, "",
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s", JSONPatchType, MergePatchType), 0, false)
	}
	obj, err := decodeObject(patched)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("patched object is not a JSON object: %v", err))
	}
	return obj, nil
}
