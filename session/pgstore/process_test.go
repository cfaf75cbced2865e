package pgstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/pgstore"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// The tests below run the test binary again as child processes, each its
// own PostgreSQL client, coordinated by lines on stdin and stdout.

const childEnv = "VIGIL_PGSTORE_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(child(role))
	}
	code := m.Run()
	if code == 0 {
		// Renewers, listeners and pooled connections end with their store.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// child runs one role; its exit code is 0, 3 for "busy", 1 for errors.
func child(role string) int {
	ctx := context.Background()
	opts := []pgstore.Option{pgstore.WithSchema(os.Getenv("SCHEMA")), pgstore.WithHolder(os.Getenv("NAME"))}
	if ttl, err := time.ParseDuration(os.Getenv("TTL")); err == nil {
		opts = append(opts, pgstore.WithLeaseTTL(ttl))
	}
	store, err := pgstore.Open(ctx, os.Getenv(pgtest.EnvDSN), opts...)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer store.Close()
	id, name := os.Getenv("SESSION"), os.Getenv("NAME")
	in := bufio.NewScanner(os.Stdin)
	await := func(word string) bool { return in.Scan() && in.Text() == word }
	switch role {
	case "append":
		// Append whole turns, optimistically: on a conflict, reload and
		// try again. Report the wins and the conflicts.
		rounds, _ := strconv.Atoi(os.Getenv("ROUNDS"))
		log, err := store.Load(ctx, id)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("ready")
		if !await("go") {
			return 1
		}
		records := log.Records
		var res struct{ Wins, Conflicts int }
		for res.Wins < rounds {
			recs := turnRecords(records, fmt.Sprintf("%s %d", name, res.Wins), "ok", false)
			err := store.Append(ctx, id, int64(len(records)), recs)
			if err == nil {
				res.Wins++
				records = append(records, recs...)
				continue
			}
			if !errors.Is(err, session.ErrConflict) {
				fmt.Println("error", err)
				return 1
			}
			res.Conflicts++
			if log, err = store.Load(ctx, id); err != nil {
				fmt.Println("error", err)
				return 1
			}
			records = log.Records
		}
		out, _ := json.Marshal(res)
		fmt.Println("result", string(out))
		return 0
	case "turn", "crash":
		// Run a turn under the lease: the whole turn when told to go, or
		// (crash) half of it, then hang until killed.
		m := newManagerFor(store)
		sess, done, err := live.OpenLeased(ctx, m, id, os.Getenv("WAIT") == "1")
		if errors.Is(err, pgstore.ErrBusy) {
			fmt.Println("busy", err)
			return 3
		}
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("leased")
		if role == "crash" {
			if err := appendTurn(ctx, sess, "from "+name, "", true); err != nil {
				fmt.Println("error", err)
				return 1
			}
			fmt.Println("mid-turn")
			select {}
		}
		if !await("go") {
			return 1
		}
		if err := appendTurn(ctx, sess, "from "+name, "ok", false); err != nil {
			fmt.Println("error", err)
			return 1
		}
		if err := done(ctx); err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("done")
		return 0
	}
	fmt.Println("error: unknown role", role)
	return 1
}

// proc is a running child.
type proc struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	errs  bytes.Buffer
	exit  chan error
}

func startChild(t *testing.T, role, name string, env ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, lines: make(chan string, 16), exit: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + role, "NAME=" + name}, env...)...)
	p.cmd.Stderr = &p.errs
	var err error
	p.in, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	out, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.exit <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exit
	})
	return p
}

// next returns the child's next line.
func (p *proc) next() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("%s exited; stderr:\n%s", p.name, p.errs.String())
		}
		return l
	case <-time.After(60 * time.Second):
		p.t.Fatalf("%s said nothing; stderr:\n%s", p.name, p.errs.String())
	}
	return ""
}

