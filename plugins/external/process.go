package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"

	"github.com/hashicorp/go-plugin/runner"
)

// process runs the plugin binary for go-plugin (as its RunnerFunc). Unlike
// go-plugin's own runner it remembers the first line of stdout and the
// tail of stderr, so that a failed handshake can be explained, and it
// signals the process's exit, so that a crash disposes the fiber.
type process struct {
	cmd      *exec.Cmd
	stdout   io.ReadCloser
	stderr   io.ReadCloser
	lifeline *os.File // the read end, the child's fd 3; closed here once started
	pin      *pinned  // the checked copy it runs, when the binary is pinned

	first  firstLine
	tail   tailBuffer
	pid    int
	exited chan struct{}

	mu      sync.Mutex
	waitErr error
}

// newProcess prepares cmd, whose Args[0] stays the configured path: when
// pin is set, the process runs the checked copy.
func newProcess(cmd *exec.Cmd, lifeline *os.File, pin *pinned) (*process, error) {
	if hasLifeline {
		cmd.ExtraFiles = []*os.File{lifeline}
	}
	if pin != nil {
		cmd.Path = pin.path
		if pin.inherit != nil {
			cmd.ExtraFiles = append(cmd.ExtraFiles, pin.inherit)
			cmd.Path = fmt.Sprintf(pin.path, 2+len(cmd.ExtraFiles))
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, lifeline: lifeline, pin: pin, exited: make(chan struct{})}
	p.stdout = readCloser{io.TeeReader(stdout, &p.first), stdout}
	p.stderr = readCloser{io.TeeReader(stderr, &p.tail), stderr}
	return p, nil
}

func (p *process) Start(context.Context) error {
	err := p.cmd.Start()
	// The child holds its own copy of the read end now, and of the pinned
	// copy's descriptor.
	_ = p.lifeline.Close()
	p.pin.close()
	if err != nil {
		close(p.exited)
		return err
	}
	p.pid = p.cmd.Process.Pid
	return nil
}

func (p *process) Wait(context.Context) error {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.waitErr = err
	p.mu.Unlock()
	select {
	case <-p.exited:
	default:
		close(p.exited)
	}
	return err
}

// exitErr returns how the process ended, once it has.
func (p *process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

func (p *process) Kill(context.Context) error {
	if p.cmd.Process == nil {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (p *process) Stdout() io.ReadCloser { return p.stdout }
func (p *process) Stderr() io.ReadCloser { return p.stderr }
func (p *process) Name() string          { return p.cmd.Args[0] }

func (p *process) ID() string {
	if p.pid == 0 {
		return ""
	}
	return strconv.Itoa(p.pid)
}

// Diagnose is appended by go-plugin to a handshake error; the adapter
// explains those errors itself.
func (p *process) Diagnose(context.Context) string { return "" }

func (p *process) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (p *process) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// hasLifeline: the lifeline pipe is passed as an extra file descriptor,
// which Windows does not support (plugins there watch their parent).
const hasLifeline = runtime.GOOS != "windows"

type readCloser struct {
	io.Reader
	io.Closer
}

// firstLine keeps the first line written to it (at most 512 bytes).
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	done bool
}

const maxFirstLine = 512

func (f *firstLine) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return len(b), nil
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		f.buf = append(f.buf, b[:i]...)
		f.done = true
	} else {
		f.buf = append(f.buf, b...)
	}
	if len(f.buf) > maxFirstLine {
		f.buf, f.done = f.buf[:maxFirstLine], true
	}
	return len(b), nil
}

// line returns what was read of the first line and whether any byte was.
func (f *firstLine) line() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return string(bytes.TrimRight(f.buf, "\r")), len(f.buf) > 0 || f.done
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const maxTail = 2048

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > maxTail {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-maxTail:]...)
	}
	return len(b), nil
}

// lastLine returns the last non-empty line written.
func (t *tailBuffer) lastLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := bytes.Split(bytes.TrimSpace(t.buf), []byte("\n"))
	return string(bytes.TrimSpace(lines[len(lines)-1]))
}

var _ runner.Runner = (*process)(nil)
