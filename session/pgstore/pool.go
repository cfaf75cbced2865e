package pgstore

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/vigil-run/vigil/session"
)

// pool is a small connection pool: at most max connections, idle ones
// reused last-in first-out, and pinged before reuse when they have been
// idle for a while. (pgxpool would need a module the build does not have.)
type pool struct {
	cfg *pgx.ConnConfig
	sem chan struct{} // one token per connection in use

	mu     sync.Mutex
	idle   []idleConn
	closed bool
	// broken counts the connections found broken: a server restart or
	// failover breaks them all, so the idle ones released before the count
	// moved are checked before reuse rather than handed out to fail.
	broken uint64
}

type idleConn struct {
	c      *pgx.Conn
	since  time.Time
	broken uint64 // pool.broken when c was released
}

// pingAfter is how long a connection may sit idle before it is checked
// (pgxpool's default too): a server that restarted meanwhile closed it.
var pingAfter = time.Second

var errPoolClosed = errors.New("pgstore: store closed")

func newPool(cfg *pgx.ConnConfig, max int) *pool {
	return &pool{cfg: cfg, sem: make(chan struct{}, max)}
}

// config returns a copy of the connection config.
func (p *pool) config() *pgx.ConnConfig { return p.cfg.Copy() }

func (p *pool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			<-p.sem
			return nil, errPoolClosed
		}
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		ic := p.idle[n-1]
		p.idle = p.idle[:n-1]
		suspect := ic.broken != p.broken
		p.mu.Unlock()
		if !suspect && time.Since(ic.since) < pingAfter || ic.c.Ping(ctx) == nil {
			return ic.c, nil
		}
		p.mu.Lock()
		p.broken++
		p.mu.Unlock()
		_ = ic.c.Close(context.WithoutCancel(ctx))
	}
	c, err := pgx.ConnectConfig(ctx, p.cfg.Copy())
	if err != nil {
		<-p.sem
		return nil, err
	}
	return c, nil
}

// release returns c to the pool, or closes it if it is not clean: closed,
// busy or inside a transaction (a query interrupted by its context).
func (p *pool) release(c *pgx.Conn) {
	defer func() { <-p.sem }()
	pc := c.PgConn()
	p.mu.Lock()
	if !p.closed && !c.IsClosed() && !pc.IsBusy() && pc.TxStatus() == 'I' {
		p.idle = append(p.idle, idleConn{c, time.Now(), p.broken})
		p.mu.Unlock()
		return
	}
	if c.IsClosed() {
		// Broken, or closed by a cancelled query: either way, the idle
		// ones are worth a ping before reuse.
		p.broken++
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.Close(ctx)
}

// errConnLost marks the error of a call whose connection broke under it
// (see [pool.with]).
var errConnLost = errors.New("the connection was lost")

// with runs fn on a pooled connection. An error that broke the
// connection also matches errConnLost.
func (p *pool) with(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := p.acquire(ctx)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, errPoolClosed) {
			// No connection to be had: the server is down or away.
			return unavailableError{err}
		}
		return err
	}
	defer p.release(c)
	err = fn(c)
	if err != nil && c.IsClosed() {
		return lostError{err}
	}
	return err
}

// lostError is an error that broke its connection.
type lostError struct{ err error }

func (e lostError) Error() string { return e.err.Error() }
func (e lostError) Unwrap() []error {
	return []error{e.err, errConnLost, session.ErrUnavailable}
}

// unavailableError is the error of a call that got no connection.
type unavailableError struct{ err error }

func (e unavailableError) Error() string   { return e.err.Error() }
func (e unavailableError) Unwrap() []error { return []error{e.err, session.ErrUnavailable} }

func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, ic := range idle {
		_ = ic.c.Close(ctx)
	}
}

// readBound bounds a read that its caller's cancel does not interrupt
// (see uninterrupted).
const readBound = 30 * time.Second

// uninterrupted returns the context for a short read that the caller's
// cancel does not cut short. A statement interrupted by its context
// costs its connection: pgx cannot tell where the reply stood, so it
// closes it, and the next caller pays for a new one. A follower is
// cancelled whenever its client goes, often in the middle of a read (an
// SSE stream closed at a turn's end), so an API process reconnected for
// one turn in thirty. The read still ends with the store, and after
// readBound; the caller sees its own cancel once the read returns.
func (s *Store) uninterrupted(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBound)
	stop := context.AfterFunc(s.bg, cancel)
	return ctx, func() { stop(); cancel() }
}
