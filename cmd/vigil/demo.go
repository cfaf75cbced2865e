package main

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/internal/hostcheck"
	"github.com/vigil-run/vigil/playground"
)

// defaultDemoAddr is loopback: the playground drives a runtime and is
// meant for the person at this machine.
const defaultDemoAddr = "127.0.0.1:8080"

func newDemoCmd(e *env) *cobra.Command {
	var addr string
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Serve the playground: watch the invariant hold, then break it",
		Long: `Serve the playground until Ctrl-C: a page that runs a scripted session
through the real runtime and lets you break the model-visible ⟺ logged
invariant on a fork of it. It answers only requests whose Host is loopback
or the host --addr names, and refuses actions from another origin.`,
		Example: `  vigil demo
  vigil demo --addr 127.0.0.1:9000 --delay 200ms`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("demo takes no arguments")
			}
			return nil
		},
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmdDemo(cmd.Context(), e, addr, delay)
		}),
	}
	cmd.Flags().StringVar(&addr, "addr", defaultDemoAddr, "the address to serve the playground on; it answers only requests naming a loopback host or this address's")
	cmd.Flags().DurationVar(&delay, "delay", playground.DefaultDelay, "how long play shows each event")
	return cmd
}

// cmdDemo serves the playground until ctx is done: the page that runs a
// scripted session through the real runtime and lets the user break the
// model-visible ⟺ logged invariant on a fork of it.
func cmdDemo(ctx context.Context, e *env, addr string, delay time.Duration) error {
	if delay <= 0 {
		return usagef("--delay must be positive")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	pg, err := playground.New(playground.Options{Delay: delay, Logger: newLogger(e), Hosts: demoHosts(addr, ln.Addr().String())})
	if err != nil {
		_ = ln.Close()
		return err
	}
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			fmt.Fprintf(e.stderr, "warning: %s is not a loopback address; anyone who reaches it can drive the playground\n", host)
		}
	}
	fmt.Fprintf(e.stderr, "vigil demo: the playground is at http://%s/ (Ctrl-C to stop)\n", ln.Addr())
	return pg.Serve(ctx, ln)
}

// demoHosts returns the host names, besides loopback, that the playground
// served on bound (listened for as addr) answers: the host addr names and
// the address bound, or, for a wildcard address, this machine's interface
// addresses and host name.
func demoHosts(addr, bound string) []string {
	return append(hostcheck.Names(addr), hostcheck.Names(bound)...)
}
