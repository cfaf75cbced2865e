//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// openTTY returns the terminal side of a new pty.
func openTTY(t *testing.T) *os.File {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close(); ptmx.Close() })
	return tty
}

// onTerminal is a real vigil process whose stdin, stdout and stderr are
// one terminal, which the test types on and reads, like a user.
type onTerminal struct {
	cmd    *exec.Cmd
	term   *os.File // the pty's master side
	mu     sync.Mutex
	out    strings.Builder
	seen   int // how far expect has read
	exited chan error
}

func startOnTerminal(t *testing.T, dir string, args ...string) *onTerminal {
	t.Helper()
	cmd := exec.Command(buildVigil(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	term, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 250})
	require.NoError(t, err)
	p := &onTerminal{cmd: cmd, term: term, exited: make(chan error, 1)}
	read := make(chan struct{})
	go func() {
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := term.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return // EIO once the process has exited
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		<-read
		p.exited <- err
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		term.Close()
	})
	return p
}

// output is everything the terminal showed.
func (p *onTerminal) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// expect waits for what matches re after what was expected before, and
// returns the match.
func (p *onTerminal) expect(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	var m []int
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		m = rx.FindStringIndex(p.out.String()[p.seen:])
		if m != nil {
			m[0], m[1] = m[0]+p.seen, m[1]+p.seen
			p.seen = m[1]
		}
		return m != nil
	}, 30*time.Second, 10*time.Millisecond, "waiting for %q after:\n%q", re, p.output())
	return p.output()[m[0]:m[1]]
}

func (p *onTerminal) send(t *testing.T, keys string) {
	t.Helper()
	_, err := p.term.Write([]byte(keys))
	require.NoError(t, err)
}

// wait returns the process's exit error.
func (p *onTerminal) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-p.exited:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("vigil did not exit:\n%q", p.output())
		return nil
	}
}

// toolServer is an MCP server over HTTP with two tools: hold, which
// answers once the test releases it (or the call is cancelled), and fail,
// which fails. Its initialize waits for startup when that is not nil.
type toolServer struct {
	url     string
	held    chan struct{} // a hold call started
	release chan struct{} // one value lets one hold call answer
	startup chan struct{} // closed: initialize may answer
	quit    chan struct{} // closed when the test ends: nothing waits any more
}

func newToolServer(t *testing.T, gated bool) *toolServer {
	ts := &toolServer{held: make(chan struct{}, 8), release: make(chan struct{}, 8), quit: make(chan struct{})}
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil)
	type none struct{}
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "hold", Description: "Answer when released."},
		func(ctx context.Context, _ *mcpsdk.CallToolRequest, _ none) (*mcpsdk.CallToolResult, any, error) {
			ts.held <- struct{}{}
			select {
			case <-ts.release:
				return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "released"}}}, nil, nil
			case <-ts.quit:
				return nil, nil, errors.New("the test is over")
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "fail", Description: "Fail."},
		func(context.Context, *mcpsdk.CallToolRequest, none) (*mcpsdk.CallToolResult, any, error) {
			return nil, nil, errors.New("boom")
		})
	if gated {
		ts.startup = make(chan struct{})
		srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
			return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
				if method == "initialize" {
					select {
					case <-ts.startup:
					case <-ts.quit:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				return next(ctx, method, req)
			}
		})
	}
	hs := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil))
	t.Cleanup(func() {
		close(ts.quit)
		hs.CloseClientConnections()
		hs.Close()
	})
	ts.url = hs.URL
	return ts
}

// waitHeld waits for a hold call to start.
func (ts *toolServer) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-ts.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the hold tool was not called")
	}
}

