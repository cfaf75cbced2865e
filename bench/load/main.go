// Command load drives a Vigil server's API with many sessions and turns
// and reports throughput, latency, CPU per turn and whether every event
// arrived: N sessions × T turns by C concurrent clients, each turn
// streamed over SSE (opened before the turn is posted), then every log
// compared with what the streams delivered and verified.
//
// It talks to loopback only and is bounded everywhere: every wait has a
// timeout (--timeout), the whole run a deadline (--deadline), and sessions,
// turns, clients and idle streams have caps. It is not part of .ci/run.
//
//	go build -o /tmp/vigil ./cmd/vigil
//	go run ./bench/load --vigil /tmp/vigil                      # embedded JSONL: vigil serve, 4 in-process workers
//	go run ./bench/load --vigil /tmp/vigil --store pg --dsn "$DSN" --workers 2   # vigil serve --workers 0 + 2 vigil worker
//	go run ./bench/load --vigil /tmp/vigil --idle 10000 --sessions 100 --turns 1  # with 10,000 idle SSE streams open
//	go run ./bench/load --vigil /tmp/vigil --store pg --workers 4 --worker-gomaxprocs 1   # each worker process with GOMAXPROCS=1
//	go run ./bench/load --url http://127.0.0.1:8080            # a server already running (no CPU figures)
//
// With --vigil the tool starts the processes itself in a temporary
// folder (a generated plugins.yaml: the scripted model, tools/fs on a
// small folder, strict invariants) and reads their CPU time and resident
// set from /proc, so CPU per turn counts the server and worker processes
// only, not this client. With --store pg it also reports PostgreSQL's CPU
// (--pg-data) and, from the deltas of pg_stat_database, pg_stat_wal and
// pg_stat_statements (preloaded by .ci/postgres.sh), its statements,
// commits, synchronous commits (the transactions that wrote, less the
// calls of the statements session/pgstore tags as committing
// asynchronously that wrote: returned or changed a row) and WAL
// flushes per turn (pgstats.go; the counters are read
// after 11 s of quiet on each side of the turns, as backends report them
// when idle). Every report gives the load average as the turns began and
// ended.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Caps: the tool is for one machine's loopback.
const (
	maxSessions    = 20_000
	maxTurns       = 100
	maxConcurrency = 1_024
	maxIdle        = 20_000
	maxWorkers     = 16
)

