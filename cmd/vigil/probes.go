package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/vigil-run/vigil/server"
)

// processMetrics makes the metrics of a serve or worker process: the
// request and job instruments, and the queue-depth gauge of h's store.
func processMetrics(h *host) (*server.Metrics, error) {
	m, err := server.NewMetrics()
	if err != nil {
		return nil, err
	}
	if err := m.WatchQueue(h.rt, h.log.Named("metrics")); err != nil {
		_ = m.Shutdown(context.Background())
		return nil, err
	}
	return m, nil
}

// serveProbes serves /metrics, /healthz and /readyz of a worker on addr
// until the returned stop is called.
func serveProbes(h *host, m *server.Metrics, addr string, allowed []string) (bound net.Addr, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	o := server.Options{Metrics: m, Logger: h.log.Named("probes"),
		Addr: ln.Addr().String(), AllowedHosts: allowedHosts(allowed, addr, ln.Addr())}
	hs := &http.Server{Handler: server.NewProbes(h.rt, o),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("serving the metrics stopped", "error", err)
		}
	}()
	return ln.Addr(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}, nil
}
