package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"

	"github.com/vigil-run/vigil/playground"
)

// defaultDemoAddr is loopback: the playground drives a runtime and is
// meant for the person at this machine.
const defaultDemoAddr = "127.0.0.1:8080"

// cmdDemo serves the playground until ctx is done: the page that runs a
// scripted session through the real runtime and lets the user break the
// model-visible ⟺ logged invariant on a fork of it.
func cmdDemo(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	addr := fs.String("addr", defaultDemoAddr, "the address to serve the playground on; it answers only requests naming a loopback host or this address's")
	delay := fs.Duration("delay", playground.DefaultDelay, "how long play shows each event")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 0 {
		return usagef("demo takes no arguments")
	}
	if *delay <= 0 {
		return usagef("demo: --delay must be positive")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	pg, err := playground.New(playground.Options{Delay: *delay, Logger: newLogger(e), Hosts: demoHosts(*addr, ln.Addr())})
	if err != nil {
		_ = ln.Close()
		return err
	}
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			fmt.Fprintf(e.stderr, "vigil demo: warning: %s is not a loopback address; anyone who reaches it can drive the playground\n", host)
		}
	}
	fmt.Fprintf(e.stderr, "vigil demo: the playground is at http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	return pg.Serve(ctx, ln)
}

// demoHosts returns the host names, besides loopback, that the playground
// served on bound (listened for as addr) answers: the host addr names and
// the address bound, or, for a wildcard address, this machine's interface
// addresses and host name. A DNS-rebinding page names its own domain in
// the Host header, never one of these.
func demoHosts(addr string, bound net.Addr) []string {
	var hosts []string
	if h, _, err := net.SplitHostPort(addr); err == nil && h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			hosts = append(hosts, h)
		}
	}
	h, _, err := net.SplitHostPort(bound.String())
	if err != nil {
		return hosts
	}
	ip := net.ParseIP(h)
	if ip == nil || !ip.IsUnspecified() {
		return append(hosts, h)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				hosts = append(hosts, n.IP.String())
			}
		}
	}
	if name, err := os.Hostname(); err == nil {
		hosts = append(hosts, name)
	}
	return hosts
}
