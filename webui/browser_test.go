package webui_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/internal/browsertest"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/openai"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	_ "github.com/vigil-run/vigil/plugins/tools/calc"   // tools/calc, by name
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/webui"
)

// shots makes the browser tests save each view's screenshot to docs/ui
// (go test ./webui -run Browser -shots), for the README and a person to
// look at.
var shots = flag.Bool("shots", false, "save the views' screenshots to docs/ui")

// Tokens of two tenants: alice of acme, bob of globex.
const (
	aliceTok = "alice-token-0123456789abcdef"
	bobTok   = "bob-token-0123456789abcdef"
)

// stack is `vigil serve`'s parts over a real runtime: the API with the UI
// mounted, tokens on, a worker, and a model behind provider/openai.
type stack struct {
	t     *testing.T
	url   string
	srv   *httptest.Server
	model *model
}

func newStack(t *testing.T) *stack {
	t.Helper()
	toks, err := server.NewTokens("", "alice acme viewer,user,approver "+aliceTok+"; bob globex viewer,user,approver "+bobTok)
	require.NoError(t, err)
	return newStackWith(t, toks, webui.Config{})
}

// newStackWith is newStack with auth as the authenticator and ui as the
// UI's configuration.
func newStackWith(t *testing.T, auth server.Authenticator, ui webui.Config) *stack {
	t.Helper()
	m, msrv := newModel(t)
	src := vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/openai", openai.Config{BaseURL: msrv.URL + "/v1", APIKey: "test", Model: "gpt-test"}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask", Reason: "arithmetic needs a yes"}}}),
		config.Entry{ID: "researcher", Name: "agent", Config: agentloop.Config{System: "You research.",
			Delegation: agentloop.Delegation{Tools: agentloop.Refs(), AsTool: &agentloop.AsTool{Name: "research", Description: "Research a question."}}}},
		config.Entry{ID: "planner", Name: "agent", Config: agentloop.Config{System: "You plan.", Delegation: agentloop.Delegation{Tools: agentloop.Refs("research", "calc")}}},
		vigil.Plugin("invariants", invariants.Config{Mode: "strict"}),
	)
	rt, err := vigil.Open(context.Background(), src)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, err := server.New(rt, server.Options{Auth: auth, Addr: ln.Addr().String(), UI: webui.Handler(ui)})
	require.NoError(t, err)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: s}}
	srv.Start()
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = rt.Work(ctx, vigil.WorkOptions{Worker: "test", Concurrency: 2})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return &stack{t: t, url: srv.URL, srv: srv, model: m}
}

// call sends an API request as the holder of tok and decodes the answer.
func (s *stack) call(tok, method, path, body string, out any) int {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(s.t, json.Unmarshal(data, out), "%s", data)
	}
	return resp.StatusCode
}

// page is the browser on the UI.
type page struct {
	t   *testing.T
	ctx context.Context
}

func (p *page) do(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	require.NoError(p.t, chromedp.Do(p.ctx, actions...))
}

// until waits for a JavaScript expression to be true.
func (p *page) until(what, expr string) {
	p.t.Helper()
	_, err := chromedp.Run(p.ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second)))
	if err != nil {
		main, _ := chromedp.Run(p.ctx, chromedp.Evaluate[string](`document.body.innerText`))
		p.t.Fatalf("%s: %v\nthe page shows:\n%s", what, err, main)
	}
}

func (p *page) eval(expr string) string {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[string](expr))
	require.NoError(p.t, err, expr)
	return v
}

func (p *page) text(sel string) string {
	p.t.Helper()
	return p.eval(fmt.Sprintf(`(document.querySelector(%q) || {}).innerText || ''`, sel))
}

func (p *page) go_(hash string) {
	p.t.Helper()
	p.eval(fmt.Sprintf(`location.hash = %q, ''`, hash))
}

