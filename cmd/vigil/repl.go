package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/session"
)

// errTurnInterrupted is the cause of a turn cancelled by Ctrl-C.
var errTurnInterrupted = errors.New("interrupted (Ctrl-C)")

// chat is an interactive session: each line is a turn. On a terminal the
// line is edited with readline (history in historyPath), Ctrl-C cancels
// the running turn and returns to the prompt, and Ctrl-C on an empty line
// or Ctrl-D quits; elsewhere lines are read as they come. It watches
// plugins.yaml and re-applies only what changed; a broken edit is
// reported and the running composition kept.
func chat(ctx context.Context, e *env, o chatOptions) error {
	h, err := openHost(e, o.cfg)
	if err != nil {
		return err
	}
	defer h.close()
	rt, err := h.runtime()
	if err != nil {
		return err
	}
	// The session is opened for each turn and closed after it, so turns
	// that other processes run in between (store/postgres) show up. A new
	// one is created at the first prompt, so that a chat left without a
	// word leaves no empty session behind.
	id := o.sid
	if id != "" {
		sess, done, err := rt.session(ctx, e, id, false)
		if err != nil {
			return err
		}
		if err := done(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "session %s%s\n", sess.ID(), rt.logPath(id))
	}
	in, err := newLineReader(ctx, e, h.status)
	if err != nil {
		return err
	}
	defer in.close()
	fmt.Fprintln(e.stderr, in.hint())

	// The agent and its fiber may be replaced by a reload: reads and
	// reloads are serialized with turns.
	var mu sync.Mutex
	watchCtx, stopWatch := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if !o.noWatch && !h.builtin {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := config.Watch(watchCtx, h.path, h.comp, 100*time.Millisecond, func(r config.ReloadResult) {
				mu.Lock()
				defer mu.Unlock()
				h.status.note("%s", reloadMessage(h.path, r))
			})
			if err != nil {
				h.status.note("watch: %v", err)
			}
		}()
	}
	defer func() { stopWatch(); wg.Wait() }()

	failed := false
	for {
		line, err := in.readLine(ctx)
		switch {
		case ctx.Err() != nil, errors.Is(err, io.EOF):
			return chatDone(failed)
		case err != nil:
			return err
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case line == "/exit" || line == "/quit":
			return chatDone(failed)
		}
		mu.Lock()
		err = chatTurn(ctx, e, h, &id, line, in.interactive())
		if errors.Is(err, agentloop.ErrSuspended) {
			err = decideInChat(ctx, e, h, in, id)
		}
		mu.Unlock()
		switch {
		case ctx.Err() != nil:
			return chatDone(failed)
		case errors.Is(err, errTurnInterrupted):
			h.status.note("turn cancelled")
		case err != nil:
			h.status.note("error: %v", err)
			failed = true
		}
	}
}

// chatTurn runs one turn of a chat on session *id, opened for the turn,
// or on a new one whose id it stores in *id. In an interactive chat
// Ctrl-C cancels the turn only: the error is then errTurnInterrupted.
// (A piped chat stops on Ctrl-C, as any command does.)
func chatTurn(ctx context.Context, e *env, h *host, id *string, prompt string, interactive bool) error {
	rt, err := h.runtime()
	if err != nil {
		return err
	}
	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if interactive {
		release := e.interrupts.takeOver(func() { cancel(errTurnInterrupted) })
		defer release()
	}
	res, err := rt.chatTurn(turnCtx, e, id, prompt)
	if errors.Is(context.Cause(turnCtx), errTurnInterrupted) && ctx.Err() == nil {
		return errTurnInterrupted
	}
	return turnError(res, err)
}

