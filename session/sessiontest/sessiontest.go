// Package sessiontest is the conformance suite every [session.Store] must
// pass:
//
//	func TestStore(t *testing.T) {
//		sessiontest.Run(t, func(t *testing.T) session.Store { return mystore.New(t.TempDir()) })
//	}
//
// newStore is called once per subtest and must return an empty store;
// the suite closes it (if it is an io.Closer) when the subtest ends.
//
// Stores with the optional capabilities pass their suites too: [RunQueue]
// for a [session.Queue], [RunFollow] for a [session.Follower],
// [RunFencing] for a [session.Fencer]. Those take
// a backing that several handles open at once, as several processes
// sharing the store would.
package sessiontest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Run runs the suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s session.Store)
	}{
		{"CreateThenLoadGivesHeaderAndNoRecords", testCreateLoad},
		{"HeaderKeepsTenantAndCreator", testOwner},
		{"InfoReadsTheHeaderAsLoadDoes", testInfo},
		{"CreateExistingIDIsErrExists", testCreateExisting},
		{"InvalidIDIsRefused", testInvalidID},
		{"UnknownIDIsErrNotFound", testUnknown},
		{"AppendedRecordsLoadByteForByte", testRoundTrip},
		{"AppendInBatchesAccumulates", testBatches},
		{"AppendAtWrongSeqIsErrConflict", testConflict},
		{"AppendWithSeqGapOrDuplicateAppendsNothing", testBadSeqs},
		{"ConcurrentAppendersAtSameSeqOneWins", testOptimistic},
		{"ConcurrentSessionsDoNotInterfere", testConcurrentSessions},
		{"ListIsSortedByID", testList},
		{"ForkCopiesPrefixAndTail", testFork},
		{"ForkAtMinusOneInheritsNothing", testForkEmpty},
		{"ForkErrors", testForkErrors},
		{"ForkAndParentGrowIndependently", testForkIndependent},
		{"FlushThenLoadSeesEverything", testFlush},
		{"ReleaseThenAppendAgain", testRelease},
		{"ManagerRoundTrip", testManager},
		{"WritingWhatItReturnsRewritesNoHistory", testReturnsAreCopies},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			require.NotNil(t, s)
			if cl, ok := s.(io.Closer); ok {
				t.Cleanup(func() { assert.NoError(t, cl.Close()) })
			}
			c.fn(t, s)
		})
	}
}

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

func info(id string) session.Info {
	return session.Info{ID: id, Version: session.Version, Created: epoch}
}