func toolConfig(url string, script string) string {
	return fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/scripted
    config:
      script:
%s
  - name: agent
    config: { model: scripted }
  - id: toolbox
    name: tools/mcp
    config: { url: %q }
  - name: tools/calc
  - name: invariants
`, script, url)
}

// turnEnds lists the reasons the turns of the only session in dir ended.
func turnEnds(t *testing.T, dir string) []string {
	t.Helper()
	st, err := jsonl.Open(filepath.Join(dir, "sessions"))
	require.NoError(t, err)
	defer st.Close()
	infos, err := st.List(context.Background())
	require.NoError(t, err)
	require.Len(t, infos, 1)
	log, err := st.Load(context.Background(), infos[0].ID)
	require.NoError(t, err)
	var reasons []string
	for _, r := range log.Records {
		if r.Type() == session.TypeTurnEnd {
			end, err := session.DecodeData[session.TurnEnd](r)
			require.NoError(t, err)
			reasons = append(reasons, end.Reason)
		}
	}
	return reasons
}

// ansi matches the terminal's control sequences and carriage returns.
const ansi = `(?:\x1b\[[0-9;]*[A-Za-z]|\r)*`

// TestChatOnATerminal types on `vigil chat` as a user: the progress line
// names the MCP server while it starts and the tool while it runs;
// Ctrl-C during the turn cancels that turn only and brings the prompt
// back; a failed tool call is shown as failed; a reload of plugins.yaml
// prints what it did on a line of its own and redraws the prompt; Ctrl-C
// on the empty prompt quits; the prompts are in the history file.
func TestChatOnATerminal(t *testing.T) {
	ts := newToolServer(t, true)
	dir := t.TempDir()
	cfg := toolConfig(ts.url, `        - tool_calls: [ { name: hold } ]
        - tool_calls: [ { name: fail } ]
        - text: "all done"`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
	p := startOnTerminal(t, dir, "chat")

	p.expect(t, `starting toolbox \(tools/mcp\) [0-9.]+s`)
	close(ts.startup)
	p.expect(t, `type a message`)
	p.expect(t, `> `)
	entries, _ := os.ReadDir(filepath.Join(dir, "sessions"))
	assert.Empty(t, entries, "no session before the first prompt")

	p.send(t, "first\r")
	p.expect(t, `session [0-9A-Z]{26}`)
	p.expect(t, `→ hold`)
	ts.waitHeld(t)
	p.expect(t, `running hold [0-9.]+s`)
	p.send(t, "\x03")
	p.expect(t, `turn cancelled`)
	p.expect(t, `> `)

	p.send(t, "second\r")
	p.expect(t, `→ fail`)
	p.expect(t, `✗ fail failed: MCP_TOOL_ERROR: boom`)
	p.expect(t, `all done`)
	p.expect(t, `> `)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"),
		[]byte(strings.Replace(cfg, "  - name: tools/calc\n", "  - name: tools/calc\n    disabled: true\n", 1)), 0o644))
	got := p.expect(t, `\r`+ansi+`reloaded plugins\.yaml: [^\r\n]*\r?\n`+ansi+`> `)
	assert.Contains(t, got, "reloaded plugins.yaml: disabled tools/calc\r\n", "only what changed, and on its own line")

	p.send(t, "\x03")
	require.NoError(t, p.wait(t), "Ctrl-C on an empty prompt quits:\n%q", p.output())

	assert.Equal(t, []string{session.ReasonAborted, session.ReasonCompleted}, turnEnds(t, dir))
	hist, err := os.ReadFile(filepath.Join(dir, "state", "vigil", "chat_history"))
	require.NoError(t, err)
	assert.Equal(t, "first\nsecond\n", string(hist))
}

// TestChatQuitsOnAnEmptyPrompt: Ctrl-D and Ctrl-C on the empty prompt
// end the chat (exit 0), and a chat left without a word stores no
// session; Ctrl-C on a line being typed drops the line only.
func TestChatQuitsOnAnEmptyPrompt(t *testing.T) {
	for _, tt := range []struct{ name, keys string }{
		{"ctrl-d", "\x04"},
		{"ctrl-c", "\x03"},
		{"ctrl-c on a line, then ctrl-d", "half a thought\x03\x04"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(chatConfig), 0o644))
			p := startOnTerminal(t, dir, "chat", "--no-watch")
			p.expect(t, `type a message`)
			p.expect(t, `> `)
			p.send(t, tt.keys)
			require.NoError(t, p.wait(t), "%q", p.output())
			entries, _ := os.ReadDir(filepath.Join(dir, "sessions"))
			assert.Empty(t, entries, "no empty session is stored")
			assert.NotContains(t, p.output(), "first answer", "no turn ran")
		})
	}
}

// TestRunShowsItsWaitsOnATerminalOnly: on a terminal, a run waiting for
// a session's lease says for whom, and a running tool shows with its
// time; piped, or with --quiet, no progress line is drawn.
func TestRunShowsItsWaitsOnATerminalOnly(t *testing.T) {
	ts := newToolServer(t, false)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(toolConfig(ts.url, `        - tool_calls: [ { name: hold } ]
        - text: "held and released"`)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "quick.yaml"), []byte(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/scripted
    config: { script: [ { text: "quick answer" } ], repeat: true }
  - name: agent
    config: { model: scripted }
  - name: invariants
`), 0o644))
	bin := buildVigil(t)
	vigil := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		return cmd
	}
	out, err := vigil("run", "-c", "quick.yaml", "start").CombinedOutput()
	require.NoError(t, err, "%s", out)
	id := sessionIDIn(t, string(out))

	t.Run("piped", func(t *testing.T) {
		cmd := vigil("run", "-s", id, "hold it")
		var stderr lineBuffer
		cmd.Stdout, cmd.Stderr = &lineBuffer{}, &stderr
		require.NoError(t, cmd.Start())
		ts.waitHeld(t)
		stderr.waitFor(t, "→ hold")
		ts.release <- struct{}{}
		require.NoError(t, cmd.Wait(), stderr.String())
		assert.NotContains(t, stderr.String(), "\r", "no progress line on a pipe")
		assert.NotContains(t, stderr.String(), "running hold")
	})

	t.Run("terminal", func(t *testing.T) {
		// A holder: its turn waits in the hold tool.
		holder := vigil("run", "-s", id, "hold it")
		var holderErr lineBuffer
		holder.Stdout, holder.Stderr = &lineBuffer{}, &holderErr
		require.NoError(t, holder.Start())
		ts.waitHeld(t)

		p := startOnTerminal(t, dir, "run", "-c", "quick.yaml", "-s", id, "--wait", "after you")
		p.expect(t, fmt.Sprintf(`waiting for session %s, held by pid %d on [^ ]+ since [^ ]+ [0-9.]+s`, id, holder.Process.Pid))
		ts.release <- struct{}{}
		require.NoError(t, holder.Wait(), holderErr.String())
		p.expect(t, `quick answer`)
		require.NoError(t, p.wait(t), "%q", p.output())

		p = startOnTerminal(t, dir, "run", "-s", id, "hold it")
		ts.waitHeld(t)
		p.expect(t, `running hold [0-9.]+s`)
		ts.release <- struct{}{}
		p.expect(t, `held and released`)
		require.NoError(t, p.wait(t), "%q", p.output())
	})

	t.Run("quiet", func(t *testing.T) {
		p := startOnTerminal(t, dir, "run", "--quiet", "-s", id, "hold it")
		ts.waitHeld(t)
		p.expect(t, `→ hold`)
		ts.release <- struct{}{}
		p.expect(t, `held and released`)
		require.NoError(t, p.wait(t), "%q", p.output())
		assert.NotContains(t, p.output(), "running hold")
	})
}

// TestStatusIsLiveOnlyOnATerminalUnlessQuiet, with a real terminal.
func TestStatusIsLiveOnlyOnATerminalUnlessQuiet(t *testing.T) {
	tty := openTTY(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	for _, tt := range []struct {
		name   string
		stderr *os.File
		quiet  bool
		live   bool
	}{
		{"terminal", tty, false, true},
		{"terminal, quiet", tty, true, false},
		{"pipe", w, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newStatus(&env{stdout: w, stderr: tt.stderr, quiet: tt.quiet})
			defer s.close()
			assert.Equal(t, tt.live, s.live)
		})
	}
}