type options struct {
	url, vigil, store, dsn, pgData, keep string
	sessions, turns, concurrency         int
	workers, perProc, idle, procs        int
	timeout, deadline, idleWindow        time.Duration
	jsonOut                              bool
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "", "a running server (http://127.0.0.1:PORT); without it --vigil starts one")
	flag.StringVar(&o.vigil, "vigil", "", "the vigil binary to start (serve, and worker with --store pg)")
	flag.StringVar(&o.store, "store", "jsonl", "with --vigil: jsonl (vigil serve with in-process workers) or pg (vigil serve --workers 0 + worker processes)")
	flag.StringVar(&o.dsn, "dsn", os.Getenv("VIGIL_TEST_POSTGRES_DSN"), "with --store pg: the database (default $VIGIL_TEST_POSTGRES_DSN)")
	flag.StringVar(&o.pgData, "pg-data", "", "with --store pg: the cluster's data folder, to count PostgreSQL's CPU too (default $VIGIL_PG_DIR/data)")
	flag.StringVar(&o.keep, "keep", "", "with --vigil: the work folder to use and keep (default a temporary one, removed)")
	flag.IntVar(&o.sessions, "sessions", 1000, "sessions driven")
	flag.IntVar(&o.turns, "turns", 5, "turns per session")
	flag.IntVar(&o.concurrency, "concurrency", 32, "concurrent clients (each drives one session at a time)")
	flag.IntVar(&o.workers, "workers", 4, "jsonl: the server's in-process workers (--workers); pg: worker processes")
	flag.IntVar(&o.perProc, "worker-concurrency", 4, "pg: each worker process's --concurrency")
	flag.IntVar(&o.procs, "worker-gomaxprocs", 0, "pg: each worker process's GOMAXPROCS (0: Go's default, the machine's CPUs or the container's limit)")
	flag.IntVar(&o.idle, "idle", 0, "idle sessions to hold an SSE stream open to during the run")
	flag.DurationVar(&o.idleWindow, "idle-window", 10*time.Second, "with --idle: how long to measure the server's CPU with only the idle streams open")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "the bound of every wait (a request, a turn, a start)")
	flag.DurationVar(&o.deadline, "deadline", 30*time.Minute, "the bound of the whole run")
	flag.BoolVar(&o.jsonOut, "json", false, "print the report as JSON")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func (o *options) validate() error {
	bound := func(name string, v, lo, hi int) error {
		if v < lo || v > hi {
			return fmt.Errorf("--%s %d: from %d to %d", name, v, lo, hi)
		}
		return nil
	}
	if err := errors.Join(
		bound("sessions", o.sessions, 1, maxSessions),
		bound("turns", o.turns, 1, maxTurns),
		bound("concurrency", o.concurrency, 1, maxConcurrency),
		bound("idle", o.idle, 0, maxIdle),
		bound("workers", o.workers, 0, maxWorkers),
		bound("worker-concurrency", o.perProc, 1, 64),
		bound("worker-gomaxprocs", o.procs, 0, 256),
	); err != nil {
		return err
	}
	if o.timeout <= 0 || o.deadline <= 0 {
		return errors.New("--timeout and --deadline must be positive")
	}
	switch {
	case o.url != "" && o.vigil != "":
		return errors.New("--url and --vigil: one or the other")
	case o.url != "":
		return checkLoopback(o.url)
	case o.vigil == "":
		return errors.New("--vigil BINARY (start the server) or --url URL (a running one)")
	}
	switch o.store {
	case "jsonl":
		if o.workers == 0 {
			return errors.New("--store jsonl needs --workers of at least 1 (the turns run in the server)")
		}
	case "pg":
		if o.dsn == "" {
			return errors.New("--store pg needs --dsn (or VIGIL_TEST_POSTGRES_DSN)")
		}
		if err := checkLoopback("http://" + dsnHost(o.dsn)); err != nil {
			return fmt.Errorf("--dsn: %w", err)
		}
		if o.workers == 0 {
			return errors.New("--store pg needs --workers of at least 1 worker process")
		}
		if o.pgData == "" && os.Getenv("VIGIL_PG_DIR") != "" {
			o.pgData = os.Getenv("VIGIL_PG_DIR") + "/data"
		}
	default:
		return fmt.Errorf("--store %q: jsonl or pg", o.store)
	}
	return nil
}

// raiseFiles lifts the open-file limit towards what the run needs (each
// stream is a socket here and one in the server, which inherits the
// limit): the soft limit up to the hard one, and the hard one too when
// allowed. It returns the limit now in force.
func raiseFiles(need uint64) (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("getrlimit: %w", err)
	}
	if l.Cur >= need {
		return l.Cur, nil
	}
	if l.Max < need {
		up := syscall.Rlimit{Cur: need, Max: need}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up); err == nil {
			return need, nil
		}
	}
	l.Cur = min(need, l.Max)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, fmt.Errorf("setrlimit: %w", err)
	}
	return l.Cur, nil
}

