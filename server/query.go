package server

import (
	"net/http"
)

// queryBool reads the boolean query parameter name of r: true or false,
// as openapi.json documents it (def when absent); any other value is a
// 400, so that a typo never silently means the default.
func queryBool(r *http.Request, name string, def bool) (bool, error) {
	switch v := r.URL.Query().Get(name); v {
	case "":
		return def, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, apiError(http.StatusBadRequest, CodeBadRequest, "%s: %q is not true or false", name, v)
	}
}