func (p *proc) expect(word string) string {
	p.t.Helper()
	l := p.next()
	require.True(p.t, strings.HasPrefix(l, word), "%s said %q, want %q", p.name, l, word)
	return l
}

func (p *proc) send(line string) {
	_, err := fmt.Fprintln(p.in, line)
	require.NoError(p.t, err)
}

// wait returns the child's exit code.
func (p *proc) wait() int {
	p.t.Helper()
	for range p.lines {
	}
	select {
	case err := <-p.exit:
		p.exit <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(p.t, err)
		return 0
	case <-time.After(60 * time.Second):
		p.t.Fatalf("%s did not exit", p.name)
		return -1
	}
}

func TestTwoProcessesAppendingConcurrentlyLoseNothing(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	store := pgtest.StoreIn(t, schema)
	require.NoError(t, store.Create(ctx, session.Info{ID: "s", Created: epoch}))
	const rounds = 25
	env := []string{"SCHEMA=" + schema, "SESSION=s", "ROUNDS=" + strconv.Itoa(rounds)}
	a, b := startChild(t, "append", "A", env...), startChild(t, "append", "B", env...)
	// Both have loaded the empty log before either appends: their first
	// appends race for seq 0, and one of them must lose.
	a.expect("ready")
	b.expect("ready")
	a.send("go")
	b.send("go")
	conflicts := 0
	for _, p := range []*proc{a, b} {
		l := p.expect("result ")
		var res struct{ Wins, Conflicts int }
		require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(l, "result ")), &res))
		require.Equal(t, rounds, res.Wins)
		conflicts += res.Conflicts
		require.Zero(t, p.wait())
	}
	require.GreaterOrEqual(t, conflicts, 1, "the first appends raced for seq 0")
	t.Logf("%d turns appended by two processes, %d conflicts", 2*rounds, conflicts)

	// Every seq exactly once (Load validates the order), every turn of
	// each writer exactly once, and a log that verifies.
	log, err := store.Load(ctx, "s")
	require.NoError(t, err)
	per := len(turnRecords(nil, "", "ok", false))
	require.Len(t, log.Records, 2*rounds*per-(2*rounds-1)) // only the first turn logs a request/header
	seen := map[string]int{}
	for _, r := range log.Records {
		if r.Type() == session.TypeUserMessage {
			m, err := session.DecodeData[session.UserMessage](r)
			require.NoError(t, err)
			seen[m.Content]++
		}
	}
	require.Len(t, seen, 2*rounds)
	for who, n := range seen {
		require.Equal(t, 1, n, who)
	}
	data, err := store.Export(ctx, "s")
	require.NoError(t, err)
	rep := requireVerified(t, data)
	require.Equal(t, len(log.Records), rep.Events)
}

