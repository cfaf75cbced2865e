package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// cmdVerify runs the append rules and request-digest over stored logs:
// one line per violation, `RULE seq=N: message`. Exit 0 when every log is
// valid, 1 on violations or an unreadable log, 2 on usage errors.
func cmdVerify(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	cfg := fs.String("c", "plugins.yaml", "the plugins.yaml whose store holds session ids")
	asJSON := fs.Bool("json", false, "print the reports as JSON")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() == 0 {
		return usagef("verify needs a log file or session id")
	}
	var h *host
	defer func() {
		if h != nil {
			_ = h.close()
		}
	}()
	failed := false
	var reports []any
	for _, arg := range fs.Args() {
		rep, err := verifyOne(ctx, e, *cfg, &h, arg)
		if err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return err
			}
			failed = true
			fmt.Fprintf(e.stderr, "%s: %v\n", arg, err)
			reports = append(reports, map[string]any{"log": arg, "error": err.Error()})
			continue
		}
		if len(rep.Violations) > 0 {
			failed = true
		}
		if *asJSON {
			reports = append(reports, map[string]any{"log": arg, "session": rep.Session, "events": rep.Events, "violations": rep.Violations})
			continue
		}
		for _, v := range rep.Violations {
			fmt.Fprintf(e.stdout, "%s\n", v.String())
		}
		if len(rep.Violations) == 0 {
			fmt.Fprintf(e.stderr, "%s: ok (%d events)\n", arg, rep.Events)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			return err
		}
	}
	if failed {
		return silentError{exitFailed}
	}
	return nil
}

// verifyOne verifies a log file, or the log of a session id in the store
// of the composition (opened on first need).
func verifyOne(ctx context.Context, e *env, cfg string, h **host, arg string) (*invariants.Report, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return invariants.VerifyFile(arg)
	}
	if !session.ValidID(arg) {
		return nil, fmt.Errorf("no such file or session id")
	}
	data, err := exportSession(ctx, e, cfg, h, arg)
	if err != nil {
		return nil, err
	}
	return invariants.Verify(bytes.NewReader(data))
}

// exportSession returns the stored JSONL bytes of session id.
func exportSession(ctx context.Context, e *env, cfg string, h **host, id string) ([]byte, error) {
	if *h == nil {
		var err error
		if *h, err = openStoreHost(e, cfg); err != nil {
			return nil, err
		}
	}
	mgr, err := service(*h, live.Sessions)
	if err != nil {
		return nil, err
	}
	log, err := mgr.Store().Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return encodeLog(log.Info, log.Records), nil
}

// encodeLog renders a log in the JSONL format: header line, then records.
func encodeLog(info session.Info, records []*session.Record) []byte {
	size := 128
	for _, r := range records {
		size += r.LineLen()
	}
	out := session.AppendHeaderLine(make([]byte, 0, size), info)
	for _, r := range records {
		out = r.AppendLine(out)
	}
	return out
}