// Turn returns the records of one complete turn starting at seq next: a
// user message, a step with a streamed assistant message calling a tool,
// the tool's result, and a final step answering. Every core payload shape
// appears in it.
func Turn(t testing.TB, next int64, turn int) []session.Record {
	t.Helper()
	temp := 0.2
	evs := []session.Event{
		{Type: session.TypeTurnStart, Turn: turn},
		{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: fmt.Sprintf("question %d <&>\n\"quoted\" é \u2028", turn)}},
		{Type: session.TypeStepStart, Turn: turn, Step: 1},
		{Type: session.TypeRequestHeader, Turn: turn, Step: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: session.Header{
			Provider: "scripted", Model: "m", System: "be brief", Temperature: &temp, MaxTokens: 64, Stop: []string{"\n\n"},
			Tools: []session.ToolSpec{{Name: "list_dir", Description: "list", Parameters: []byte(`{"type":"object"}`)}},
		}}},
		{Type: session.TypeRequestDigest, Turn: turn, Step: 1, Data: session.Digest{SHA256: "00", Messages: 1}},
		{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{Reasoning: "look"}},
		{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{Index: 0, ID: fmt.Sprintf("call_%d", turn), Name: "list_dir", Arguments: `{"path":"."}`}}},
		{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{next + 5, next + 6}, Data: session.AssistantMessage{Reasoning: "look", ToolCalls: []session.ToolCall{{ID: fmt.Sprintf("call_%d", turn), Name: "list_dir", Arguments: `{"path":"."}`}}}},
		{Type: session.TypeToolCall, Turn: turn, Step: 1, Data: session.ToolCall{ID: fmt.Sprintf("call_%d", turn), Name: "list_dir", Arguments: `{"path":"."}`}},
		{Type: session.TypeToolStart, Turn: turn, Step: 1, Data: session.ToolStart{ID: fmt.Sprintf("call_%d", turn)}},
		{Type: session.TypeToolResult, Turn: turn, Step: 1, Sources: []int64{next + 8}, Data: session.ToolResult{ID: fmt.Sprintf("call_%d", turn), Name: "list_dir", Content: "a.txt"}},
		{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishToolCalls, Usage: &session.Usage{Input: 10, Output: 5}}},
		{Type: session.TypeStepStart, Turn: turn, Step: 2},
		{Type: session.TypeAssistantChunk, Turn: turn, Step: 2, Data: session.AssistantChunk{Text: "a.txt"}},
		{Type: session.TypeAssistantMessage, Turn: turn, Step: 2, Sources: []int64{next + 13}, Data: session.AssistantMessage{Content: "a.txt"}},
		{Type: session.TypeStepEnd, Turn: turn, Step: 2, Data: session.StepEnd{Finish: session.FinishStop}},
		{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
	}
	out := make([]session.Record, len(evs))
	for i, ev := range evs {
		r, err := session.NewRecord(next+int64(i), epoch.Add(time.Duration(next+int64(i))*time.Millisecond), ev)
		require.NoError(t, err)
		out[i] = r
	}
	return out
}

func requireSameRecords(t *testing.T, want, got []session.Record) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, string(want[i].Bytes()), string(got[i].Bytes()), "record %d", i)
		require.Equal(t, want[i].Seq(), got[i].Seq())
		require.True(t, want[i].Time().Equal(got[i].Time()))
	}
}

func testCreateLoad(t *testing.T, s session.Store) {
	ctx := context.Background()
	in := info("s1")
	require.NoError(t, s.Create(ctx, in))
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, "s1", log.Info.ID)
	assert.Equal(t, session.Version, log.Info.Version)
	assert.True(t, epoch.Equal(log.Info.Created), "created %v", log.Info.Created)
	assert.Nil(t, log.Info.Parent)
	assert.Empty(t, log.Records)
	assert.Zero(t, log.Torn)
}

// owned stores the logs the owner tests read: p, of tenant acme made by
// alice, with a turn; f, its fork made by bob; plain, with no owner. It
// returns each one's tenant and creator.
func owned(t *testing.T, s session.Store) map[string][2]string {
	ctx := context.Background()
	p := info("p")
	p.Tenant, p.By = "acme", "alice@example.com"
	require.NoError(t, s.Create(ctx, p))
	require.NoError(t, s.Append(ctx, "p", 0, Turn(t, 0, 1)))
	f := info("f")
	f.Tenant, f.By, f.Parent = "acme", "bob", &session.Parent{ID: "p", Seq: 16}
	require.NoError(t, s.Fork(ctx, f, []session.Record{endSeed(t, 17)}))
	require.NoError(t, s.Create(ctx, info("plain")))
	return map[string][2]string{"p": {"acme", "alice@example.com"}, "f": {"acme", "bob"}, "plain": {"", ""}}
}

// testOwner checks that a header's tenant and creator round-trip through
// Create, Fork, Load and List, and that a header without them stays
// without them.
func testOwner(t *testing.T, s session.Store) {
	ctx := context.Background()
	want := owned(t, s)
	for id, w := range want {
		log, err := s.Load(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, w, [2]string{log.Info.Tenant, log.Info.By}, "load %s", id)
	}
	infos, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 3)
	for _, in := range infos {
		assert.Equal(t, want[in.ID], [2]string{in.Tenant, in.By}, "list %s", in.ID)
	}
}

