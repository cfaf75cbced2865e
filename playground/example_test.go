package playground_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/vigil-run/vigil/playground"
)

// The playground's page drives it over a small JSON API; so can a
// program. Here: become a visitor (every page load is one, with a demo of
// its own), play the demo to its calc call, which waits for a decision,
// allow it, play on to the end, delete the second question
// from a copy of its log, send the next request as a loop that kept its
// own message list would, and read the invariants plugin's verdict.
func Example() {
	pg, err := playground.New(playground.Options{Delay: time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- pg.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()

	call := func(method, path string, body, out any) {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, url+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		_ = json.NewDecoder(resp.Body).Decode(out)
	}

	var me struct{ Visitor string }
	call("POST", "/api/visitor", struct{}{}, &me)
	as := "?visitor=" + me.Visitor

	var play struct{ Session string }
	call("POST", "/api/control"+as, map[string]string{"op": "finish"}, &play)
	type pending struct{ ID, Tool, Arguments, Reason string }
	var demo struct {
		Records []json.RawMessage
		State   struct {
			Suspended *struct{ Calls []pending }
		}
	}
	get := func(done func() bool) {
		for deadline := time.Now().Add(10 * time.Second); !done() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
			demo.Records, demo.State.Suspended = nil, nil
			call("GET", "/api/sessions/"+play.Session+as, nil, &demo)
		}
	}
	get(func() bool { return demo.State.Suspended != nil })
	c := demo.State.Suspended.Calls[0]
	fmt.Printf("waiting for a decision on %s(%s): %s\n", c.Tool, c.Arguments, c.Reason)
	var decided struct{ Resumed bool }
	call("POST", "/api/decide"+as, map[string]any{"session": play.Session, "call": c.ID, "allow": true}, &decided)
	fmt.Println("allowed; resumed:", decided.Resumed)
	get(func() bool { return len(demo.Records) == 52 })
	fmt.Println(len(demo.Records), "events; seq 36 is", string(demo.Records[36][strings.Index(string(demo.Records[36]), `"data"`):]))

	var res struct {
		Stage     string
		Violation struct{ Rule, Message string }
		Compare   []struct{ Mark string }
	}
	call("POST", "/api/send"+as, map[string]any{"session": play.Session, "delete": 36}, &res)
	fmt.Println(res.Stage, res.Violation.Rule+":", res.Violation.Message)
	marks := make([]string, len(res.Compare))
	for i, c := range res.Compare {
		marks[i] = map[string]string{"match": "✓", "diverge": "✗", "unchecked": "·"}[c.Mark]
	}
	fmt.Println(strings.Join(marks, " "))

	stop()
	fmt.Println(<-served)
	// Output:
	// waiting for a decision on calc({"expression":"7*24*60*60"}): the playground asks you before every calc call
	// allowed; resumed: true
	// 52 events; seq 36 is "data":{"content":"And in a single day?"}}
	// request request-reconstruction: message 2 differs from the fold of the log
	// ✓ ✓ ✗ · ·
	// <nil>
}
