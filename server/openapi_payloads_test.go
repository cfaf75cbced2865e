package server_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// corePayloads are the Go types of the core types' data, as the session
// package decodes them. TestOpenAPIEventSchemaTypesEveryRecord holds the
// list of core types to the package's, so a new one is missed here only
// until that test fails.
var corePayloads = map[string]any{
	session.TypeTurnStart:        session.TurnStart{},
	session.TypeTurnEnd:          session.TurnEnd{},
	session.TypeStepStart:        session.StepStart{},
	session.TypeStepEnd:          session.StepEnd{},
	session.TypeStepUsage:        session.Usage{},
	session.TypeUserMessage:      session.UserMessage{},
	session.TypeRequestHeader:    session.RequestHeader{},
	session.TypeRequestDigest:    session.Digest{},
	session.TypeRequestOneshot:   session.Oneshot{},
	session.TypeRequestUsage:     session.Usage{},
	session.TypeAssistantChunk:   session.AssistantChunk{},
	session.TypeAssistantMessage: session.AssistantMessage{},
	session.TypeToolCall:         session.ToolCall{},
	session.TypeToolStart:        session.ToolStart{},
	session.TypeToolResult:       session.ToolResult{},
	session.TypeToolRetry:        session.ToolRetry{},
	session.TypeToolReconcile:    session.ToolReconcile{},
	session.TypeCompactionStart:  session.Compaction{},
	session.TypeCompactionEnd:    session.Compaction{},
	session.TypeApprovalRequest:  session.ApprovalRequest{},
	session.TypeApprovalDecision: session.ApprovalDecision{},
	session.TypeApprovalPolicy:   session.ApprovalPolicy{},
	session.TypeEndSeed:          session.EndSeed{},
}

// contractPendingKeys are keys the document may give a record's data
// before the Go type has them (a documented addition on its way); none
// now. The test fails on a key listed here that the type has already.
var contractPendingKeys []string

// Each core type's data schema has exactly the keys of its Go type, at
// every depth, and requires exactly those the encoder always writes (no
// omitempty): the document cannot drift from the log format.
func TestOpenAPIEventDataIsTheGoPayload(t *testing.T) {
	o := servedOpenAPI(t, newAPI(t, composition(false), server.Options{}))
	assert.Len(t, corePayloads, len(session.CoreTypes()))
	var pendingSeen []string
	for typ, payload := range corePayloads {
		mapping := o.at("/components/schemas/CoreEvent/discriminator/mapping").(map[string]any)
		ref, ok := mapping[typ].(string)
		require.True(t, ok, "no schema for %s", typ)
		data := o.at(strings.TrimPrefix(ref, "#") + "/properties/data").(map[string]any)
		pendingSeen = append(pendingSeen, samePayload(t, o, data, reflect.TypeOf(payload), typ+".data")...)
	}
	slices.Sort(pendingSeen)
	assert.Equal(t, contractPendingKeys, pendingSeen, "a key in contractPendingKeys is in the Go type now: remove it from the list")
}

// samePayload compares schema with Go type typ at path and returns the
// pending keys the schema has and typ lacks.
func samePayload(t *testing.T, o *openAPISchemas, schema map[string]any, typ reflect.Type, path string) []string {
	t.Helper()
	for ref, ok := schema["$ref"].(string); ok; ref, ok = schema["$ref"].(string) {
		schema = o.at(strings.TrimPrefix(ref, "#")).(map[string]any)
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == reflect.TypeFor[json.RawMessage]() {
		return nil // any JSON: a JSON Schema of its own
	}
	switch typ.Kind() {
	case reflect.Slice:
		assert.Equal(t, "array", schema["type"], path)
		items, _ := schema["items"].(map[string]any)
		require.NotNil(t, items, "%s: an array without items", path)
		return samePayload(t, o, items, typ.Elem(), path+"[]")
	case reflect.Struct:
	default:
		return nil
	}
	assert.Equal(t, "object", schema["type"], path)
	assert.Equal(t, false, schema["additionalProperties"], "%s: the decoder refuses unknown keys", path)
	props, _ := schema["properties"].(map[string]any)
	var required []string
	for _, r := range asSlice(schema["required"]) {
		required = append(required, r.(string))
	}
	var pending, goKeys, goRequired []string
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		goKeys = append(goKeys, name)
		if !strings.Contains(opts, "omitempty") {
			goRequired = append(goRequired, name)
		}
		if p, ok := props[name].(map[string]any); assert.True(t, ok, "%s.%s is not in the document", path, name) {
			pending = append(pending, samePayload(t, o, p, f.Type, path+"."+name)...)
		}
	}
	for name := range props {
		if !slices.Contains(goKeys, name) {
			if key := path + "." + name; slices.Contains(contractPendingKeys, key) {
				pending = append(pending, key)
			} else {
				t.Errorf("%s: the document has a key the Go type lacks", key)
			}
		}
	}
	slices.Sort(required)
	slices.Sort(goRequired)
	assert.Equal(t, goRequired, required, "%s: the keys always written", path)
	return pending
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