// decideInChat asks, for each tool call session id waits for, whether to
// allow it (y), deny it (n, then a reason) or allow it for the rest of
// the session (a), logs each answer as the decision and, with the last
// one, resumes the turn here, asking again if it suspends again. The end
// of input leaves the calls waiting (vigil approve decides them later).
func decideInChat(ctx context.Context, e *env, h *host, in lineReader, id string) error {
	for {
		s, err := h.rt.Pending(ctx, id)
		if err != nil || s == nil {
			return err
		}
		calls := s.Undecided()
		if len(calls) == 0 {
			return resumeInChat(ctx, e, h, id, in.interactive(), func(ctx context.Context, v *turnView) (*vigil.Result, error) {
				return h.rt.Resume(ctx, id, v.chunk)
			})
		}
		c := calls[0]
		q := fmt.Sprintf("allow %s %s?", c.Call.Name, oneLine(c.Call.Arguments, 100))
		if c.Request.Reason != "" {
			q += " (" + c.Request.By + ": " + oneLine(c.Request.Reason, 80) + ")"
		}
		h.status.note("%s [y]es, [n]o, [a]lways for this session", q)
		answer, err := in.readLine(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				h.status.note("left waiting: vigil approve %s or vigil deny %s decides later", id, id)
				return nil
			}
			return err
		}
		d := vigil.Decision{By: localUser()}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			d.Allow = true
		case "a", "always":
			d.Allow, d.Scope = true, session.ScopeSession
		case "n", "no":
			h.status.note("why? (the model is told)")
			if d.Reason, err = in.readLine(ctx); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			d.Reason = strings.TrimSpace(d.Reason)
		default:
			continue
		}
		err = resumeInChat(ctx, e, h, id, in.interactive(), func(ctx context.Context, v *turnView) (*vigil.Result, error) {
			return h.rt.Decide(ctx, vigil.DecideOptions{Session: id, Call: c.Call.ID, Decision: d, OnChunk: v.chunk})
		})
		if err != nil && !errors.Is(err, agentloop.ErrSuspended) {
			return err
		}
	}
}

// resumeInChat runs a decision or resume that may go on with the turn,
// showing it, with Ctrl-C cancelling it as a chat turn.
func resumeInChat(ctx context.Context, e *env, h *host, id string, interactive bool, fn func(context.Context, *turnView) (*vigil.Result, error)) error {
	turnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if interactive {
		release := e.interrupts.takeOver(func() { cancel(errTurnInterrupted) })
		defer release()
	}
	v := watchTurn(h.rt.Context(), h.status, id, true)
	if s, err := h.rt.Pending(ctx, id); err == nil && s != nil {
		v.knows(s.Calls)
	}
	res, err := fn(turnCtx, v)
	v.close()
	if errors.Is(context.Cause(turnCtx), errTurnInterrupted) && ctx.Err() == nil {
		return errTurnInterrupted
	}
	if res == nil && err == nil {
		return nil
	}
	return turnError(res, err)
}

func chatDone(failed bool) error {
	if failed {
		return silentError{exitFailed}
	}
	return nil
}

// chatTurn runs one turn of a chat on session *id, opened for the turn,
// or on a new session, whose id it stores in *id.
func (rt *runtime) chatTurn(ctx context.Context, e *env, id *string, prompt string) (*agentloop.TurnResult, error) {
	return rt.turnOn(ctx, e, *id, prompt, true, true, func(sid string) {
		if *id == "" {
			*id = sid
			rt.h.status.note("session %s%s", sid, rt.logPath(sid))
		}
	})
}

// reloadMessage says what a reload of path did, naming only the kinds of
// change that happened.
func reloadMessage(path string, r config.ReloadResult) string {
	var parts []string
	for _, k := range []struct {
		verb string
		ids  []string
	}{
		{"applied", r.Changes.Applied}, {"updated", r.Changes.Updated}, {"re-applied", r.Changes.Reapplied},
		{"disabled", r.Changes.Disabled}, {"disposed", r.Changes.Disposed},
	} {
		if len(k.ids) > 0 {
			parts = append(parts, k.verb+" "+strings.Join(k.ids, ", "))
		}
	}
	if r.Err != nil && len(parts) == 0 {
		return fmt.Sprintf("reload: %v (keeping the running plugins)", r.Err)
	}
	msg := "reloaded " + path + ": nothing changed"
	if len(parts) > 0 {
		msg = "reloaded " + path + ": " + strings.Join(parts, "; ")
	}
	if r.Err != nil {
		msg += "\nreload: " + r.Err.Error()
	}
	return msg
}

// lineReader reads a chat's prompts.
type lineReader interface {
	// readLine returns the next line; io.EOF when the input ends or the
	// user quits.
	readLine(ctx context.Context) (string, error)
	// hint says how to quit.
	hint() string
	// interactive: a user types the lines on a terminal.
	interactive() bool
	close()
}

// newLineReader edits lines with readline when stdin and stderr are a
// terminal, and reads them plainly otherwise (a pipe, a file).
func newLineReader(ctx context.Context, e *env, st *status) (lineReader, error) {
	if !isTerminalFile(e.stdin) || !isTerminalFile(e.stderr) {
		return newPlainReader(ctx, e), nil
	}
	return newEditor(e, st)
}

// plainReader reads lines as they come, prompting on stderr only when
// stdin is a terminal (a prompt between answers read from a pipe says
// nothing, and would share their line with what the chat says). Lines are
// read on their own goroutine so that a signal stops a chat waiting for
// input; that goroutine is left blocked in its read when the chat ends,
// which the process's exit takes care of.
type plainReader struct {
	prompt  bool
	stderr  io.Writer
	lines   <-chan string
	readErr <-chan error
	end     error // once the input ended: io.EOF or the read error
}

