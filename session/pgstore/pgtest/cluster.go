//go:build unix

package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a PostgreSQL server of a test's own, in a directory of its
// own on a free loopback port: for tests that stop and restart the server
// under load, which the shared one of .ci/postgres.sh must not see.
type Cluster struct {
	t    testing.TB
	bin  string // the directory of initdb, pg_ctl and postgres
	dir  string
	port int
	dsn  string
	cred *syscall.Credential // the server's user when the test runs as root
}

// NewCluster initialises a cluster and starts it; it is stopped and its
// files deleted when t ends. Without PostgreSQL's server binaries t is
// skipped, except under CI=true, where .ci/postgres.sh installs them and
// their absence is a failure. As root, the server runs as nobody (it
// refuses to run as root), as .ci/postgres.sh runs it.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	bin, err := serverBinaries()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: %v: CI must run the PostgreSQL tests (.ci/postgres.sh installs the server)", err)
		}
		t.Skipf("pgtest: %v", err)
	}
	c := &Cluster{t: t, bin: bin}
	if os.Geteuid() == 0 {
		if c.cred, err = nobody(); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	// Not t.TempDir: its parent is private to root, and the server's user
	// must reach the data directory.
	if c.dir, err = os.MkdirTemp("", "vigil-pgcluster-"); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(c.dir) })
	if err := os.Chmod(c.dir, 0o755); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if c.cred != nil {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	var pw [16]byte
	_, _ = rand.Read(pw[:])
	password := hex.EncodeToString(pw[:])
	pwfile := filepath.Join(c.dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if c.cred != nil {
		_ = os.Chown(pwfile, int(c.cred.Uid), int(c.cred.Gid))
	}
	if out, err := c.run("initdb", "-D", c.data(), "-U", "vigil", "--pwfile="+pwfile,
		"--auth=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	_ = os.Remove(pwfile)
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
			_, _ = c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop")
		}
	})
	// A free port may be taken between our look and the server's bind:
	// try a few.
	for range 5 {
		if c.port, err = freePort(); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		if err = c.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	c.dsn = fmt.Sprintf("postgres://vigil:%s@127.0.0.1:%d/postgres?sslmode=disable", password, c.port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.dsn)
	if err != nil {
		t.Fatalf("pgtest: connect to the cluster: %v", err)
	}
	_ = conn.Close(ctx)
	return c
}

// DSN is the cluster's connection string (database postgres, user vigil).
func (c *Cluster) DSN() string { return c.dsn }

// Stop stops the server (fast shutdown: connections are cut, as a
// restart by an operator cuts them) and waits until it is down.
func (c *Cluster) Stop() {
	c.t.Helper()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "-t", "60", "stop"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
}

// Start starts the stopped server again, on the same port, and waits
// until it accepts connections.
func (c *Cluster) Start() {
	c.t.Helper()
	if err := c.start(); err != nil {
		c.t.Fatalf("pgtest: %v", err)
	}
}

// Restart stops the server, waits pause, and starts it again.
func (c *Cluster) Restart(pause time.Duration) {
	c.t.Helper()
	c.Stop()
	time.Sleep(pause)
	c.Start()
}

// Crash stops the server at once (immediate shutdown: no checkpoint, and
// what sits in the WAL buffers, asynchronous commits not yet written, is
// lost, as in a crash) and starts it again: the start replays the WAL.
func (c *Cluster) Crash() {
	c.t.Helper()
	if out, err := c.run("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "-t", "60", "stop"); err != nil {
		c.t.Fatalf("pgtest: pg_ctl stop -m immediate: %v\n%s", err, out)
	}
	c.Start()
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) start() error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=200 -c fsync=off", c.port, c.dir)
	if out, err := c.run("pg_ctl", "-D", c.data(), "-l", filepath.Join(c.dir, "server.log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, log)
	}
	return nil
}

// run runs one of the server's binaries as the cluster's owner.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	// pg_ctl's server keeps the output pipe open; -l sends its log to a
	// file, so only pg_ctl itself writes here.
	return cmd.CombinedOutput()
}

// serverBinaries finds the directory of initdb, pg_ctl and postgres: on
// PATH, or where Debian keeps them (/usr/lib/postgresql/N/bin).
func serverBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(a) - versionOf(b) })
	for _, d := range slices.Backward(dirs) {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin")
}

// versionOf is N of /usr/lib/postgresql/N/bin.
func versionOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// nobody is the credential of the unprivileged user the server runs as
// under root.
func nobody() (*syscall.Credential, error) {
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("the server cannot run as root and there is no user nobody: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
