package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// openAPISchemas compiles the schemas of the document a server serves,
// to check instances against what it promises.
type openAPISchemas struct {
	t   *testing.T
	doc map[string]any
	c   *jsonschema.Compiler
}

const docURL = "mem:///openapi.json"

func servedOpenAPI(t *testing.T, a *api) *openAPISchemas {
	t.Helper()
	code, body := a.do("GET", "/openapi.json", "")
	require.Equal(t, http.StatusOK, code)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	require.NoError(t, c.AddResource(docURL, doc))
	return &openAPISchemas{t: t, doc: doc.(map[string]any), c: c}
}

// schema compiles the schema at the JSON pointer ptr of the document.
func (o *openAPISchemas) schema(ptr string) *jsonschema.Schema {
	o.t.Helper()
	s, err := o.c.Compile(docURL + "#" + ptr)
	require.NoError(o.t, err, ptr)
	return s
}

// at returns the value at the JSON pointer ptr of the document.
func (o *openAPISchemas) at(ptr string) any {
	var v any = o.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := v.(map[string]any)
		require.True(o.t, ok, "%s: %s is not in an object", ptr, tok)
		v, ok = m[tok]
		require.True(o.t, ok, "%s: no %s", ptr, tok)
	}
	return v
}

// response returns the schema of operation method path's answer status,
// following a $ref to a shared response.
func (o *openAPISchemas) response(method, path string, status int) *jsonschema.Schema {
	o.t.Helper()
	esc := strings.NewReplacer("~", "~0", "/", "~1").Replace
	resps := o.at("/paths/" + esc(path) + "/" + strings.ToLower(method) + "/responses").(map[string]any)
	key := itoa(int64(status))
	if _, ok := resps[key]; !ok {
		key = "default"
	}
	ptr := "/paths/" + esc(path) + "/" + strings.ToLower(method) + "/responses/" + key
	if ref, ok := o.at(ptr).(map[string]any)["$ref"].(string); ok {
		ptr = strings.TrimPrefix(ref, "#")
	}
	return o.schema(ptr + "/content/application~1json/schema")
}

// check validates body against the documented answer of method path
// with status.
func (o *openAPISchemas) check(method, path string, status int, body []byte) {
	o.t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	require.NoError(o.t, err, "%s", body)
	assert.NoError(o.t, o.response(method, path, status).Validate(v), "%s %s → %d: %s", method, path, status, body)
}

// The document's SessionEvent schema types every record a log holds: each core
// type by its own schema (docs/log-format.md), plugin types as opaque.
// The core types it names are exactly the session package's.
func TestOpenAPIEventSchemaTypesEveryRecord(t *testing.T) {
	o := servedOpenAPI(t, newAPI(t, composition(false), server.Options{}))
	enum := o.at("/components/schemas/CoreEventType/enum").([]any)
	var documented []string
	for _, v := range enum {
		documented = append(documented, v.(string))
	}
	slices.Sort(documented)
	assert.Equal(t, session.CoreTypes(), documented)
	mapping := o.at("/components/schemas/CoreEvent/discriminator/mapping").(map[string]any)
	assert.Len(t, mapping, len(documented))
	for typ, ref := range mapping {
		assert.Equal(t, typ, o.at(strings.TrimPrefix(ref.(string), "#")+"/properties/type/const"), "the discriminator maps %s to %s", typ, ref)
	}

	event := o.schema("/components/schemas/SessionEvent")
	files, err := filepath.Glob("../session/testdata/golden/*.jsonl")
	require.NoError(t, err)
	more, err := filepath.Glob("../session/live/testdata/interrupted/golden/*.jsonl")
	require.NoError(t, err)
	legacy, err := filepath.Glob("../session/testdata/legacy-utf8/*.jsonl")
	require.NoError(t, err)
	files = append(append(files, more...), legacy...)
	require.NotEmpty(t, files)
	seen := map[string]bool{}
	for _, name := range files {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			if n == 1 {
				continue // the header is no event
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
			require.NoError(t, err)
			assert.NoError(t, event.Validate(v), "%s:%d", name, n)
			seen[v.(map[string]any)["type"].(string)] = true
		}
	}
	assert.GreaterOrEqual(t, len(seen), 15, "the logs cover most core types: %v", seen)

	for _, tc := range []struct {
		name, line string
		ok         bool
	}{
		{"a plugin's record", `{"seq":37,"type":"memo/note","time":"2026-11-29T20:21:24.039Z","ignorable":true,"data":{"note":"x"}}`, true},
		{"a plugin's record with any data", `{"seq":3,"type":"memo/count","time":"2026-11-29T20:21:24.039Z","turn":1,"data":7}`, true},
		{"a core record with a key its type lacks", `{"seq":3,"type":"tool/start","time":"2026-11-29T20:21:24.039Z","turn":1,"step":1,"data":{"id":"c","name":"x"}}`, false},
		{"a core record without its scope's step", `{"seq":3,"type":"tool/start","time":"2026-11-29T20:21:24.039Z","turn":1,"data":{"id":"c"}}`, false},
		{"a turn-scoped record with a step", `{"seq":3,"type":"turn/end","time":"2026-11-29T20:21:24.039Z","turn":1,"step":1,"data":{"reason":"completed"}}`, false},
		{"a turn/end with an undocumented reason", `{"seq":3,"type":"turn/end","time":"2026-11-29T20:21:24.039Z","turn":1,"data":{"reason":"tired"}}`, false},
		{"ignorable on a core type", `{"seq":3,"type":"step/start","time":"2026-11-29T20:21:24.039Z","turn":1,"step":1,"ignorable":true,"data":{}}`, false},
		{"a time without its three fraction digits", `{"seq":0,"type":"turn/start","time":"2026-11-29T20:21:24Z","turn":1,"data":{}}`, false},
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.line))
		require.NoError(t, err)
		if err := event.Validate(v); tc.ok {
			assert.NoError(t, err, tc.name)
		} else {
			assert.Error(t, err, tc.name)
		}
	}
}

