package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// spawnOptions says which processes the tool starts.
type spawnOptions struct {
	Vigil   string // the vigil binary
	Store   string // "jsonl" or "pg"
	DSN     string // pg: the database
	Workers int    // jsonl: in-process workers; pg: worker processes
	PerProc int    // pg: --concurrency of each worker process
	Procs   int    // pg: GOMAXPROCS of each worker process, 0 for Go's default
	Dir     string // the work folder (plugins.yaml, sessions, the tools' root)
	Wait    time.Duration
}

// cluster is the started processes: one `vigil serve`, and `vigil worker`s
// in pg mode.
type cluster struct {
	URL     string
	Dir     string // the JSONL sessions folder ("" in pg mode)
	serve   *exec.Cmd
	workers []*exec.Cmd
	logs    []*os.File
	stderr  io.Closer // the pipe of the server's stderr
}

var apiLine = regexp.MustCompile(`the API is at (http://\S+)/v1`)

// composition is the plugins.yaml of a load run: the scripted model (which
// calls list_dir, then describes what it returned: two steps a turn), the
// folder tools on a small fixed folder, strict invariants.
func composition(o spawnOptions) string {
	store := "  - name: store/jsonl\n    config: { dir: sessions }\n"
	if o.Store == "pg" {
		schema := fmt.Sprintf("load_%d", time.Now().UnixNano())
		store = fmt.Sprintf("  - name: store/postgres\n    config: { dsn: %s, schema: %s }\n", strconv.Quote(o.DSN), schema)
	}
	return "plugins:\n" + store + `  - name: provider/scripted
  - name: agent
    config: { system: "You are a load test.", model: scripted, max_steps: 8 }
  - name: tools/fs
    config: { root: data }
  - name: invariants
    config: { mode: strict }
`
}

// start writes the work folder and starts the processes, returning once
// the server listens and the workers run.
func start(ctx context.Context, o spawnOptions) (*cluster, error) {
	if err := os.MkdirAll(filepath.Join(o.Dir, "data"), 0o755); err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		if err := os.WriteFile(filepath.Join(o.Dir, "data", f), []byte("load\n"), 0o644); err != nil {
			return nil, fmt.Errorf("spawn: %w", err)
		}
	}
	cfg := filepath.Join(o.Dir, "plugins.yaml")
	if err := os.WriteFile(cfg, []byte(composition(o)), 0o644); err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	c := &cluster{}
	if o.Store == "jsonl" {
		c.Dir = filepath.Join(o.Dir, "sessions")
	}
	serveWorkers := o.Workers
	if o.Store == "pg" {
		serveWorkers = 0
	}
	serve := exec.Command(o.Vigil, "serve", "-c", cfg, "--addr", "127.0.0.1:0", "--workers", strconv.Itoa(serveWorkers))
	serve.Dir = o.Dir
	pr, pw := io.Pipe()
	serve.Stderr = pw
	c.stderr = pw
	serveLog, err := os.Create(filepath.Join(o.Dir, "serve.log"))
	if err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	c.logs = append(c.logs, serveLog)
	serve.Stdout = serveLog
	if err := serve.Start(); err != nil {
		return nil, fmt.Errorf("spawn: vigil serve: %w", err)
	}
	c.serve = serve
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			fmt.Fprintln(serveLog, sc.Text())
			if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case c.URL = <-found:
	case <-time.After(o.Wait):
		c.stop(5 * time.Second)
		return nil, fmt.Errorf("spawn: vigil serve did not listen within %s (see %s)", o.Wait, serveLog.Name())
	case <-ctx.Done():
		c.stop(5 * time.Second)
		return nil, ctx.Err()
	}
	if o.Store == "pg" {
		for i := range o.Workers {
			w := exec.Command(o.Vigil, "worker", "-c", cfg, "--concurrency", strconv.Itoa(o.PerProc), "--name", fmt.Sprintf("load-%d", i))
			w.Dir = o.Dir
			if o.Procs > 0 {
				w.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(o.Procs))
			}
			lf, err := os.Create(filepath.Join(o.Dir, fmt.Sprintf("worker-%d.log", i)))
			if err != nil {
				c.stop(5 * time.Second)
				return nil, fmt.Errorf("spawn: %w", err)
			}
			c.logs = append(c.logs, lf)
			w.Stdout, w.Stderr = lf, lf
			if err := w.Start(); err != nil {
				c.stop(5 * time.Second)
				return nil, fmt.Errorf("spawn: vigil worker: %w", err)
			}
			c.workers = append(c.workers, w)
		}
	}
	return c, nil
}

// pids lists the vigil processes: the server first.
func (c *cluster) pids() []int {
	out := []int{c.serve.Process.Pid}
	for _, w := range c.workers {
		out = append(out, w.Process.Pid)
	}
	return out
}

// stats reads the CPU and RSS of each vigil process, the server first.
func (c *cluster) stats() ([]procStat, error) {
	var out []procStat
	for _, pid := range c.pids() {
		st, err := readStat(pid, false)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// stop sends SIGTERM to every process (workers first, so that the server
// outlives them) and kills what is left after grace.
func (c *cluster) stop(grace time.Duration) error {
	var errs []error
	procs := append(append([]*exec.Cmd{}, c.workers...), c.serve)
	for _, p := range procs {
		if p == nil || p.Process == nil {
			continue
		}
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(p.Args[1]), err))
			}
		case <-time.After(grace):
			_ = p.Process.Kill()
			<-done
			errs = append(errs, fmt.Errorf("%s did not stop within %s: killed", p.Args[1], grace))
		}
	}
	if c.stderr != nil {
		_ = c.stderr.Close()
	}
	for _, f := range c.logs {
		_ = f.Close()
	}
	return errors.Join(errs...)
}
