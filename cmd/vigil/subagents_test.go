package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// delegationServer is an OpenAI-compatible server scripted for a planner
// ("You plan.") and a researcher ("You research."): the planner's first
// step calls research twice in one reply, its next answers with the tool
// results it saw; the researcher answers its task. The researchers'
// requests wait for each other (a barrier), so the test passes only if
// the two children run concurrently.
func delegationServer(t *testing.T) *httptest.Server {
	var (
		mu      sync.Mutex
		waiting = 0
		both    = make(chan struct{})
	)
	return chatServer(t, "delegationServer", func(msgs []chatMessage) []string {
		if len(msgs) < 2 {
			return nil
		}
		system := fmt.Sprint(msgs[0].Content)
		last := msgs[len(msgs)-1]
		switch {
		case strings.Contains(system, "You research."):
			mu.Lock()
			waiting++
			if waiting == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
			case <-time.After(20 * time.Second):
				t.Errorf("delegationServer: the second research request never came while the first waited: the children did not run concurrently")
			}
			return textChoices("Answer to " + fmt.Sprint(last.Content))
		case last.Role == "tool":
			var seen []string
			for _, m := range msgs {
				if m.Role == "tool" {
					seen = append(seen, fmt.Sprint(m.Content))
				}
			}
			return textChoices("Plan: " + strings.Join(seen, "; "))
		}
		return []string{
			`{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"research","arguments":"{\"task\":\"Q1\"}"}},{"index":1,"id":"call_b","type":"function","function":{"name":"research","arguments":"{\"task\":\"Q2\"}"}}]},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"tool_calls"}`,
		}
	})
}

// TestPlannerDelegatesToResearchersInParallel: the planner's two research
// calls run as two concurrent child sessions of the planner's session;
// the three logs pass verify --tree and replay (one by one and as a
// tree); sessions tree shows them;
// an event deleted from a child log, or a child's answer changed, is
// caught by verify --tree.
func TestPlannerDelegatesToResearchersInParallel(t *testing.T) {
	srv := delegationServer(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: "%s/v1", api_key: test-key, model: m }
  - id: researcher
    name: agent
    config: { system: "You research.", model: m, tools: [], as_tool: { name: research, description: "Research a question." } }
  - id: planner
    name: agent
    config: { system: "You plan.", model: m, tools: ["research"], max_steps: 3 }
  - name: invariants
    config: { mode: strict }
`, srv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))

	stdout, stderr, err := vigilIn(t, dir, "", "run", "plan the launch")
	require.NoError(t, err, stderr)
	assert.Equal(t, "Plan: Answer to Q1; Answer to Q2\n", stdout)
	parent := sessionIDIn(t, stderr)

	stdout, stderr, err = vigilIn(t, dir, "", "sessions", "tree", parent)
	require.NoError(t, err, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 3, stdout)
	assert.Equal(t, parent, lines[0])
	child := regexp.MustCompile(`^  ([0-9A-Z]{26})  \((call_[ab]) at seq \d+\)$`)
	var children []string
	for _, l := range lines[1:] {
		cm := child.FindStringSubmatch(l)
		require.NotNil(t, cm, l)
		children = append(children, cm[1])
	}

	// The child's header names its parent and call; the parent's result
	// names the child.
	data, err := os.ReadFile(filepath.Join(dir, "sessions", children[0]+".jsonl"))
	require.NoError(t, err)
	assert.Regexp(t, `^\{"type":"session","version":1,"id":"`+children[0]+`","created":"[^"]+","parent":\{"id":"`+parent+`","seq":\d+,"call":"call_[ab]"\}\}\n`, string(data))
	pdata, err := os.ReadFile(filepath.Join(dir, "sessions", parent+".jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(pdata), `"child":{"id":"`+children[0]+`","seq":`)

	_, stderr, err = vigilIn(t, dir, "", "verify", "--tree", parent)
	require.NoError(t, err, stderr)
	for _, id := range append([]string{parent}, children...) {
		assert.Contains(t, stderr, id+": ok (")
		rout, rerr, err := vigilIn(t, dir, "", "replay", id)
		assert.NoError(t, err, "replay %s: %s%s", id, rout, rerr)
	}

	stdout, stderr, err = vigilIn(t, dir, "", "replay", "--tree", parent)
	require.NoError(t, err, stderr)
	for _, id := range append([]string{parent}, children...) {
		assert.Contains(t, stdout, "session "+id+"\n")
	}
	assert.Equal(t, 3, strings.Count(stdout, "requests re-derived identically"), stdout)

	path := filepath.Join(dir, "sessions", children[1]+".jsonl")
	orig, err := os.ReadFile(path)
	require.NoError(t, err)
	restore := func() { require.NoError(t, os.WriteFile(path, orig, 0o644)) }

	// An event deleted from a child log.
	ls := strings.SplitAfter(string(orig), "\n")
	require.Greater(t, len(ls), 4)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(append(ls[:2:2], ls[3:]...), "")), 0o644))
	stdout, stderr, err = vigilIn(t, dir, "", "verify", "--tree", parent)
	assert.Equal(t, exitFailed, exitStatus(err), stdout+stderr)
	assert.Contains(t, stdout+stderr, children[1])
	restore()

	// A child's answer changed, chunk and message alike: the child's log
	// is still well-formed, but the delegation binds the child's log by
	// its tree's root, which no longer holds.
	var q string
	for _, c := range []string{"Q1", "Q2"} {
		if strings.Contains(string(orig), `"content":"Answer to `+c+`"`) {
			q = c
		}
	}
	require.NotEmpty(t, q)
	forged := strings.ReplaceAll(string(orig), "Answer to "+q, "Answer to Q9")
	require.NoError(t, os.WriteFile(path, []byte(forged), 0o644))
	stdout, stderr, err = vigilIn(t, dir, "", "verify", "--tree", parent)
	assert.Equal(t, exitFailed, exitStatus(err), stdout+stderr)
	assert.Contains(t, stdout, parent+": edge-mismatch")
	assert.Contains(t, stderr, children[1]+": ok (")
	restore()
}

