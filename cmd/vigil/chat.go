package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
)

// chatOptions are the flags of `vigil chat`.
type chatOptions struct {
	cfg, sid string
	noWatch  bool
}

func newChatCmd(e *env) *cobra.Command {
	var o chatOptions
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk with an agent, one turn per line",
		Long: `An interactive session: each line read from stdin is a turn, its answer
streamed to stdout. /exit or the end of input quits. -s resumes a session.
plugins.yaml is watched: an edit re-applies only the entries that changed,
and a broken edit is reported while the running plugins are kept.`,
		Example: `  vigil chat
  vigil chat -s 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil chat -c agents/dev.yaml --no-watch`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("chat takes no arguments; type prompts on stdin")
			}
			return nil
		},
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmdChat(cmd.Context(), e, o)
		}),
	}
	configFlag(cmd, &o.cfg)
	sessionFlag(e, cmd, &o.sid, "resume this session")
	cmd.Flags().BoolVar(&o.noWatch, "no-watch", false, "do not reload plugins.yaml when it changes")
	return cmd
}

// cmdChat is an interactive session: each line is a turn. It watches
// plugins.yaml and re-applies only what changed; a broken edit is reported
// and the running composition kept.
func cmdChat(ctx context.Context, e *env, o chatOptions) error {
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
	// that other processes run in between (store/postgres) show up.
	sess, done, err := rt.session(ctx, e, o.sid, false)
	if err != nil {
		return err
	}
	id := sess.ID()
	if err := done(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "session %s%s\n", id, rt.logPath(id))
	fmt.Fprintln(e.stderr, "type a message; /exit or end of input quits")

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
				if r.Err != nil {
					fmt.Fprintf(e.stderr, "reload: %v (keeping the running plugins)\n", r.Err)
					return
				}
				c := r.Changes
				fmt.Fprintf(e.stderr, "reloaded %s: applied %v, updated %v, re-applied %v, disposed %v, kept %v\n",
					h.path, c.Applied, c.Updated, c.Reapplied, c.Disposed, c.Kept)
			})
			if err != nil {
				fmt.Fprintf(e.stderr, "watch: %v\n", err)
			}
		}()
	}
	defer func() { stopWatch(); wg.Wait() }()

	// Lines are read on their own goroutine so that a signal stops a chat
	// waiting for input; that goroutine is left blocked in its read when
	// the chat ends, which the process's exit takes care of.
	lines, readErr := readLines(ctx, e.stdin)
	failed := false
	for {
		fmt.Fprint(e.stderr, "> ")
		var line string
		select {
		case <-ctx.Done():
			fmt.Fprintln(e.stderr)
			return chatDone(failed)
		case l, ok := <-lines:
			if !ok {
				if err := <-readErr; err != nil {
					return err
				}
				return chatDone(failed)
			}
			line = strings.TrimSpace(l)
		}
		switch {
		case line == "":
			continue
		case line == "/exit" || line == "/quit":
			return chatDone(failed)
		}
		mu.Lock()
		rt2, err := h.runtime()
		if err != nil {
			mu.Unlock()
			fmt.Fprintf(e.stderr, "error: %v\n", err)
			failed = true
			continue
		}
		res, err := rt2.chatTurn(ctx, e, id, line)
		mu.Unlock()
		if err := turnError(res, err); err != nil {
			fmt.Fprintf(e.stderr, "error: %v\n", err)
			failed = true
		}
		if ctx.Err() != nil {
			return chatDone(failed)
		}
	}
}

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

func chatDone(failed bool) error {
	if failed {
		return silentError{exitFailed}
	}
	return nil
}

// chatTurn runs one turn of a chat on session id, opened for the turn.
func (rt *runtime) chatTurn(ctx context.Context, e *env, id, prompt string) (*agentloop.TurnResult, error) {
	return rt.turnOn(ctx, e, id, prompt, true, true, nil)
}