// axeSource is axe-core, installed by .ci/run (npm ci in testdata/axe).
func axeSource(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "axe", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core is missing in CI: .ci/run must npm ci webui/testdata/axe (%v)", err)
		}
		t.Skipf("axe-core is not installed (cd webui/testdata/axe && npm ci); in CI this fails: %v", err)
	}
	return string(data)
}

// check scans the view with axe-core (serious and critical violations
// fail the test) and, with -shots, saves its screenshot as name.png.
func (p *page) check(axe, name string) {
	p.t.Helper()
	p.eval(`typeof axe === 'undefined' ? (0, eval)(` + jsString(axe) + `) && '' : ''`)
	found, err := chromedp.Run(p.ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ['violations']}).then((r) => r.violations
		.filter((v) => v.impact === 'serious' || v.impact === 'critical')
		.map((v) => v.impact + ' ' + v.id + ': ' + v.help + ' at ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`, chromedp.EvalAwaitPromise))
	require.NoError(p.t, err)
	assert.Empty(p.t, found, "axe-core on the %s view", name)
	if *shots {
		png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
		require.NoError(p.t, err)
		require.NoError(p.t, os.WriteFile(filepath.Join("..", "docs", "ui", name+".png"), png, 0o644))
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// login opens the UI and logs in with tok, typing it and pressing Enter.
func login(t *testing.T, s *stack, axe, tok string) *page {
	p := &page{t: t, ctx: browsertest.New(t)}
	p.do(chromedp.EmulateViewport(1280, 800), chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	p.check(axe, "login")
	p.do(chromedp.SendKeys(chromedp.CSS("#token"), tok), chromedp.SendKeys(chromedp.CSS("#token"), "\r"))
	p.until("the sessions list after login", `!!document.querySelector('table.sessions') && location.hash === '#/sessions'`)
	return p
}

// TestBrowserUI drives the UI in headless Chromium against the real
// server with tokens on, a worker and a model on OpenAI's wire format:
// a turn streams into the timeline, an approval waits in the inbox and is
// allowed there, a fork is made, a sub-agent's timeline opens from its
// parent's, and another tenant's sessions never show.
func TestBrowserUI(t *testing.T) {
	s := newStack(t)
	axe := axeSource(t)
	// Bob, of another tenant, has a session with a turn, and a call
	// waiting for a decision.
	var bobs server.Summary
	require.Equal(t, http.StatusCreated, s.call(bobTok, "POST", "/v1/sessions", "", &bobs))
	p := login(t, s, axe, aliceTok)

	// A view takes the focus when it opens, so the keyboard goes on from
	// its first control, with the focus shown; a new session is made from
	// the keyboard alone.
	p.do(chromedp.KeyEvent("\t"))
	assert.Equal(t, "f-status", p.eval(`document.activeElement.id`))
	p.do(chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t"))
	assert.Equal(t, "new-session", p.eval(`document.activeElement.id`))
	assert.NotEqual(t, "none", p.eval(`getComputedStyle(document.activeElement).outlineStyle`), "the focus is visible")
	p.do(chromedp.KeyEvent("\r"))
	p.until("the new session's timeline", `location.hash.startsWith('#/sessions/') && document.getElementById('live') && document.getElementById('live').textContent === 'live'`)
	id := strings.TrimPrefix(p.eval(`location.hash`), "#/sessions/")
	p.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "slow hello\r"))
	p.until("the first chunk streaming in", `(document.querySelector('.streaming') || {}).textContent?.includes('Thinking')`)
	assert.Equal(t, "false", p.eval(`String(!!document.querySelector('[data-type="turn/end"]'))`), "the turn is still open")
	s.model.open()
	p.until("the turn's end", `!!document.querySelector('section[data-turn="1"] [data-type="turn/end"]')`)
	assert.Contains(t, p.text(`section[data-turn="1"]`), "Thinking done: hello.")
	assert.Contains(t, p.text(`section[data-turn="1"]`), "posted by alice")

	// The stream drops (the server closes the connection): the page takes
	// a new ticket and resumes after the last seq it holds, so the next
	// turn's events arrive once each.
	opens := p.eval(`document.getElementById('live').dataset.opens`)
	s.srv.CloseClientConnections()
	p.until("the stream resumed", `Number(document.getElementById('live').dataset.opens) > `+opens+` && document.getElementById('live').textContent === 'live'`)

	// A call waits for a person; the inbox shows it whole, with its
	// context; allowing it there lets the turn finish.
	require.Equal(t, http.StatusAccepted, s.call(bobTok, "POST", "/v1/sessions/"+bobs.ID+"/turns", `{"prompt":"compute for bob"}`, nil))
	p.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "compute 6*7\r"))
	p.until("the approval request", `!!document.querySelector('section[data-turn="2"] [data-type="approval/request"]')`)
	p.until("the inbox count", `document.getElementById('approval-count').textContent === '1'`)
	p.do(chromedp.Click(chromedp.CSS(`a[data-nav="approvals"]`)))
	p.until("the waiting call in the inbox", `document.querySelectorAll('article[data-call]').length === 1`)
	assert.Equal(t, "{\n  \"expression\": \"6*7\"\n}", p.text(`article[data-call] pre.arguments`), "the arguments, whole")
	card := p.text(`article[data-call]`)
	assert.Contains(t, card, id)
	assert.Contains(t, card, "arithmetic needs a yes")
	assert.Contains(t, card, "alice", "who posted the turn")
	assert.NotContains(t, card, bobs.ID, "bob's waiting call is not alice's to see")
	p.check(axe, "approvals")
	p.do(chromedp.SendKeys(chromedp.CSS(`article[data-call] input[name="reason"]`), "6*7 is harmless"),
		chromedp.Click(chromedp.CSS(`article[data-call] button.allow`)))
	p.until("the decision taken", `(document.querySelector('article[data-call] [role="status"]') || {}).textContent?.startsWith('Allowed')`)
	p.go_("#/sessions/" + id)
	p.until("the allowed turn's end", `(document.querySelector('section[data-turn="2"] [data-type="turn/end"]') || {}).textContent?.includes('completed')`)
	turn2 := p.text(`section[data-turn="2"]`)
	assert.Contains(t, turn2, "allowed by alice — 6*7 is harmless", "the decision, attributed to the principal")
	assert.Contains(t, turn2, "The tool said: 42")
	seqs := p.eval(`[...document.querySelectorAll('#timeline li[data-seq]')].map((li) => li.dataset.seq).join(',')`)
	// (Chunks fold into their message, so not every seq has a row.)
	seen := map[string]bool{}
	for _, seq := range strings.Split(seqs, ",") {
		require.False(t, seen[seq], "seq %s twice across the resumed stream: %s", seq, seqs)
		seen[seq] = true
	}
	var now server.Summary
	require.Equal(t, http.StatusOK, s.call(aliceTok, "GET", "/v1/sessions/"+id, "", &now))
	assert.True(t, seen[fmt.Sprint(now.Events-1)], "the last event arrived: %s", seqs)
	p.check(axe, "timeline")

	// Another tenant's sessions never appear: not in the list, and not to
	// the page's own requests.
	p.go_("#/sessions")
	p.until("the list's rows", `document.querySelectorAll('tr[data-session]').length >= 1`)
	rows := p.eval(`[...document.querySelectorAll('tr[data-session]')].map((r) => r.dataset.session + ' ' + r.children[2].textContent).join('\n')`)
	assert.Contains(t, rows, id+" acme")
	assert.NotContains(t, rows, bobs.ID)
	assert.NotContains(t, rows, "globex")
	status, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`fetch('/v1/sessions/`+bobs.ID+`', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('vigil.token')}}).then((r) => r.status)`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, status, "the API hides bob's session from alice's page")
	assert.Contains(t, p.text(`tr[data-session="`+id+`"]`), "idle")
	p.check(axe, "sessions")

	// A fork at the end of turn 1 is a new session holding turn 1 only; a
	// seq inside a turn is refused with the API's sentence.
	p.go_("#/sessions/" + id)
	p.until("the timeline", `!!document.querySelector('section[data-turn="2"] [data-type="turn/end"]')`)
	end1 := p.eval(`document.querySelector('section[data-turn="1"] [data-type="turn/end"]').dataset.seq`)
	p.do(chromedp.SendKeys(chromedp.CSS("#fork-at"), "2\r"))
	p.until("the refusal", `!document.getElementById('notice').hidden && document.getElementById('notice').textContent.length > 0`)
	assert.Contains(t, p.text("#notice"), "seq", "the API's sentence about where a fork may start")
	p.do(chromedp.SetValue(chromedp.CSS("#fork-at"), ""), chromedp.SendKeys(chromedp.CSS("#fork-at"), end1+"\r"))
	p.until("the fork's timeline", `!!document.getElementById('parent-link') && !location.hash.endsWith('`+id+`')`)
	forkID := strings.TrimPrefix(p.eval(`location.hash`), "#/sessions/")
	assert.Equal(t, "#/sessions/"+id, p.eval(`document.getElementById('parent-link').getAttribute('href')`))
	p.until("the fork's turn 1", `!!document.querySelector('section[data-turn="1"] [data-type="turn/end"]')`)
	assert.Equal(t, "false", p.eval(`String(!!document.querySelector('section[data-turn="2"]'))`), "the fork holds turn 1 only")
	var forked server.Summary
	require.Equal(t, http.StatusOK, s.call(aliceTok, "GET", "/v1/sessions/"+forkID, "", &forked))
	require.NotNil(t, forked.Parent)
	assert.Equal(t, id, forked.Parent.ID)

	// A delegation links to the sub-agent's timeline, which links back.
	var parent server.Summary
	require.Equal(t, http.StatusCreated, s.call(aliceTok, "POST", "/v1/sessions", "", &parent))
	p.go_("#/sessions/" + parent.ID)
	p.until("the parent's timeline", `document.getElementById('live') && document.getElementById('live').textContent === 'live'`)
	p.do(chromedp.SendKeys(chromedp.CSS("#prompt"), "delegate the question\r"))
	p.until("the delegation's result", `!!document.querySelector('a.child-link') && !!document.querySelector('section[data-turn="1"] [data-type="turn/end"]')`)
	assert.Contains(t, p.text(`section[data-turn="1"]`), "The tool said: The answer is 42.")
	p.do(chromedp.Click(chromedp.CSS("a.child-link")))
	p.until("the child's timeline", `!!document.getElementById('parent-link') && !!document.querySelector('[data-type="turn/end"]')`)
	assert.Equal(t, "#/sessions/"+parent.ID, p.eval(`document.getElementById('parent-link').getAttribute('href')`))
	assert.Contains(t, p.text("#timeline"), "Find the answer.", "the child's task")
	p.check(axe, "subagent")

	// The list at the end: the sessions, the fork and the sub-agent's.
	p.go_("#/sessions")
	p.until("the list's rows", `document.querySelectorAll('tr[data-session]').length >= 4`)
	p.check(axe, "sessions")

	// At phone width the list and the timeline fit the screen.
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	p.go_("#/sessions")
	p.until("the list at phone width", `document.querySelectorAll('tr[data-session]').length >= 3`)
	assert.Equal(t, "true", p.eval(`String(document.documentElement.scrollWidth <= 390)`), "no sideways scrolling")
	p.check(axe, "phone-sessions")
	p.go_("#/sessions/" + id)
	p.until("the timeline at phone width", `!!document.querySelector('section[data-turn="2"] [data-type="turn/end"]')`)
	assert.Equal(t, "true", p.eval(`String(document.documentElement.scrollWidth <= 390)`), "no sideways scrolling")
	p.check(axe, "phone-timeline")
}