// report is the outcome of a run.
type report struct {
	Store       string  `json:"store"`
	Workers     int     `json:"workers"`
	PerProc     int     `json:"worker_concurrency,omitempty"`
	Procs       int     `json:"worker_gomaxprocs,omitempty"` // 0: Go's default
	Sessions    int     `json:"sessions"`
	Turns       int     `json:"turns"`
	Concurrency int     `json:"concurrency"`
	Idle        int     `json:"idle_streams,omitempty"`
	Seconds     float64 `json:"seconds"`
	TurnsPerSec float64 `json:"turns_per_s"`
	// CPU of the vigil processes (server + workers) in the turns phase.
	CPUms         float64    `json:"cpu_ms_per_turn,omitempty"`
	PGCPUms       float64    `json:"pg_cpu_ms_per_turn,omitempty"`
	PG            *pgPerTurn `json:"pg,omitempty"`
	LoadAvg       [2]string  `json:"load_average"` // the machine's 1-minute load average as the turns began and ended
	TurnsPerCPU   float64    `json:"turns_per_cpu_s,omitempty"`
	ClientCPUms   float64    `json:"client_cpu_ms_per_turn"`
	FirstP50ms    float64    `json:"first_event_p50_ms"`
	FirstP99ms    float64    `json:"first_event_p99_ms"`
	TurnP50ms     float64    `json:"turn_p50_ms"`
	Steps         int        `json:"steps"`
	StepCPUms     float64    `json:"cpu_ms_per_step,omitempty"`
	StepWallms    float64    `json:"step_wall_ms"`
	Events        int        `json:"events"`
	Lost          int        `json:"sessions_with_lost_or_duplicate_events"`
	Verified      int        `json:"logs_verified"`
	ServerRSSMiB  float64    `json:"server_rss_mib,omitempty"`
	IdleRSSMiB    float64    `json:"idle_server_rss_mib,omitempty"`
	IdleCPUPerSec float64    `json:"idle_server_cpu_per_s,omitempty"`
	IdleOpenSec   float64    `json:"idle_open_s,omitempty"`
}

func run(o options, out io.Writer) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.deadline)
	defer cancel()
	if err := o.raiseFiles(); err != nil {
		return err
	}
	rep := report{Store: o.store, Workers: o.workers, Sessions: o.sessions, Turns: o.turns, Concurrency: o.concurrency, Idle: o.idle}
	if o.store == "pg" {
		rep.PerProc, rep.Procs = o.perProc, o.procs
	}
	base := o.url
	var cl *cluster
	if o.vigil != "" {
		var stop func() error
		if cl, stop, err = o.spawn(ctx); err != nil {
			return err
		}
		defer func() {
			if serr := stop(); serr != nil && err == nil {
				err = fmt.Errorf("stopping: %w", serr)
			}
		}()
		base = cl.URL
	} else {
		rep.Store, rep.Workers = "(running server)", 0
	}
	a := newAPI(base, o.concurrency*2+16, o.timeout)

	// Idle streams: opened first and held through the run.
	if o.idle > 0 {
		streams, err := o.idlePhase(ctx, a, cl, &rep)
		defer func() {
			for _, s := range streams {
				s.close()
			}
		}()
		if err != nil {
			return err
		}
	}
	runs, err := o.createSessions(ctx, a)
	if err != nil {
		return err
	}
	if err := o.turnsPhase(ctx, a, cl, runs, &rep); err != nil {
		return err
	}
	return o.checkPhase(ctx, a, runs, &rep, out)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "load: "+format+"\n", args...)
}

// raiseFiles lifts the open-file limit to what the run's streams need,
// saying so when the hard limit is lower.
func (o *options) raiseFiles() error {
	need := uint64(2*(o.idle+o.concurrency) + 1024)
	limit, err := raiseFiles(need)
	if err != nil {
		return err
	}
	if limit < need {
		fmt.Fprintf(os.Stderr, "load: open files limited to %d (hard limit), the run may need %d\n", limit, need)
	}
	return nil
}