func TestTwoProcessesRacingForATurnOneRunsTheOtherIsBusy(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	store := pgtest.StoreIn(t, schema)
	require.NoError(t, store.Create(ctx, session.Info{ID: "s", Created: epoch}))
	env := []string{"SCHEMA=" + schema, "SESSION=s"}
	procs := []*proc{startChild(t, "turn", "A", env...), startChild(t, "turn", "B", env...)}
	var winner, loser *proc
	var mu sync.Mutex
	var wg sync.WaitGroup
	first := make([]string, 2)
	for i, p := range procs {
		wg.Go(func() {
			l := p.next()
			mu.Lock()
			first[i] = l
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, l := range first {
		switch {
		case l == "leased":
			require.Nil(t, winner, "both got the lease")
			winner = procs[i]
		case strings.HasPrefix(l, "busy "):
			loser = procs[i]
		default:
			t.Fatalf("%s said %q", procs[i].name, l)
		}
	}
	require.NotNil(t, winner)
	require.NotNil(t, loser)
	require.Equal(t, 3, loser.wait())
	require.Contains(t, first[1-indexOf(procs, winner)], "session busy")
	require.Contains(t, first[1-indexOf(procs, winner)], "a turn is running in "+winner.name+"#")

	winner.send("go")
	winner.expect("done")
	require.Zero(t, winner.wait())
	data, err := store.Export(ctx, "s")
	require.NoError(t, err)
	requireVerified(t, data)
	require.Contains(t, string(data), "from "+winner.name)
	require.NotContains(t, string(data), "from "+loser.name)
}

func indexOf(ps []*proc, p *proc) int {
	for i := range ps {
		if ps[i] == p {
			return i
		}
	}
	return -1
}

func TestAWaitingProcessRunsItsTurnAfterTheHolder(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	store := pgtest.StoreIn(t, schema)
	require.NoError(t, store.Create(ctx, session.Info{ID: "s", Created: epoch}))
	env := []string{"SCHEMA=" + schema, "SESSION=s"}
	a := startChild(t, "turn", "A", env...)
	a.expect("leased")
	b := startChild(t, "turn", "B", append(env, "WAIT=1")...)
	select {
	case l := <-b.lines:
		t.Fatalf("B did not wait: %q", l)
	case <-time.After(500 * time.Millisecond):
	}
	a.send("go")
	a.expect("done")
	b.expect("leased")
	b.send("go")
	b.expect("done")
	require.Zero(t, a.wait())
	require.Zero(t, b.wait())
	data, err := store.Export(ctx, "s")
	require.NoError(t, err)
	requireVerified(t, data)
	require.Less(t, strings.Index(string(data), "from A"), strings.Index(string(data), "from B"))
}

func TestAKilledHoldersLeaseExpiresAndTheNextLoadRepairsItsTurn(t *testing.T) {
	ctx := context.Background()
	schema := pgtest.Schema(t)
	store := pgtest.StoreIn(t, schema)
	require.NoError(t, store.Create(ctx, session.Info{ID: "s", Created: epoch}))
	m := newManager(t, store)
	sess, done, err := live.OpenLeased(ctx, m, "s", false)
	require.NoError(t, err)
	require.NoError(t, appendTurn(ctx, sess, "first", "ok", false))
	require.NoError(t, done(ctx))

	const ttl = 1500 * time.Millisecond
	c := startChild(t, "crash", "C", "SCHEMA="+schema, "SESSION=s", "TTL="+ttl.String())
	c.expect("leased")
	c.expect("mid-turn")
	require.NoError(t, c.cmd.Process.Kill())
	require.NotZero(t, c.wait())
	killed := time.Now()

	// The lease outlives its holder until it expires.
	_, _, err = live.OpenLeased(ctx, m, "s", false)
	require.ErrorIs(t, err, pgstore.ErrBusy)
	require.ErrorContains(t, err, "a turn is running in C#")

	sess, done, err = live.OpenLeased(ctx, m, "s", true)
	require.NoError(t, err)
	require.Less(t, time.Since(killed), ttl+2*time.Second)

	// Opening repaired the tail: the started tool call's outcome is
	// unknown, the step ends in error, the turn is interrupted.
	recs := sess.Records()
	tail := recs[len(recs)-3:]
	require.Equal(t, session.TypeToolResult, tail[0].Type())
	res, err := session.DecodeData[session.ToolResult](tail[0])
	require.NoError(t, err)
	require.Equal(t, session.CodeToolOutcomeUnknown, res.Error.Code)
	require.Equal(t, session.TypeStepEnd, tail[1].Type())
	end, err := session.DecodeData[session.TurnEnd](tail[2])
	require.NoError(t, err)
	require.Equal(t, session.ReasonInterrupted, end.Reason)

	// The session carries on.
	require.NoError(t, appendTurn(ctx, sess, "after the crash", "ok", false))
	require.NoError(t, done(ctx))
	data, err := store.Export(ctx, "s")
	require.NoError(t, err)
	rep := requireVerified(t, data)
	require.Equal(t, len(recs)+len(turnEvents(recs, "", "ok", false)), rep.Events)
}