// TestBrowserProofViews opens a finished session's proofs: the steps,
// a step's request with its digest matched, the replay report, the trace
// waterfall and the usage per turn.
func TestBrowserProofViews(t *testing.T) {
	s := newStack(t)
	var sum server.Summary
	require.Equal(t, http.StatusCreated, s.call(aliceTok, "POST", "/v1/sessions", "", &sum))
	id := sum.ID
	if code := s.call(aliceTok, "GET", "/v1/sessions/"+id+"/steps", "", nil); code == http.StatusNotFound {
		t.Skip("this server serves no step requests yet (GET /v1/sessions/{id}/steps: branch h/proofapi)")
	}
	axe := axeSource(t)
	require.Equal(t, http.StatusAccepted, s.call(aliceTok, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"compute 6*7"}`, nil))
	require.Eventually(t, func() bool {
		var got struct {
			Approvals []server.Approval `json:"approvals"`
		}
		s.call(aliceTok, "GET", "/v1/approvals", "", &got)
		return len(got.Approvals) == 1
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, http.StatusAccepted, s.call(aliceTok, "POST", "/v1/sessions/"+id+"/approvals/call_1", `{"allow":true}`, nil))
	require.Eventually(t, func() bool {
		s.call(aliceTok, "GET", "/v1/sessions/"+id, "", &sum)
		return sum.Status == server.StatusIdle && sum.Turns == 1
	}, 20*time.Second, 50*time.Millisecond)
	p := login(t, s, axe, aliceTok)

	p.go_("#/sessions/" + id + "/steps")
	p.until("the steps", `document.querySelectorAll('main tbody tr').length === 2`)
	assert.Equal(t, 2, strings.Count(p.text("main tbody"), "✓"), "both steps' digests match")
	p.check(axe, "steps")
	p.do(chromedp.Click(chromedp.CSS(`main tbody a[href$="/steps/1/2"]`)))
	p.until("step 1.2's request", `!!document.getElementById('digest')`)
	assert.Contains(t, p.text("#digest"), "✓")
	assert.Contains(t, p.text("#invariants"), "✓")
	msgs := p.text("main")
	assert.Contains(t, msgs, "compute 6*7", "the request holds the person's message")
	assert.Contains(t, msgs, "Let me compute.", "the model's call")
	assert.Contains(t, msgs, "42", "and the tool's result")
	p.check(axe, "step-request")

	p.go_("#/sessions/" + id + "/replay")
	p.until("the replay report", `!!document.getElementById('replay')`)
	assert.Contains(t, p.text("#replay"), "identical")
	p.check(axe, "replay")

	p.go_("#/sessions/" + id + "/trace")
	p.until("the waterfall", `document.querySelectorAll('#waterfall .span-row').length >= 3`)
	p.check(axe, "trace")

	p.go_("#/sessions/" + id + "/usage")
	p.until("the usage", `!!document.getElementById('usage')`)
	assert.Contains(t, p.text("#usage tbody"), "240", "two steps of 120 input tokens")
	p.check(axe, "usage")
}

// TestBrowserARefusedTokenEndsOnTheLoginViewSayingWhy: a token the API
// does not take (revoked, or not a token) sends the person to log in,
// with the API's reason on the page and nobody shown as logged in.
func TestBrowserARefusedTokenEndsOnTheLoginViewSayingWhy(t *testing.T) {
	s := newStack(t)
	p := &page{t: t, ctx: browsertest.New(t)}
	p.do(chromedp.Navigate(s.url+"/ui/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	logout := `getComputedStyle(document.getElementById('who')).display`
	assert.Equal(t, "none", p.eval(logout), "the login view shows no one logged in, and no Log out")
	p.eval(`sessionStorage.setItem('vigil.token', 'not-a-token-of-the-server'), location.hash = '#/sessions', ''`)
	p.until("the login view, saying why", `location.hash === '#/login' && !!document.getElementById('token') &&
		document.getElementById('notice').textContent.startsWith('Your credentials were refused')`)
	assert.Equal(t, "none", p.eval(logout))
}