func newPlainReader(ctx context.Context, e *env) *plainReader {
	lines, readErr := readLines(ctx, e.stdin)
	return &plainReader{prompt: isTerminalFile(e.stdin), stderr: e.stderr, lines: lines, readErr: readErr}
}

func (p *plainReader) hint() string { return "type a message; /exit or end of input quits" }

func (p *plainReader) readLine(ctx context.Context) (string, error) {
	if p.end != nil {
		return "", p.end // readErr holds one value: the end is read once
	}
	if p.prompt {
		fmt.Fprint(p.stderr, "> ")
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case l, ok := <-p.lines:
		if ok {
			return l, nil
		}
		p.end = io.EOF
		if err := <-p.readErr; err != nil {
			p.end = err
		}
		return "", p.end
	}
}

func (p *plainReader) interactive() bool { return false }

func (p *plainReader) close() {}

// readLines sends the lines of r until its end or ctx is done, then
// closes lines; readErr holds the read error (nil at the end of r or when
// ctx is done) before lines is closed.
func readLines(ctx context.Context, r io.Reader) (lines <-chan string, readErr <-chan error) {
	out := make(chan string)
	errc := make(chan error, 1)
	go func() {
		var err error
		defer func() { errc <- err; close(out) }()
		in := bufio.NewScanner(r)
		in.Buffer(make([]byte, 64*1024), 4<<20)
		for in.Scan() {
			select {
			case out <- in.Text():
			case <-ctx.Done():
				return
			}
		}
		err = in.Err()
	}()
	return out, errc
}

// editor reads lines on a terminal with readline. The prompt and the
// line being edited are drawn on stderr, so stdout carries only answers;
// what the status writes while a line is edited (a reload) goes through
// readline, which redraws the prompt below it.
type editor struct {
	rl *readline.Instance
	st *status
}

func newEditor(e *env, st *status) (*editor, error) {
	fd, _ := fdOf(e.stdin)
	var raw *readline.State
	cfg := &readline.Config{
		Prompt:            "> ",
		HistoryFile:       historyPath(e),
		HistorySearchFold: true,
		Stdin:             readline.NewCancelableStdin(e.stdin),
		Stdout:            e.stderr,
		Stderr:            e.stderr,
		FuncIsTerminal:    func() bool { return true },
		FuncGetWidth:      func() int { return terminalWidth(e.stderr) },
		FuncMakeRaw: func() (err error) {
			raw, err = readline.MakeRaw(int(fd))
			return err
		},
		FuncExitRaw: func() error {
			if raw == nil {
				return nil
			}
			return readline.Restore(int(fd), raw)
		},
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		return nil, fmt.Errorf("chat: line editor: %w", err)
	}
	st.setStderr(rl.Stderr())
	return &editor{rl: rl, st: st}, nil
}

func (ed *editor) hint() string {
	return "type a message; Ctrl-C cancels a turn; /exit, Ctrl-D or Ctrl-C on an empty line quits"
}

func (ed *editor) readLine(ctx context.Context) (string, error) {
	ed.st.hold(true)
	defer ed.st.hold(false)
	// A signal (SIGTERM, SIGHUP) while the line is edited ends the edit.
	stop := context.AfterFunc(ctx, func() { _ = ed.rl.Close() })
	defer stop()
	for {
		line, err := ed.rl.Readline()
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			if line == "" {
				return "", io.EOF
			}
			continue // Ctrl-C drops the line being edited, as in a shell
		case err != nil:
			return "", err
		}
		return line, nil
	}
}

func (ed *editor) interactive() bool { return true }

func (ed *editor) close() { _ = ed.rl.Close() }

// historyPath is the file the chat keeps its prompts in, one per user:
// $XDG_STATE_HOME/vigil/chat_history ($HOME/.local/state/... by default;
// %LocalAppData%\vigil on Windows), readable by its owner only; "" (no
// history kept) when there is no such place.
func historyPath(e *env) string {
	dir := e.getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		dir = "" // the XDG spec: a relative path is invalid and ignored
	}
	if dir == "" {
		if goruntime.GOOS == "windows" {
			dir = e.getenv("LocalAppData")
		} else if home := e.getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".local", "state")
		}
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	dir = filepath.Join(dir, "vigil")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return ""
	}
	path := filepath.Join(dir, "chat_history")
	// Created first, so that readline (which would make it 0666 less the
	// umask) finds it private: prompts may hold what others should not read.
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return ""
	}
	f.Close()
	return path
}