// testInfo checks a [session.InfoReader]: the header it reads is the one
// Load gives, and an unknown or invalid id is refused as Load refuses it.
func testInfo(t *testing.T, s session.Store) {
	r, ok := s.(session.InfoReader)
	if !ok {
		t.Skipf("%T reads no header alone", s)
	}
	ctx := context.Background()
	for id := range owned(t, s) {
		log, err := s.Load(ctx, id)
		require.NoError(t, err)
		got, err := r.Info(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, log.Info, got, id)
	}
	_, err := r.Info(ctx, "nosuch")
	require.ErrorIs(t, err, session.ErrNotFound)
	_, err = r.Info(ctx, "../x")
	require.Error(t, err)
}

func testCreateExisting(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	require.ErrorIs(t, s.Create(ctx, info("s1")), session.ErrExists)
}

func testInvalidID(t *testing.T, s session.Store) {
	ctx := context.Background()
	for _, id := range []string{"", "../x", "a/b", "a b", "."} {
		require.ErrorIs(t, s.Create(ctx, info(id)), session.ErrInvalidID, "id %q", id)
	}
}

func testUnknown(t *testing.T, s session.Store) {
	ctx := context.Background()
	_, err := s.Load(ctx, "nope")
	require.ErrorIs(t, err, session.ErrNotFound)
	require.ErrorIs(t, s.Append(ctx, "nope", 0, Turn(t, 0, 1)), session.ErrNotFound)
}

func testRoundTrip(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := append(Turn(t, 0, 1), Turn(t, 17, 2)...)
	require.NoError(t, s.Append(ctx, "s1", 0, recs))
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	requireSameRecords(t, recs, log.Records)
	want, err := session.DeriveMessages(recs)
	require.NoError(t, err)
	got, err := session.DeriveMessages(log.Records)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func testBatches(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	for i, r := range recs {
		require.NoError(t, s.Append(ctx, "s1", int64(i), []session.Record{r}))
	}
	require.NoError(t, s.Append(ctx, "s1", int64(len(recs)), nil), "an empty batch is fine")
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	requireSameRecords(t, recs, log.Records)
}

func testConflict(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:3]))
	require.ErrorIs(t, s.Append(ctx, "s1", 0, recs[:3]), session.ErrConflict)
	require.ErrorIs(t, s.Append(ctx, "s1", 5, recs[5:]), session.ErrConflict)
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	requireSameRecords(t, recs[:3], log.Records)
}

func testBadSeqs(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	require.ErrorIs(t, s.Append(ctx, "s1", 0, []session.Record{recs[0], recs[2]}), session.ErrSeqGap)
	require.ErrorIs(t, s.Append(ctx, "s1", 0, []session.Record{recs[0], recs[0]}), session.ErrDuplicateSeq)
	require.ErrorIs(t, s.Append(ctx, "s1", 0, []session.Record{recs[1]}), session.ErrSeqGap)
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	require.Empty(t, log.Records)
	require.NoError(t, s.Append(ctx, "s1", 0, recs))
}

func testOptimistic(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = s.Append(ctx, "s1", 0, recs[:2]) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else {
			require.ErrorIs(t, err, session.ErrConflict)
		}
	}
	require.Equal(t, 1, wins)
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	requireSameRecords(t, recs[:2], log.Records)
}

func testConcurrentSessions(t *testing.T, s session.Store) {
	ctx := context.Background()
	const n = 6
	var wg sync.WaitGroup
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		require.NoError(t, s.Create(ctx, info(id)))
		wg.Go(func() {
			next := int64(0)
			for turn := 1; turn <= 3; turn++ {
				recs := Turn(t, next, turn)
				for _, r := range recs {
					assert.NoError(t, s.Append(ctx, id, next, []session.Record{r}))
					next++
				}
			}
		})
	}
	wg.Wait()
	for i := range n {
		log, err := s.Load(ctx, fmt.Sprintf("s%d", i))
		require.NoError(t, err)
		require.Len(t, log.Records, 51)
		require.NoError(t, session.Validate(log.Records))
	}
}

