package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckLoopback(t *testing.T) {
	cases := []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://[::1]:8080", true},
		{"http://localhost:8080", true},
		{"http://10.0.0.1:8080", false},
		{"http://example.com", false},
		{"https://127.0.0.1:8080", false},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			err := checkLoopback(c.url)
			if c.ok {
				assert.NoError(t, err)
				return
			}
			assert.Error(t, err)
		})
	}
	assert.ErrorIs(t, checkLoopback("http://192.168.1.2"), errNotLoopback)
}

func TestSSEReader(t *testing.T) {
	in := "retry: 1000\n\n: heartbeat\n\nid: 0\ndata: {\"seq\":0}\n\nid: 1\ndata: {\"seq\":1}\n\n"
	r := newSSEReader(strings.NewReader(in))
	for want := range int64(2) {
		id, data, err := r.next()
		require.NoError(t, err)
		assert.Equal(t, want, id)
		assert.JSONEq(t, `{"seq":`+string(rune('0'+want))+`}`, string(data))
	}
	_, _, err := r.next()
	assert.ErrorIs(t, err, io.EOF)

	_, _, err = newSSEReader(strings.NewReader("event: x\n\n")).next()
	assert.Error(t, err, "a line the server never sends")
}

func TestSameLines(t *testing.T) {
	l0, l1 := `{"seq":0,"type":"turn/start"}`, `{"seq":1,"type":"turn/end"}`
	cp := `{"seq":2,"type":"integrity/checkpoint","ignorable":true}`
	stored := l0 + "\n" + l1 + "\n"
	cases := []struct {
		name   string
		got    []string
		stored string
		after  int
		ok     bool
	}{
		{"same", []string{l0, l1}, stored, 0, true},
		{"lost", []string{l0}, stored, 0, false},
		{"duplicate", []string{l0, l1, l1}, stored, 0, false},
		{"different", []string{l0, `{"seq":1,"type":"turn/start"}`}, stored, 0, false},
		{"a checkpoint after the last turn", []string{l0, l1}, stored + cp + "\n", 1, true},
		{"a checkpoint streamed too", []string{l0, l1, cp}, stored + cp + "\n", 0, true},
		{"a lost event after a checkpoint", []string{l0}, l0 + "\n" + `{"seq":1,"type":"integrity/checkpoint","ignorable":true}` + "\n" + `{"seq":2,"type":"turn/end"}` + "\n", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got [][]byte
			for _, l := range c.got {
				got = append(got, []byte(l))
			}
			after, err := sameLines(got, []byte(c.stored))
			if c.ok {
				assert.NoError(t, err)
				assert.Equal(t, c.after, after)
				return
			}
			assert.ErrorIs(t, err, errMismatch)
		})
	}
	_, err := sameLines([][]byte{[]byte(l1)}, []byte(l1+"\n"))
	assert.True(t, errors.Is(err, errMismatch), "seqs must start at 0: %v", err)
}

func TestParseStat(t *testing.T) {
	// Fields 14-17 are utime, stime, cutime, cstime; 24 is rss (pages).
	line := "42 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 100 50 20 10 15 16 17 18 19 20 300 22 23\n"
	st, err := parseStat([]byte(line), false)
	require.NoError(t, err)
	assert.Equal(t, 1500*time.Millisecond, st.CPU)
	assert.Positive(t, st.RSS)
	st, err = parseStat([]byte(line), true)
	require.NoError(t, err)
	assert.Equal(t, 1800*time.Millisecond, st.CPU)
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(101-i)*time.Millisecond)
	}
	assert.Equal(t, 50*time.Millisecond, percentile(ds, 50))
	assert.Equal(t, 99*time.Millisecond, percentile(ds, 99))
	assert.Equal(t, time.Duration(0), percentile(nil, 50))
}