// spawn starts the server (and the workers) in the work folder, a
// temporary one unless --keep; stop stops them and removes a temporary
// folder.
func (o *options) spawn(ctx context.Context) (cl *cluster, stop func() error, err error) {
	dir, remove := o.keep, func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "vigil-load-"); err != nil {
			return nil, nil, err
		}
		remove = func() { os.RemoveAll(dir) }
	}
	cl, err = start(ctx, spawnOptions{Vigil: o.vigil, Store: o.store, DSN: o.dsn, Workers: o.workers, PerProc: o.perProc, Procs: o.procs, Dir: dir, Wait: o.timeout})
	if err != nil {
		remove()
		return nil, nil, err
	}
	return cl, func() error {
		defer remove()
		return cl.stop(o.timeout)
	}, nil
}

// idlePhase opens the idle streams and, with the processes started here,
// measures the server with only them open. The streams are returned to
// be closed at the end of the run, even with an error.
func (o *options) idlePhase(ctx context.Context, a *api, cl *cluster, rep *report) ([]*stream, error) {
	began := time.Now()
	streams, err := openIdle(ctx, a, o.idle, o.concurrency)
	if err != nil {
		return streams, err
	}
	rep.IdleOpenSec = time.Since(began).Seconds()
	logf("%d idle sessions created and their streams open in %.1fs", o.idle, rep.IdleOpenSec)
	if cl == nil {
		return streams, nil
	}
	before, err := cl.stats()
	if err != nil {
		return streams, err
	}
	select {
	case <-time.After(o.idleWindow):
	case <-ctx.Done():
		return streams, ctx.Err()
	}
	after, err := cl.stats()
	if err != nil {
		return streams, err
	}
	rep.IdleRSSMiB = float64(after[0].RSS) / (1 << 20)
	rep.IdleCPUPerSec = (after[0].CPU - before[0].CPU).Seconds() / o.idleWindow.Seconds()
	logf("idle: server RSS %.0f MiB, CPU %.3f s/s", rep.IdleRSSMiB, rep.IdleCPUPerSec)
	return streams, nil
}

// createSessions creates the sessions the turns run on.
func (o *options) createSessions(ctx context.Context, a *api) ([]*sessionRun, error) {
	runs := make([]*sessionRun, o.sessions)
	if err := parallel(ctx, o.sessions, o.concurrency, func(ctx context.Context, i int) error {
		id, err := a.create(ctx)
		runs[i] = &sessionRun{ID: id, last: -1}
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating sessions: %w", err)
	}
	logf("%d sessions created; running %d turns each with %d clients", o.sessions, o.turns, o.concurrency)
	return runs, nil
}

// usage is the CPU time (and PostgreSQL connections) counted at a point
// of the run: the processes started here, PostgreSQL, this client.
type usage struct {
	procs  []procStat
	pg     time.Duration
	db     pgCounters
	client time.Duration
}

// usage reads what the run's report counts of the CPU time and
// connections used so far.
func (o *options) usage(ctx context.Context, cl *cluster) (u usage, err error) {
	if cl != nil {
		if u.procs, err = cl.stats(); err != nil {
			return u, err
		}
	}
	if o.pgData != "" {
		if u.pg, err = pgCPU(o.pgData); err != nil {
			return u, err
		}
	}
	u.client = selfCPU()
	if o.store == "pg" && cl != nil {
		time.Sleep(pgSettle) // what came before is counted before
		if u.db, err = readPG(ctx, o.dsn); err != nil {
			return u, err
		}
	}
	return u, nil
}

// turnsPhase runs every session's turns and reports their rate, their
// latencies and what they cost.
func (o *options) turnsPhase(ctx context.Context, a *api, cl *cluster, runs []*sessionRun, rep *report) error {
	before, err := o.usage(ctx, cl)
	if err != nil {
		return err
	}
	rep.LoadAvg[0] = loadAverage()
	began := time.Now()
	var done atomic.Int64
	stopProgress := progress(&done, o.sessions*o.turns, began)
	err = parallel(ctx, o.sessions, o.concurrency, func(ctx context.Context, i int) error {
		for t := range o.turns {
			if err := a.turn(ctx, runs[i], fmt.Sprintf("turn %d: what is in this folder?", t+1)); err != nil {
				return err
			}
			done.Add(1)
		}
		return nil
	})
	elapsed := time.Since(began)
	rep.LoadAvg[1] = loadAverage()
	stopProgress()
	if err != nil {
		return fmt.Errorf("after %d turns in %s: %w", done.Load(), elapsed.Round(time.Millisecond), err)
	}
	turns := o.sessions * o.turns
	rep.Seconds = elapsed.Seconds()
	rep.TurnsPerSec = float64(turns) / elapsed.Seconds()
	rep.ClientCPUms = ms(selfCPU()-before.client) / float64(turns)
	rep.latencies(runs)
	if err := o.cost(ctx, cl, before, turns, rep); err != nil {
		return err
	}
	logf("%d turns in %.1fs; checking every log", turns, elapsed.Seconds())
	return nil
}

// progress logs the turns done every 10 seconds until the function it
// returns is called.
func progress(done *atomic.Int64, total int, began time.Time) func() {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				logf("%d/%d turns, %.0f/s", done.Load(), total, float64(done.Load())/time.Since(began).Seconds())
			case <-stop:
				return
			}
		}
	}()
	return func() { close(stop) }
}