func testList(t *testing.T, s session.Store) {
	ctx := context.Background()
	list, err := s.List(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
	for _, id := range []string{"b", "c", "a"} {
		require.NoError(t, s.Create(ctx, info(id)))
	}
	require.NoError(t, s.Append(ctx, "a", 0, Turn(t, 0, 1)))
	fork := info("d")
	fork.Parent = &session.Parent{ID: "a", Seq: 16}
	require.NoError(t, s.Fork(ctx, fork, nil))
	list, err = s.List(ctx)
	require.NoError(t, err)
	ids := make([]string, len(list))
	for i, in := range list {
		ids[i] = in.ID
	}
	require.Equal(t, []string{"a", "b", "c", "d"}, ids)
	require.Equal(t, &session.Parent{ID: "a", Seq: 16}, list[3].Parent)
	require.True(t, epoch.Equal(list[0].Created))
}

func endSeed(t *testing.T, seq int64) session.Record {
	r, err := session.NewRecord(seq, epoch, session.Event{Type: session.TypeEndSeed})
	require.NoError(t, err)
	return r
}

func testFork(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("p")))
	recs := append(Turn(t, 0, 1), Turn(t, 17, 2)...)
	require.NoError(t, s.Append(ctx, "p", 0, recs))
	child := info("c")
	child.Parent = &session.Parent{ID: "p", Seq: 16}
	require.NoError(t, s.Fork(ctx, child, []session.Record{endSeed(t, 17)}))
	log, err := s.Load(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, &session.Parent{ID: "p", Seq: 16}, log.Info.Parent)
	requireSameRecords(t, append(recs[:17:17], endSeed(t, 17)), log.Records)
	parent, err := s.Load(ctx, "p")
	require.NoError(t, err)
	requireSameRecords(t, recs, parent.Records)
}

func testForkEmpty(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("p")))
	require.NoError(t, s.Append(ctx, "p", 0, Turn(t, 0, 1)))
	child := info("c")
	child.Parent = &session.Parent{ID: "p", Seq: -1}
	require.NoError(t, s.Fork(ctx, child, []session.Record{endSeed(t, 0)}))
	log, err := s.Load(ctx, "c")
	require.NoError(t, err)
	requireSameRecords(t, []session.Record{endSeed(t, 0)}, log.Records)
}

func testForkErrors(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("p")))
	require.NoError(t, s.Append(ctx, "p", 0, Turn(t, 0, 1)))
	require.NoError(t, s.Create(ctx, info("taken")))
	fork := func(id, parent string, at int64, tail ...session.Record) error {
		in := info(id)
		in.Parent = &session.Parent{ID: parent, Seq: at}
		return s.Fork(ctx, in, tail)
	}
	require.ErrorIs(t, fork("c", "nope", 0), session.ErrNotFound)
	require.ErrorIs(t, fork("c", "p", 17), session.ErrSeqGap)
	require.ErrorIs(t, fork("taken", "p", 16), session.ErrExists)
	require.ErrorIs(t, fork("c", "p", 16, endSeed(t, 18)), session.ErrSeqGap)
	require.ErrorIs(t, fork("../c", "p", 16), session.ErrInvalidID)
	_, err := s.Load(ctx, "c")
	require.ErrorIs(t, err, session.ErrNotFound, "a failed fork leaves nothing")
}

func testForkIndependent(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("p")))
	recs := Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "p", 0, recs))
	child := info("c")
	child.Parent = &session.Parent{ID: "p", Seq: 16}
	require.NoError(t, s.Fork(ctx, child, []session.Record{endSeed(t, 17)}))
	require.NoError(t, s.Append(ctx, "p", 17, Turn(t, 17, 2)))
	require.NoError(t, s.Append(ctx, "c", 18, Turn(t, 18, 2)))
	p, err := s.Load(ctx, "p")
	require.NoError(t, err)
	c, err := s.Load(ctx, "c")
	require.NoError(t, err)
	require.Len(t, p.Records, 34)
	require.Len(t, c.Records, 35)
	require.Equal(t, session.TypeEndSeed, c.Records[17].Type())
}