// What the server answers is what the document says it answers: a turn
// that asks for approval, decided, verified, and the refusals on the
// way, each body checked against its operation's schema, and every event
// of the stream against SessionEvent.
func TestOpenAPIDescribesWhatTheServerAnswers(t *testing.T) {
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{})
	a.startWorker()
	o := servedOpenAPI(t, a)
	call := func(method, route, path, body string, status int) []byte {
		t.Helper()
		got, data := a.do(method, path, body, "Content-Type", "application/json")
		require.Equal(t, status, got, "%s %s: %s", method, path, data)
		o.check(method, route, got, data)
		return data
	}
	call("GET", "/healthz", "/healthz", "", http.StatusOK)
	var sum server.Summary
	require.NoError(t, json.Unmarshal(call("POST", "/v1/sessions", "/v1/sessions", "", http.StatusCreated), &sum))
	id := sum.ID
	call("POST", "/v1/sessions/{id}/turns", "/v1/sessions/"+id+"/turns", `{"prompt":"6 times 7?"}`, http.StatusAccepted)
	call("POST", "/v1/sessions/{id}/turns", "/v1/sessions/"+id+"/turns", `{"prompt":""}`, http.StatusBadRequest)
	call("POST", "/v1/sessions/{id}/turns", "/v1/sessions/"+id+"/turns", `{"prompt":`, http.StatusBadRequest)
	call("POST", "/v1/sessions/{id}/turns", "/v1/sessions/"+id+"/turns?queue=maybe", `{"prompt":"x"}`, http.StatusBadRequest)
	recs := a.until(id, -1, suspends)
	req, err := session.DecodeData[session.ApprovalRequest](recs[len(recs)-1])
	require.NoError(t, err)
	sum = untilSuspended(t, func() (sum server.Summary) {
		require.NoError(t, json.Unmarshal(call("GET", "/v1/sessions/{id}", "/v1/sessions/"+id, "", http.StatusOK), &sum))
		return sum
	})
	call("POST", "/v1/sessions/{id}/turns", "/v1/sessions/"+id+"/turns", `{"prompt":"again"}`, http.StatusConflict)
	call("POST", "/v1/sessions/{id}/approvals/{call}", "/v1/sessions/"+id+"/approvals/nope", `{"allow":true}`, http.StatusNotFound)
	call("POST", "/v1/sessions/{id}/approvals/{call}", "/v1/sessions/"+id+"/approvals/"+req.ID, `{"allow":true}`, http.StatusAccepted)
	a.until(id, int64(len(recs)-1), turnEnd)
	call("GET", "/v1/sessions", "/v1/sessions", "", http.StatusOK)
	call("GET", "/v1/sessions/{id}/verify", "/v1/sessions/"+id+"/verify", "", http.StatusOK)
	call("GET", "/v1/sessions/{id}/steps", "/v1/sessions/"+id+"/steps", "", http.StatusOK)
	call("GET", "/v1/sessions/{id}/steps/{turn}/{step}/request", "/v1/sessions/"+id+"/steps/1/2/request", "", http.StatusOK)
	call("GET", "/v1/sessions/{id}/steps/{turn}/{step}/request", "/v1/sessions/"+id+"/steps/1/9/request", "", http.StatusNotFound)
	call("GET", "/v1/sessions/{id}/steps/{turn}/{step}/request", "/v1/sessions/"+id+"/steps/0/1/request", "", http.StatusBadRequest)
	call("GET", "/v1/sessions/{id}/trace", "/v1/sessions/"+id+"/trace", "", http.StatusOK)
	call("GET", "/v1/sessions/{id}/usage", "/v1/sessions/"+id+"/usage", "", http.StatusOK)
	call("GET", "/v1/sessions/{id}/replay", "/v1/sessions/"+id+"/replay", "", http.StatusOK)
	call("POST", "/v1/sessions/{id}/forks", "/v1/sessions/"+id+"/forks", `{"at":-1}`, http.StatusCreated)
	call("POST", "/v1/sessions/{id}/forks", "/v1/sessions/"+id+"/forks", `{"at":1}`, http.StatusBadRequest)
	call("POST", "/v1/sessions/{id}/cancel", "/v1/sessions/"+id+"/cancel", "", http.StatusOK)
	call("GET", "/v1/sessions/{id}", "/v1/sessions/nope", "", http.StatusNotFound)

	event := o.schema("/components/schemas/SessionEvent")
	code, body := a.do("GET", "/v1/sessions/"+id+"/events", "")
	require.Equal(t, http.StatusOK, code)
	lines := bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n"))
	require.NotEmpty(t, lines)
	for _, line := range lines {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(line))
		require.NoError(t, err)
		assert.NoError(t, event.Validate(v), "%s", line)
	}
}

// Every $ref of the document names a part of it.
func TestOpenAPIRefsResolve(t *testing.T) {
	o := servedOpenAPI(t, newAPI(t, composition(false), server.Options{}))
	var walk func(v any) int
	walk = func(v any) int {
		n := 0
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				require.True(t, strings.HasPrefix(ref, "#/"), "%s is not a local reference", ref)
				o.at(strings.TrimPrefix(ref, "#"))
				n++
			}
			for _, e := range v {
				n += walk(e)
			}
		case []any:
			for _, e := range v {
				n += walk(e)
			}
		}
		return n
	}
	assert.Greater(t, walk(o.doc), 100)
}
