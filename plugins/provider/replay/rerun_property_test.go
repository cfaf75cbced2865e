package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/plugins/compaction"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// echoTool answers with its name and arguments.
type echoTool struct {
	name   string
	cancel func()
}

// Spec: alpha and beta are idempotent, so a continuation runs their
// calls a crash left unknown again; gamma's stay unknown.
func (e echoTool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: e.name, Description: "echoes " + e.name,
		Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`), Idempotent: e.name != "gamma"}
}

func (e echoTool) Execute(_ context.Context, args json.RawMessage) (string, error) {
	if bytes.Contains(args, []byte(`"x":14`)) && e.cancel != nil {
		e.cancel() // the user interrupts the turn while this call runs
	}
	if bytes.Contains(args, []byte(`"x":13`)) {
		return "", &agentloop.ToolError{Code: "UNLUCKY", Message: "13"}
	}
	return e.name + ":" + string(args), nil
}

// ConcurrencySafe: alpha's calls of a step run as one batch.
func (e echoTool) ConcurrencySafe() bool { return e.name == "alpha" }

// guard is a policy plugin whose veto ends the turn (reason blocked).
type guard struct{}

func (guard) Name() string { return "guard" }
func (guard) Apply(c *bus.Context, _ any) error {
	bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		if cm, ok := d.Payload.(live.Commit); ok && cm.Record().Type() == session.TypeToolCall &&
			bytes.Contains(cm.Record().Data(), []byte(`"name":"gamma"`)) && bytes.Contains(cm.Record().Data(), []byte(`11`)) {
			return errors.New("over budget")
		}
		return nil
	})
	return nil
}

var toolNames = []string{"alpha", "beta", "gamma"}

// swappable is the provider of a recording world: the script of the turn
// being run.
type swappable struct {
	cur     agentloop.Provider
	abortAt int // the step whose stream the user interrupts (0: none)
	cancel  func()
}

func (s *swappable) Name() string { return "scripted" }
func (s *swappable) Stream(ctx context.Context, r *agentloop.Request) (agentloop.Stream, error) {
	inner, err := s.cur.Stream(ctx, r)
	if err != nil || s.abortAt == 0 || r.Step != s.abortAt {
		return inner, err
	}
	// The user interrupts the turn after the first chunk of this step.
	return func(yield func(agentloop.Chunk, error) bool) {
		for c, err := range inner {
			ok := yield(c, err)
			s.cancel()
			if !ok || err != nil {
				return
			}
		}
	}, nil
}

// generator drives the real loop on a bus with the invariants plugin
// strict, through random turns: tool services provided and withdrawn
// between steps (a hot reload, an MCP list change), new agents with
// another config (a reloaded agent plugin), compaction between turns,
// approvals asked and decided, processes that die mid-turn (their turn
// closed by crash repair) and continuation turns, and forks.
type generator struct {
	t     *rapid.T
	ctx   context.Context
	c     *bus.Context
	mgr   *live.Manager
	prov  *swappable
	agent *agentloop.Agent
	tools map[string]func() // withdraw, by name of a provided tool
	// change is the tool set to switch to after a step/end of the turn
	// being run, by step.
	change map[int][]bool
	dying  bool   // the process of the turn being run dies in it
	cancel func() // interrupts the turn being run
}

func (g *generator) setTools(on []bool) {
	for i, name := range toolNames {
		w, has := g.tools[name]
		switch {
		case on[i] && !has:
			w, err := agentloop.ProvideTool(g.c, echoTool{name: name, cancel: func() {
				if g.cancel != nil {
					g.cancel()
				}
			}})
			if err != nil {
				g.t.Fatalf("provide %s: %v", name, err)
			}
			g.tools[name] = w
		case !on[i] && has:
			w()
			delete(g.tools, name)
		}
	}
}

func (g *generator) newAgent() {
	if g.agent != nil {
		_ = g.agent.Close()
	}
	cfg := agentloop.Config{
		System:   rapid.SampledFrom([]string{"", "be brief", "be careful"}).Draw(g.t, "system"),
		Model:    rapid.SampledFrom([]string{"m1", "m2"}).Draw(g.t, "model"),
		MaxSteps: rapid.IntRange(1, 4).Draw(g.t, "max_steps"),
	}
	if rapid.Bool().Draw(g.t, "temperature") {
		v := 0.5
		cfg.Temperature = &v
	}
	g.agent = agentloop.New(g.c, cfg, agentloop.WithProvider(g.prov), agentloop.WithBackoff(func(int, *agentloop.ProviderError) time.Duration { return 0 }))
}

// script draws the replies of one turn.
func (g *generator) script() []scripted.Reply {
	n := rapid.IntRange(1, 4).Draw(g.t, "replies")
	out := make([]scripted.Reply, n)
	for i := range out {
		r := scripted.Reply{Text: rapid.SampledFrom([]string{"", "ok", "let me see", "done"}).Draw(g.t, "text")}
		if i < n-1 || rapid.Bool().Draw(g.t, "last calls") {
			for range rapid.IntRange(0, 2).Draw(g.t, "calls") {
				r.ToolCalls = append(r.ToolCalls, scripted.ToolCall{
					Name:      rapid.SampledFrom(append(toolNames, "missing")).Draw(g.t, "tool"),
					Arguments: map[string]any{"x": rapid.IntRange(10, 14).Draw(g.t, "x")}, // 13 fails, 14 interrupts
				})
			}
		}
		if rapid.IntRange(0, 9).Draw(g.t, "fails") == 0 {
			r.Error = &scripted.Failure{Message: "model down"}
		}
		if r.Text == "" && len(r.ToolCalls) == 0 {
			r.Text = "empty"
		}
		out[i] = r
	}
	return out
}

func (g *generator) useScript(replies []scripted.Reply) {
	p, err := scripted.New(scripted.Config{Script: replies})
	if err != nil {
		g.t.Fatalf("scripted: %v", err)
	}
	g.prov.cur = p
}

// turn runs one turn (or a continuation) on sess, deciding what it asks
// until it ends.
func (g *generator) turn(sess *live.Session, cont bool) {
	g.useScript(g.script())
	g.change = map[int][]bool{}
	for step := range rapid.IntRange(0, 3).Draw(g.t, "tool changes") {
		g.change[step+1] = rapid.SliceOfN(rapid.Bool(), len(toolNames), len(toolNames)).Draw(g.t, "tools")
	}
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	g.cancel, g.prov.cancel = cancel, cancel
	g.prov.abortAt = 0
	if rapid.IntRange(0, 5).Draw(g.t, "interrupt") == 0 {
		g.prov.abortAt = rapid.IntRange(1, 3).Draw(g.t, "interrupt at step")
	}
	var err error
	if cont {
		_, err = g.agent.Continue(ctx, sess)
	} else {
		_, err = g.agent.Run(ctx, sess, rapid.SampledFrom(prompts).Draw(g.t, "prompt"))
	}
	g.cancel, g.prov.abortAt = nil, 0
	if !g.dying {
		g.settle(sess, err)
	}
	g.change = nil
}

// settle decides what a suspended turn asks until it ends.
func (g *generator) settle(sess *live.Session, err error) {
	for errors.Is(err, agentloop.ErrSuspended) {
		// One at a time: a session-scoped allow decides the calls it covers.
		for s := session.Suspended(sess.Records()); s != nil && len(s.Undecided()) > 0; s = session.Suspended(sess.Records()) {
			c := s.Undecided()[0]
			d := agentloop.Decision{Allow: rapid.Bool().Draw(g.t, "allow"), By: "ann"}
			if d.Allow && rapid.Bool().Draw(g.t, "always") {
				d.Scope = session.ScopeSession
			}
			if _, err := agentloop.Decide(g.ctx, sess, c.Call.ID, d); err != nil {
				g.t.Fatalf("decide: %v", err)
			}
		}
		if rapid.Bool().Draw(g.t, "resume elsewhere") {
			g.newAgent() // `vigil approve` from another process
		}
		_, err = g.agent.Resume(g.ctx, sess)
	}
}

// crash runs a turn (a continuation when cont) whose process dies after
// a few events, or while a tool runs (before its result, or its
// retry's outcome, is logged), then closes it as crash repair does when
// the session is next opened.
func (g *generator) crash(sess *live.Session, cont bool) {
	at := int64(sess.Len() + rapid.IntRange(1, 12).Draw(g.t, "crash after"))
	midTool := rapid.Bool().Draw(g.t, "crash while a tool runs")
	if midTool {
		at = math.MaxInt64
	}
	dispose := bus.Veto.On(g.c, func(_ context.Context, d bus.Dispatch) error {
		cm, ok := d.Payload.(live.Commit)
		if !ok || cm.Session() != sess {
			return nil
		}
		if t := cm.Record().Type(); midTool && (t == session.TypeToolResult || t == session.TypeToolReconcile) {
			at = min(at, cm.Record().Seq())
		}
		if cm.Record().Seq() >= at {
			return errors.New("the process died")
		}
		return nil
	})
	g.dying = true
	g.turn(sess, cont)
	g.dying = false
	dispose()
	for _, ev := range session.Closers(sess.Records()) {
		if _, err := sess.Append(g.ctx, ev); err != nil {
			g.t.Fatalf("repair: %v", err)
		}
	}
	g.newAgent() // the next process
	if session.Suspended(sess.Records()) != nil {
		// It died waiting for a decision: not a crash, the turn goes on.
		g.settle(sess, agentloop.ErrSuspended)
	}
}

// lastTurnEnd returns whether the last turn ended interrupted.
func interrupted(sess *live.Session) bool {
	for r := range sess.Backward() {
		if r.Type() == session.TypeTurnEnd {
			e, _ := session.DecodeData[session.TurnEnd](r)
			return e.Reason == session.ReasonInterrupted
		}
		if r.Type() == session.TypeTurnStart {
			return false
		}
	}
	return false
}

func quietRoot() *bus.Root {
	root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: io.Discard})))
	return root
}

// genSession records one random session and returns its log.
func genSession(t *rapid.T) []session.Record {
	ctx := context.Background()
	root := quietRoot()
	defer root.Dispose()
	c := root.Context()
	if _, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	g := &generator{t: t, ctx: ctx, c: c, mgr: live.NewManager(c, memory.New()), prov: &swappable{}, tools: map[string]func(){}}
	if rapid.Bool().Draw(t, "approvals") {
		if _, err := c.Plugin(approvals.Plugin, &approvals.Config{Rules: []approvals.Rule{
			{Tool: "beta", Action: "ask", Reason: "beta needs a yes"},
			{Tool: "gamma", Arguments: "12", Action: "deny", Reason: "not 12"},
		}}); err != nil {
			t.Fatalf("approvals: %v", err)
		}
	}
	if rapid.IntRange(0, 3).Draw(t, "budget") == 0 {
		// The real budget plugin: token limits cap max_tokens and end
		// turns, repeated calls end them (no wall clock: the generator's
		// steps take no time).
		cfg := &budget.Config{
			Session:    budget.Limits{Tokens: rapid.SampledFrom([]int{0, 40, 120}).Draw(t, "session tokens")},
			Turn:       budget.TurnLimits{Tokens: rapid.SampledFrom([]int{0, 8, 20}).Draw(t, "turn tokens")},
			MaxRepeats: rapid.SampledFrom([]int{-1, 1, 2}).Draw(t, "max repeats"),
		}
		if _, err := c.Plugin(budget.Plugin, cfg); err != nil {
			t.Fatalf("budget: %v", err)
		}
	}
	if rapid.Bool().Draw(t, "guard") {
		// A policy that ends a turn: it refuses gamma's calls with x 11.
		if _, err := c.Plugin(guard{}, nil); err != nil {
			t.Fatalf("guard: %v", err)
		}
	}
	live.Committed.On(c, func(_ context.Context, cm live.Commit) error {
		if cm.Record().Type() == session.TypeStepEnd && g.change != nil {
			if on, ok := g.change[cm.Record().Step()]; ok {
				g.setTools(on) // a hot reload between two steps of a turn
			}
		}
		return nil
	})
	g.setTools(rapid.SliceOfN(rapid.Bool(), len(toolNames), len(toolNames)).Draw(t, "tools"))
	g.newAgent()
	sess, err := g.mgr.Create(ctx)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	for range rapid.IntRange(1, 5).Draw(t, "turns") {
		switch rapid.IntRange(0, 9).Draw(t, "between") {
		case 0, 1:
			g.newAgent() // the agent plugin reloaded with another config
		case 2:
			g.setTools(rapid.SliceOfN(rapid.Bool(), len(toolNames), len(toolNames)).Draw(t, "tools"))
		case 3:
			g.compact(sess)
		case 6:
			g.reconcile(sess)
		case 4, 5:
			if ends := turnEnds(sess); len(ends) > 0 {
				at := rapid.SampledFrom(ends).Draw(t, "fork at")
				child, err := g.mgr.Fork(ctx, sess.ID(), at)
				if err != nil {
					t.Fatalf("fork at %d: %v", at, err)
				}
				sess = child
			}
		}
		switch {
		case interrupted(sess) && rapid.IntRange(0, 2).Draw(t, "continue") > 0:
			if rapid.IntRange(0, 3).Draw(t, "crash the continuation") == 0 {
				g.crash(sess, true)
			} else {
				g.turn(sess, true)
			}
		case rapid.IntRange(0, 3).Draw(t, "crash") == 0:
			g.crash(sess, false)
		default:
			g.turn(sess, false)
		}
	}
	_ = g.agent.Close()
	return sess.Records()
}

// reconcile logs, between turns, a person's outcome of a call whose
// outcome is unknown, if there is one.
func (g *generator) reconcile(sess *live.Session) {
	type unknown struct {
		id, name string
		result   int64
	}
	var open []unknown
	for _, r := range sess.Records() {
		switch r.Type() {
		case session.TypeToolResult:
			if res, _ := session.DecodeData[session.ToolResult](r); res.Error != nil && res.Error.Code == session.CodeToolOutcomeUnknown {
				open = append(open, unknown{res.ID, res.Name, r.Seq()})
			}
		case session.TypeToolReconcile:
			rc, _ := session.DecodeData[session.ToolReconcile](r)
			open = slices.DeleteFunc(open, func(u unknown) bool { return u.id == rc.ID })
		}
	}
	if len(open) == 0 {
		return
	}
	u := rapid.SampledFrom(open).Draw(g.t, "reconcile")
	rc := session.ToolReconcile{ID: u.id, Name: u.name, Content: "the ledger says done", By: "ann"}
	if rapid.Bool().Draw(g.t, "reconciled failed") {
		rc = session.ToolReconcile{ID: u.id, Name: u.name, Error: &session.ToolResultError{Code: session.CodeToolError, Message: "it did not happen"}, By: "ann"}
	}
	if _, err := sess.Append(g.ctx, session.Event{Type: session.TypeToolReconcile, Sources: []int64{u.result}, Data: rc}); err != nil {
		g.t.Fatalf("reconcile: %v", err)
	}
}

func (g *generator) compact(sess *live.Session) {
	k, err := compaction.New(g.c, compaction.Config{MaxMessages: 3, Keep: 1})
	if err != nil {
		g.t.Fatalf("compaction: %v", err)
	}
	p, err := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "a summary"}}})
	if err != nil {
		g.t.Fatalf("scripted: %v", err)
	}
	h, _ := sess.Header()
	if _, err := k.Compact(g.ctx, sess, p, h); err != nil {
		g.t.Fatalf("compact: %v", err)
	}
}

func turnEnds(sess *live.Session) []int64 {
	var out []int64
	for _, r := range sess.Records() {
		if r.Type() == session.TypeTurnEnd {
			out = append(out, r.Seq())
		}
	}
	return out
}

func encodeRecords(recs []session.Record) []byte {
	out := session.AppendHeaderLine(nil, session.Info{ID: "01M8MM3F3QXQNVZ1VTD7ENJERQ"})
	for _, r := range recs {
		out = r.AppendLine(out)
	}
	return out
}

// TestRunReplaysEveryValidSession: every session the real loop records —
// whatever its header and tool changes, compactions, approvals, crashes,
// continuations and forks — passes verify and replays identically: each
// step re-run with the header and tools in force then, through the real
// loop and the invariants plugin, sends the request it recorded. Run
// with -rapid.checks=10000 for the full property.
func TestRunReplaysEveryValidSession(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := genSession(t)
		root := quietRoot()
		defer root.Dispose()
		rr := rerunIdentically(t, root.Context(), recs)
		sameEvents(t, recs, rr.Session.Records())
	})
}

// sameEvents checks the rerun's determinism: it logs the recorded events
// recs, the same data in the same order (the fork's session/end-seed and
// ignorable records aside, which it skips; after the seed, a
// session-rule decision cites a seq one lower).
func sameEvents(t fataler, recs, got []session.Record) {
	t.Helper()
	k, seeded := 0, false
	for _, r := range recs {
		if r.Ignorable() {
			continue
		}
		if r.Type() == session.TypeEndSeed {
			seeded = true
			continue
		}
		if seeded && r.Type() == session.TypeApprovalDecision {
			d, _ := session.DecodeData[session.ApprovalDecision](r)
			if d.Cites > 0 && k < len(got) && got[k].Type() == r.Type() {
				k++
				continue
			}
		}
		if k >= len(got) {
			t.Fatalf("the rerun stopped before seq %d\n%s", r.Seq(), dump(recs))
		}
		g := got[k]
		k++
		if g.Type() != r.Type() || g.Turn() != r.Turn() || g.Step() != r.Step() || (!bytes.Equal(g.Data(), r.Data()) && r.Type() != session.TypeRequestHeader) {
			t.Fatalf("seq %d: recorded %s %s, replayed %s %s\n%s\nreplayed:\n%s", r.Seq(), r.Type(), r.Data(), g.Type(), g.Data(), dump(recs), dump(got))
		}
	}
	if k != len(got) {
		t.Fatalf("the rerun logged %d events, the recording %d", len(got), k)
	}
}

// fataler is what the checks need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// withIgnorable returns recs with ignorable plugin records inserted at
// random places (inside steps, between turns, first, last), each with a
// random turn and step and citing a random earlier record, and every
// seq a record names renumbered.
func withIgnorable(t *rapid.T, recs []session.Record) []session.Record {
	type slot struct {
		r   session.Record // zero: an inserted record
		ev  session.Event
		cut int64 // the seq an inserted record cites, -1 for none
	}
	var slots []slot
	for _, r := range recs {
		slots = append(slots, slot{r: r})
	}
	for n := rapid.IntRange(1, 6).Draw(t, "ignorable records"); n > 0; n-- {
		at := rapid.IntRange(0, len(slots)).Draw(t, "at")
		ev := session.Event{Type: "memo/note", Ignorable: true, Data: map[string]any{"n": n}}
		if at > 0 && rapid.Bool().Draw(t, "in scope") {
			if prev := slots[at-1]; !prev.r.IsZero() {
				ev.Turn, ev.Step = prev.r.Turn(), prev.r.Step()
			}
		}
		cite := int64(-1)
		if at > 0 && rapid.Bool().Draw(t, "cites") {
			cite = int64(rapid.IntRange(0, at-1).Draw(t, "cited"))
		}
		slots = append(slots[:at], append([]slot{{ev: ev, cut: cite}}, slots[at:]...)...)
	}
	// The new seq of each recorded seq, and of each slot.
	remap := map[int64]int64{}
	for i, sl := range slots {
		if !sl.r.IsZero() {
			remap[sl.r.Seq()] = int64(i)
		}
	}
	out := make([]session.Record, len(slots))
	for i, sl := range slots {
		ev := sl.ev
		if r := sl.r; !r.IsZero() {
			ev = session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Ignorable: r.Ignorable(), Data: json.RawMessage(r.Data())}
			for _, src := range r.Sources() {
				ev.Sources = append(ev.Sources, remap[src])
			}
			if sf := r.Surface(); sf.Op == session.OpReplace {
				sf.Start, sf.End = remap[sf.Start], remap[sf.End]
				ev.Surface = &sf
			}
			if d, err := session.DecodeData[session.ApprovalDecision](r); err == nil && r.Type() == session.TypeApprovalDecision && d.Cites != 0 {
				d.Cites = remap[d.Cites]
				ev.Data = d
			}
		} else if sl.cut >= 0 {
			ev.Sources = []int64{sl.cut}
		}
		rec, err := session.NewRecord(int64(i), time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), ev)
		if err != nil {
			t.Fatalf("seq %d: %v", i, err)
		}
		out[i] = rec
	}
	return out
}

// TestRunReplaysEveryValidSessionWithIgnorableRecords: ignorable plugin
// records may stand anywhere in a log (inside a step, between turns),
// and a reader without their plugin skips them: a session that verifies
// with them still verifies, replays identically, and compares the same
// steps as without them.
func TestRunReplaysEveryValidSessionWithIgnorableRecords(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		plain := genSession(t)
		root := quietRoot()
		defer root.Dispose()
		rr := rerunIdentically(t, root.Context(), withIgnorable(t, plain))
		want := 0
		for _, r := range plain {
			if r.Type() == session.TypeRequestDigest {
				want++
			}
		}
		if len(rr.Steps) != want {
			t.Fatalf("%d steps compared, the log has %d requests", len(rr.Steps), want)
		}
	})
}

// rerunIdentically checks that the log recs verifies, and runs it again
// on c with the invariants plugin strict: it must follow the recording
// and send every request it recorded.
func rerunIdentically(t fataler, c *bus.Context, recs []session.Record) *replay.Rerun {
	t.Helper()
	rep, err := invariants.Verify(bytes.NewReader(encodeRecords(recs)))
	if err != nil || len(rep.Violations) > 0 {
		t.Fatalf("the log fails verify: %v %v\n%s", err, rep, dump(recs))
	}
	if _, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	rr, err := replay.Run(context.Background(), c, live.NewManager(c, memory.New()), recs)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, dump(recs))
	}
	for _, err := range rr.Errors {
		var ie *invariants.InvariantError
		if errors.As(err, &ie) || errors.Is(err, replay.ErrDiverged) || errors.Is(err, replay.ErrExhausted) {
			t.Fatalf("replay: %v\n%s\nreplayed:\n%s", err, dump(recs), dump(rr.Session.Records()))
		}
	}
	for _, s := range rr.Steps {
		if !s.Same {
			t.Fatalf("turn %d step %d: recorded %s, replayed %s\n%s", s.Turn, s.Step, s.Recorded, s.Replayed, dump(recs))
		}
	}
	return rr
}

func dump(recs []session.Record) string {
	var b bytes.Buffer
	for _, r := range recs {
		fmt.Fprintf(&b, "%d t%d s%d %s %s\n", r.Seq(), r.Turn(), r.Step(), r.Type(), r.Data())
	}
	return b.String()
}

var _ = require.NoError
