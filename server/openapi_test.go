package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The OpenAPI document names exactly the routes the server serves, and
// every error code it may answer.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
		Comp    struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(openAPI, &doc))
	assert.Equal(t, "3.1.0", doc.OpenAPI)
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	for _, r := range (&Server{}).routes() {
		served = append(served, r.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	assert.Equal(t, served, documented)

	codes := doc.Comp.Schemas["Error"].Properties["code"].Enum
	for _, c := range []string{CodeBadRequest, CodeMalformedJSON, CodeTooLarge, CodeUnauthorized, CodeNotFound,
		CodeMethodNotAllowed, CodeSuspended, CodeBusy, CodeNotPending, CodeAlreadyDecided, CodeInvalidDecision,
		CodeConflict, CodeNoQueue, CodeInternal, CodeWrongHost, CodeUnsupportedMediaType} {
		assert.Contains(t, codes, c)
	}
}
