package eventstream

// Parse turns one server-sent event into a provider's event. ok false
// skips the event (a ping, a comment-only event); done true ends the
// stream there, as OpenAI's "[DONE]" does; an error ends it with that
// error.
type Parse[E any] func(Event) (e E, ok, done bool, err error)

// Typed returns the events of r parsed by parse, for [Stream].
func Typed[E any](r *Reader, parse Parse[E]) Events[E] {
	return &typed[E]{r: r, parse: parse}
}

type typed[E any] struct {
	r     *Reader
	parse Parse[E]
	cur   E
	err   error
	done  bool
}

func (t *typed[E]) Next() bool {
	if t.err != nil || t.done {
		return false
	}
	for t.r.Next() {
		e, ok, done, err := t.parse(t.r.Event())
		switch {
		case err != nil:
			t.err = err
			return false
		case done:
			t.done = true
			return false
		case ok:
			t.cur = e
			return true
		}
	}
	t.err = t.r.Err()
	return false
}

func (t *typed[E]) Current() E   { return t.cur }
func (t *typed[E]) Err() error   { return t.err }
func (t *typed[E]) Close() error { return t.r.Close() }
