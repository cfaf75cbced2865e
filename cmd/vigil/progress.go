package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// status is the line of progress a command draws on stderr while it
// waits (a plugin starting, a session's lease, the model, a tool) when
// stderr is a terminal and --quiet is not set; elsewhere it draws nothing.
// Each wait is a task with a label; the line shows every task, each with
// the time it has taken, and is redrawn as time passes. Output that stays
// goes through the status (text to stdout, notes to stderr) so that the
// line is erased first and drawn again after; it is never drawn while
// stdout, on the same terminal, is in the middle of a line, nor while a
// chat reads a line (hold).
type status struct {
	stdout io.Writer
	// live: draw at all. shared: stdout is a terminal too, so its partial
	// lines keep the line from being drawn.
	live, shared bool
	// redraw: redraw the line as time passes (tests draw it themselves).
	redraw bool
	width  func() int // columns of stderr; 0 when unknown
	now    func() time.Time

	mu      sync.Mutex
	stderr  io.Writer // swapped for the chat's line editor's (see setStderr)
	tasks   []*task
	drawn   bool
	midLine bool // stdout has a partial line
	held    bool
	frame   int
	ticking bool
	stop    chan struct{}
	done    chan struct{}
}

// task is one wait shown on the status line.
type task struct {
	label func(now time.Time) string
	since time.Time
}

const (
	// showAfter spares the line a wait too short to be worth a flicker.
	showAfter = 200 * time.Millisecond
	tick      = 100 * time.Millisecond
	// eraseLine returns to the start of the line and clears it.
	eraseLine = "\r\x1b[K"
)

func newStatus(e *env) *status {
	s := &status{
		stdout: e.stdout, stderr: e.stderr, now: time.Now,
		live:   !e.quiet && isTerminal(e.stderr),
		shared: isTerminal(e.stdout), redraw: true,
		width: func() int { return terminalWidth(e.stderr) },
		stop:  make(chan struct{}), done: make(chan struct{}),
	}
	return s
}

// begin shows label, followed by the time the wait has taken, until end
// is called.
func (s *status) begin(label string) (end func()) {
	since := s.now()
	return s.beginFunc(func(now time.Time) string { return label + " " + elapsed(now.Sub(since)) })
}

// beginFunc is begin with a label computed at every redraw.
func (s *status) beginFunc(label func(now time.Time) string) (end func()) {
	t := &task{label: label, since: s.now()}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tasks = append(s.tasks, t)
	if s.live && s.redraw && !s.ticking {
		s.ticking = true
		go s.loop()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, x := range s.tasks {
				if x == t {
					s.tasks = append(s.tasks[:i], s.tasks[i+1:]...)
					break
				}
			}
			s.redrawLocked()
		})
	}
}

func (s *status) loop() {
	defer close(s.done)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			s.frame++
			s.redrawLocked()
			s.mu.Unlock()
		}
	}
}

// redrawLocked draws the line of the tasks old enough to show, or erases
// it when there is none or it may not be drawn now.
func (s *status) redrawLocked() {
	if !s.live {
		return
	}
	line := s.lineLocked(s.now())
	if line == "" || s.held || (s.shared && s.midLine) {
		s.eraseLocked()
		return
	}
	line = termSafe(line)
	if w := s.width(); w > 1 {
		line = truncate(line, w-1) // a wrapped line cannot be erased with \r
	}
	fmt.Fprint(s.stderr, "\r"+line+"\x1b[K")
	s.drawn = true
}

// lineLocked is the status line at now, without its frame's erasure; ""
// when no task is old enough to show.
func (s *status) lineLocked(now time.Time) string {
	var labels []string
	for _, t := range s.tasks {
		if now.Sub(t.since) >= showAfter {
			labels = append(labels, t.label(now))
		}
	}
	if len(labels) == 0 {
		return ""
	}
	frames := `|/-\`
	return string(frames[s.frame%len(frames)]) + " " + strings.Join(labels, ", ")
}

func (s *status) eraseLocked() {
	if s.drawn {
		fmt.Fprint(s.stderr, eraseLine)
		s.drawn = false
	}
}

// text writes streamed text to stdout.
func (s *status) text(t string) {
	if t == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shared {
		// On a terminal, the answer cannot drive it; elsewhere it is
		// written as the model gave it.
		s.eraseLocked()
		t = termSafe(t)
	}
	fmt.Fprint(s.stdout, t)
	s.midLine = !strings.HasSuffix(t, "\n")
}

// endLine ends stdout's partial line, if any.
func (s *status) endLine() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endLineLocked()
}

func (s *status) endLineLocked() {
	if s.midLine {
		fmt.Fprintln(s.stdout)
		s.midLine = false
	}
}

// note writes a line to stderr that stays: on a line of its own, below
// the answer so far.
func (s *status) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eraseLocked()
	s.endLineLocked()
	fmt.Fprint(s.stderr, termSafe(fmt.Sprintf(format, args...))+"\n")
	s.redrawLocked()
}

// logWriter is where the log writes: its lines go above the status line,
// not into it.
func (s *status) logWriter() io.Writer { return logWriter{s} }

type logWriter struct{ s *status }

func (w logWriter) Write(p []byte) (int, error) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eraseLocked()
	if s.shared {
		s.endLineLocked()
	}
	_, err := io.WriteString(s.stderr, termSafe(string(p)))
	s.redrawLocked()
	return len(p), err
}

// hold keeps the line erased (while a chat reads a line) or lets it be
// drawn again.
func (s *status) hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = on
	s.redrawLocked()
}

// setStderr makes the status write to w instead of stderr (the chat's
// line editor, which redraws its prompt around what is written).
func (s *status) setStderr(w io.Writer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stderr = w
}

// close erases the line and stops redrawing it.
func (s *status) close() {
	s.mu.Lock()
	ticking := s.ticking
	s.ticking = false
	s.eraseLocked()
	s.live = false
	s.mu.Unlock()
	if ticking {
		close(s.stop)
		<-s.done
	}
}

// elapsed formats how long a wait has taken.
func elapsed(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return d.Round(time.Second).String()
}

// truncate cuts s to n runes, marking the cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