// latencies reports the turns' latencies and steps.
func (rep *report) latencies(runs []*sessionRun) {
	var first, total []time.Duration
	var stepWall time.Duration
	for _, r := range runs {
		for _, t := range r.Turns {
			first = append(first, t.FirstEvent)
			total = append(total, t.Total)
			rep.Steps += t.Steps
			stepWall += t.StepWall
		}
	}
	rep.FirstP50ms, rep.FirstP99ms = ms(percentile(first, 50)), ms(percentile(first, 99))
	rep.TurnP50ms = ms(percentile(total, 50))
	if rep.Steps > 0 {
		rep.StepWallms = ms(stepWall) / float64(rep.Steps)
	}
}

// cost reports what the turns cost since before: the CPU time of the
// processes started here and of PostgreSQL, and PostgreSQL connections.
func (o *options) cost(ctx context.Context, cl *cluster, before usage, turns int, rep *report) error {
	if cl != nil {
		after, err := cl.stats()
		if err != nil {
			return err
		}
		var cpu time.Duration
		for i := range after {
			cpu += after[i].CPU - before.procs[i].CPU
		}
		rep.CPUms = ms(cpu) / float64(turns)
		rep.TurnsPerCPU = float64(turns) / cpu.Seconds()
		rep.StepCPUms = ms(cpu) / float64(rep.Steps)
		rep.ServerRSSMiB = float64(after[0].RSS) / (1 << 20)
	}
	if o.pgData != "" {
		pgAfter, err := pgCPU(o.pgData)
		if err != nil {
			return err
		}
		rep.PGCPUms = ms(pgAfter-before.pg) / float64(turns)
	}
	if o.store == "pg" && cl != nil {
		time.Sleep(pgSettle)
		db, err := readPG(ctx, o.dsn)
		if err != nil {
			return err
		}
		p := db.perTurn(before.db, turns)
		rep.PG = &p
	}
	return nil
}

// checkPhase compares every session's log with what its streams
// delivered and verifies it, and prints the report.
func (o *options) checkPhase(ctx context.Context, a *api, runs []*sessionRun, rep *report, out io.Writer) error {
	var lost, verified atomic.Int64
	var mu sync.Mutex
	var firstErr error
	_ = parallel(ctx, o.sessions, o.concurrency, func(ctx context.Context, i int) error {
		if err := a.check(ctx, runs[i]); err != nil {
			if errors.Is(err, errMismatch) {
				lost.Add(1)
			}
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return nil
		}
		verified.Add(1)
		return nil
	})
	for _, r := range runs {
		rep.Events += len(r.Lines)
	}
	rep.Lost, rep.Verified = int(lost.Load()), int(verified.Load())
	print(out, *rep, o.jsonOut)
	if firstErr != nil {
		return fmt.Errorf("%d of %d logs failed the check; the first: %w", o.sessions-rep.Verified, o.sessions, firstErr)
	}
	return nil
}