// approvingServer scripts a planner that delegates one research task and
// a researcher that reads notes.txt (which the policy asks about) before
// it answers with what it read.
func approvingServer(t *testing.T) *httptest.Server {
	return chatServer(t, "approvingServer", func(msgs []chatMessage) []string {
		if len(msgs) < 2 {
			return nil
		}
		last := msgs[len(msgs)-1]
		researcher := strings.Contains(fmt.Sprint(msgs[0].Content), "You research.")
		switch {
		case researcher && last.Role == "tool":
			return textChoices("Notes: " + fmt.Sprint(last.Content))
		case researcher:
			return callChoices("call_r", "read_file", `{"path":"notes.txt"}`)
		case last.Role == "tool":
			return textChoices("Plan: " + fmt.Sprint(last.Content))
		}
		return callChoices("call_p", "research", `{"task":"what do the notes say?"}`)
	})
}

// TestApprovingADelegationAcrossProcesses: the researcher's read_file
// asks; vigil run exits 3 naming the planner's research call; vigil
// approve, a new process, decides it, which decides the child's call and
// resumes both; the tree verifies and replays.
func TestApprovingADelegationAcrossProcesses(t *testing.T) {
	srv := approvingServer(t)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "project"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "project", "notes.txt"), []byte("launch on friday"), 0o644))
	cfg := fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: "%s/v1", api_key: test-key, model: m }
  - name: tools/fs
    config: { root: project }
  - name: approvals
    config:
      rules:
        - { tool: read_file, action: ask, reason: "files need a yes" }
  - id: researcher
    name: agent
    config: { system: "You research.", model: m, tools: [read_file], as_tool: { name: research, description: "Research a question." } }
  - id: planner
    name: agent
    config: { system: "You plan.", model: m, tools: [research] }
  - name: invariants
    config: { mode: strict }
`, srv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))

	_, stderr, err := vigilIn(t, dir, "", "run", "plan")
	require.Equal(t, exitSuspended, exitStatus(err), stderr)
	assert.Contains(t, stderr, `call_p  research {"task":"what do the notes say?"}  (sub-agent research: its session `)
	assert.Contains(t, stderr, `waits for a decision on call_r (read_file`)
	parent := sessionIDIn(t, stderr)
	// The child's call, in full, where the person reads what to decide.
	childCall := `: call_r  read_file {"path":"notes.txt"}  (approvals: files need a yes)`
	assert.Regexp(t, `\n    ↳ in sub-agent session [0-9A-Z]{26}`+regexp.QuoteMeta(childCall), stderr)

	shown, stderr, err := vigilIn(t, dir, "", "sessions", "show", parent)
	require.NoError(t, err, stderr)
	assert.Contains(t, shown, `waits for a decision on call_r (read_file {"path":"notes.txt"}: files need a yes)`, "not cut")
	assert.Contains(t, shown, `(sub-agent research: its session `)

	stdout, stderr, err := vigilIn(t, dir, "", "approve", parent, "--by", "ana")
	require.NoError(t, err, stderr)
	assert.Equal(t, "Plan: Notes: launch on friday\n", stdout)
	assert.Contains(t, stderr, `allow call_p  research {"task":"what do the notes say?"}`)
	assert.Regexp(t, `\n  ↳ in sub-agent session [0-9A-Z]{26}`+regexp.QuoteMeta(childCall), stderr, "the child's call is shown as it is decided")

	_, stderr, err = vigilIn(t, dir, "", "verify", "--tree", parent)
	require.NoError(t, err, stderr)
	assert.Equal(t, 2, strings.Count(stderr, ": ok ("), stderr)
	stdout, stderr, err = vigilIn(t, dir, "", "replay", "--tree", parent)
	require.NoError(t, err, stdout+stderr)
}
