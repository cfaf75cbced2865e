package invariants

import "github.com/vigil-run/vigil/session"

// decoded is the payload and sources of the record the rules and the
// transition read. Every rule that needs a payload asks for it, and apply
// asks again for the record validate just read; session.DecodeData and
// Record.Sources copy at each call, so each record is read once here and
// the copy shared by its readers, which only read it.
type decoded struct {
	rec            session.Record
	val            any // the payload, decoded as an any (see payload)
	err            error
	src            []int64
	valSet, srcSet bool
}

// at makes d the cache of r, dropping what it held of another record.
// Records are immutable, so what was read of r stays true of it.
func (d *decoded) at(r session.Record) {
	if d.rec != r {
		*d = decoded{rec: r}
	}
}

// sources returns r.Sources(), read once per record.
func (d *decoded) sources(r session.Record) []int64 {
	d.at(r)
	if !d.srcSet {
		d.src, d.srcSet = r.Sources(), true
	}
	return d.src
}

// payload returns r's payload as a T, decoded once per record. Decoded
// as an any, a payload without references is not boxed again
// (DecodeData[T] boxes its copy to clone it); anything but a T, or an
// error, falls back to DecodeData[T], so the result and its error are
// always DecodeData[T]'s.
func payload[T any](d *decoded, r session.Record) (T, error) {
	d.at(r)
	if !d.valSet {
		d.val, d.err = session.DecodeData[any](r)
		d.valSet = true
	}
	if p, ok := d.val.(T); ok && d.err == nil {
		return p, nil
	}
	return session.DecodeData[T](r)
}