func testFlush(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	// Stop mid-step, where a buffering store has not synced yet.
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:7]))
	if f, ok := s.(session.Flusher); ok {
		require.NoError(t, f.Flush(ctx, "s1"))
		require.ErrorIs(t, f.Flush(ctx, "nope"), session.ErrNotFound)
	}
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	requireSameRecords(t, recs[:7], log.Records)
}

func testRelease(t *testing.T, s session.Store) {
	r, ok := s.(session.Releaser)
	if !ok {
		t.Skip("the store holds no writers")
	}
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:7]))
	require.NoError(t, r.Release("s1"))
	require.NoError(t, r.Release("s1"), "releasing twice is fine")
	require.NoError(t, s.Append(ctx, "s1", 7, recs[7:]))
	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	requireSameRecords(t, recs, log.Records)
}

func testManager(t *testing.T, s session.Store) {
	ctx := context.Background()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), s, live.WithClock(func() time.Time { return epoch }))
	sess, err := m.Create(ctx)
	require.NoError(t, err)
	for _, r := range Turn(t, 0, 1) {
		ev := session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Sources: r.Sources(), Data: r.Data()}
		_, err := sess.Append(ctx, ev)
		require.NoError(t, err)
	}
	want := sess.Messages()
	require.Len(t, want, 4)
	require.NoError(t, sess.Close(ctx))

	m2 := live.NewManager(root.Context(), s)
	again, err := m2.Open(ctx, sess.ID())
	require.NoError(t, err)
	require.Equal(t, want, again.Messages())
	requireSameRecords(t, sess.Records(), again.Records())

	fork, err := m2.Fork(ctx, sess.ID(), 16)
	require.NoError(t, err)
	require.Equal(t, want, fork.Messages())
	require.NoError(t, m2.Close(ctx))
}

// testReturnsAreCopies writes every list of records the store hands out
// or was handed, and every record's bytes: the stored history is what
// was appended. Records cannot be written at all (they are values whose
// data no exported name reaches), so the lists are what remains: the
// store keeps lists of its own.
func testReturnsAreCopies(t *testing.T, s session.Store) {
	ctx := context.Background()
	require.NoError(t, s.Create(ctx, info("p")))
	recs := append(Turn(t, 0, 1), Turn(t, 17, 2)...)
	want := slices.Clone(recs)
	forged := func(r session.Record) session.Record {
		f, err := session.NewRecord(r.Seq(), r.Time(), session.Event{Type: session.TypeUserMessage, Turn: max(r.Turn(), 1),
			Data: session.UserMessage{Content: "forged"}})
		require.NoError(t, err)
		return f
	}
	write := func(list []session.Record) {
		for i, r := range list {
			copy(r.Data(), "forged")
			copy(r.Bytes(), "forged")
			list[i] = forged(r)
		}
	}
	require.NoError(t, s.Append(ctx, "p", 0, recs[:17]))
	require.NoError(t, s.Append(ctx, "p", 17, recs[17:]))
	write(recs)
	tail := []session.Record{endSeed(t, 17)}
	child := info("c")
	child.Parent = &session.Parent{ID: "p", Seq: 16}
	require.NoError(t, s.Fork(ctx, child, tail))
	write(tail)
	for range 2 {
		for _, id := range []string{"p", "c"} {
			log, err := s.Load(ctx, id)
			require.NoError(t, err)
			if id == "p" {
				requireSameRecords(t, want, log.Records)
			} else {
				requireSameRecords(t, append(want[:17:17], endSeed(t, 17)), log.Records)
			}
			write(log.Records)
		}
	}
}
