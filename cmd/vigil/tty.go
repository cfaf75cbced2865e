package main

import (
	"github.com/chzyer/readline"
	tty "github.com/mattn/go-isatty"
)

func isatty(fd uintptr) bool { return tty.IsTerminal(fd) || tty.IsCygwinTerminal(fd) }

// fdOf returns the file descriptor of v (an *os.File), if it has one.
func fdOf(v any) (uintptr, bool) {
	f, ok := v.(interface{ Fd() uintptr })
	if !ok {
		return 0, false
	}
	return f.Fd(), true
}

// isTerminalFile reports whether v (a reader or a writer) is a terminal.
func isTerminalFile(v any) bool {
	fd, ok := fdOf(v)
	return ok && isatty(fd)
}

// terminalWidth is the width of the terminal v is, 0 when unknown.
func terminalWidth(v any) int {
	fd, ok := fdOf(v)
	if !ok {
		return 0
	}
	w, _, err := readline.GetSize(int(fd))
	if err != nil {
		return 0
	}
	return w
}
