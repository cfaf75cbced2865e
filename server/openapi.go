package server

import (
	_ "embed"
	"net/http"
)

// openAPI is the API's OpenAPI 3.1 description. openapi_test.go checks
// that it names exactly the routes the server serves.
//
//go:embed openapi.json
var openAPI []byte

func handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}
