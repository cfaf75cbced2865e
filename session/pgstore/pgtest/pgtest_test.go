package pgtest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records how DSN gave up.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic(r)
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	panic(r)
}

func dsnOf(r *recorder) (dsn string) {
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
	}()
	return DSN(r)
}

func TestDSNWithoutAServer(t *testing.T) {
	cases := []struct {
		ci, dsn          string
		want, fail, skip bool
	}{
		{ci: "true", dsn: "", fail: true},
		{ci: "", dsn: "", skip: true},
		{ci: "false", dsn: "", skip: true},
		{ci: "true", dsn: "postgres://x", want: true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("CI=%q DSN=%q", c.ci, c.dsn), func(t *testing.T) {
			t.Setenv("CI", c.ci)
			t.Setenv(EnvDSN, c.dsn)
			r := &recorder{TB: t}
			got := dsnOf(r)
			if c.want && got != c.dsn {
				t.Errorf("DSN = %q, want %q", got, c.dsn)
			}
			if (r.fatal != "") != c.fail || (r.skip != "") != c.skip {
				t.Errorf("fatal %q, skip %q; want fail %v, skip %v", r.fatal, r.skip, c.fail, c.skip)
			}
		})
	}
}