// openIdle creates n sessions and opens an SSE stream to each, returning
// them open. A stream's events are never read: an idle session sends only
// the retry: line and heartbeats.
func openIdle(ctx context.Context, a *api, n, conc int) ([]*stream, error) {
	streams := make([]*stream, n)
	err := parallel(ctx, n, conc, func(ctx context.Context, i int) error {
		id, err := a.create(ctx)
		if err != nil {
			return err
		}
		s, err := a.follow(context.WithoutCancel(ctx), id, -1)
		if err != nil {
			return err
		}
		streams[i] = s
		return nil
	})
	streams = slices.DeleteFunc(streams, func(s *stream) bool { return s == nil })
	if err != nil {
		return streams, fmt.Errorf("opening idle streams (%d open): %w", len(streams), err)
	}
	return streams, nil
}

// parallel runs f(0..n-1) on conc goroutines, stopping at the first error.
func parallel(ctx context.Context, n, conc int, f func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(conc, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// percentile returns the p-th percentile of ds (nearest rank).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(float64(len(s))*p/100+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// selfCPU is this process's CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func print(w io.Writer, r report, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(r)
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "store %s, workers %d", r.Store, r.Workers)
	if r.PerProc > 0 {
		fmt.Fprintf(w, " × concurrency %d", r.PerProc)
	}
	if r.Procs > 0 {
		fmt.Fprintf(w, " (GOMAXPROCS %d each)", r.Procs)
	}
	fmt.Fprintf(w, ", %d sessions × %d turns, %d clients", r.Sessions, r.Turns, r.Concurrency)
	if r.Idle > 0 {
		fmt.Fprintf(w, ", %d idle streams open", r.Idle)
	}
	fmt.Fprintf(w, "\n  %.1f turns/s over %.1fs (load average %s as the turns began, %s as they ended)\n", r.TurnsPerSec, r.Seconds, r.LoadAvg[0], r.LoadAvg[1])
	if r.CPUms > 0 {
		fmt.Fprintf(w, "  CPU of the vigil processes: %.2f ms/turn (%.0f turns per CPU-second), %.3f ms/step\n", r.CPUms, r.TurnsPerCPU, r.StepCPUms)
	}
	if r.PGCPUms > 0 {
		fmt.Fprintf(w, "  CPU of PostgreSQL: %.2f ms/turn\n", r.PGCPUms)
	}
	if r.PG != nil {
		r.PG.print(w)
	}
	fmt.Fprintf(w, "  CPU of this client: %.2f ms/turn\n", r.ClientCPUms)
	fmt.Fprintf(w, "  post → first event: p50 %.1f ms, p99 %.1f ms; post → turn/end p50 %.1f ms\n", r.FirstP50ms, r.FirstP99ms, r.TurnP50ms)
	fmt.Fprintf(w, "  %d steps, step/start → step/end %.3f ms on average (the log's millisecond times)\n", r.Steps, r.StepWallms)
	fmt.Fprintf(w, "  %d events; sessions with lost or duplicate events: %d; logs verified: %d/%d\n", r.Events, r.Lost, r.Verified, r.Sessions)
	if r.ServerRSSMiB > 0 {
		fmt.Fprintf(w, "  server RSS at the end of the turns: %.0f MiB\n", r.ServerRSSMiB)
	}
	if r.Idle > 0 && r.IdleRSSMiB > 0 {
		fmt.Fprintf(w, "  with only the %d idle streams open: server RSS %.0f MiB, CPU %.3f s/s (opened in %.1fs)\n", r.Idle, r.IdleRSSMiB, r.IdleCPUPerSec, r.IdleOpenSec)
	}
}
