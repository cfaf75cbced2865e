package session_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// A Record is a value holding one reference that no exported name
// reaches: so whoever is handed one can assign only their own copy, and
// reflection can set nothing in it. (A struct handed out by pointer could
// be overwritten whole, *r = *forged, by anyone holding it.)
func TestRecordIsOneHiddenReference(t *testing.T) {
	typ := reflect.TypeFor[session.Record]()
	require.Equal(t, reflect.Struct, typ.Kind())
	require.Equal(t, 1, typ.NumField())
	f := typ.Field(0)
	assert.False(t, f.IsExported(), "field %s", f.Name)
	assert.Equal(t, reflect.Pointer, f.Type.Kind(), "field %s", f.Name)
	assert.Equal(t, typ.Size(), reflect.TypeFor[*int]().Size(), "a record costs a pointer to pass")

	r := sessiontest.Turn(t, 0, 1)[3]
	assert.False(t, reflect.ValueOf(&r).Elem().Field(0).CanSet())
}

// Every slice a record's methods return is the caller's: writing it
// changes neither the record nor what the next call returns.
func TestRecordMethodsReturnCopies(t *testing.T) {
	typ := reflect.TypeFor[session.Record]()
	for _, r := range sessiontest.Turn(t, 0, 1) {
		line := r.String()
		v := reflect.ValueOf(r)
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			if m.Type.NumIn() != 1 {
				continue // AppendLine: appends to the caller's slice
			}
			for k := range m.Type.NumOut() {
				out := m.Type.Out(k)
				require.NotContains(t, []reflect.Kind{reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer}, out.Kind(),
					"%s returns a %s: a door to the record", m.Name, out)
				if out.Kind() != reflect.Slice {
					continue
				}
				before := v.Method(i).Call(nil)[k].Interface()
				got := v.Method(i).Call(nil)[k]
				for j := range got.Len() {
					got.Index(j).Set(reflect.Zero(out.Elem()))
				}
				assert.Equal(t, before, v.Method(i).Call(nil)[k].Interface(), "%s of %s", m.Name, r.Type())
			}
		}
		assert.Equal(t, line, r.String())
	}
}
