package main

import tty "github.com/mattn/go-isatty"

func isatty(fd uintptr) bool { return tty.IsTerminal(fd) || tty.IsCygwinTerminal(fd) }
