package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/invariants"
)

// auditOf makes the audit of verify's --key and --anchor flags, nil
// when no key is given.
func auditOf(keys, anchors []string) (*invariants.Audit, error) {
	if len(keys) == 0 {
		if len(anchors) > 0 {
			return nil, usagef("--anchor needs --key: an anchor is checked with the key that signed it")
		}
		return nil, nil
	}
	vs, err := verifiersOf(keys)
	if err != nil {
		return nil, err
	}
	a := &invariants.Audit{Verifiers: vs}
	for _, path := range anchors {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, usagef("--anchor: %v", err)
		}
		// A note ends in one newline; a receipt saved by a tool that adds
		// its own (jq -r, echo) has two.
		a.Anchors = append(a.Anchors, append(bytes.TrimRight(b, "\r\n\t "), '\n'))
	}
	return a, nil
}

// verifiersOf reads --key flags: each a public key (as vigil keys
// generate prints it) or a file holding one.
func verifiersOf(keys []string) (note.Verifiers, error) {
	var vs []note.Verifier
	for _, k := range keys {
		text := k
		if b, err := os.ReadFile(k); err == nil {
			text = strings.TrimSpace(string(b))
		}
		v, err := note.NewVerifier(text)
		if err != nil {
			return nil, usagef("--key %s: not a public key (name+hash+key, as vigil keys generate prints it) nor a file holding one: %v", k, err)
		}
		vs = append(vs, v)
	}
	return note.VerifierList(vs...), nil
}

// integrityWord says what the report holds of the log's checkpoints.
func integrityWord(rep *invariants.Report) string {
	switch {
	case rep.Integrity != nil:
		return "checked"
	case rep.Checkpoints > 0:
		return "unchecked"
	}
	return "unsigned"
}

// printIntegrity prints what verify established of the log's checkpoints:
// its coverage and findings with --key, else whether it is signed.
func printIntegrity(e *env, label string, rep *invariants.Report) {
	in := rep.Integrity
	if in == nil {
		if rep.Checkpoints == 0 {
			fmt.Fprintf(e.stdout, "%s: unsigned\n", label)
		} else {
			fmt.Fprintf(e.stdout, "%s: %d checkpoints, not checked (no --key)\n", label, rep.Checkpoints)
		}
		return
	}
	for _, f := range in.Findings {
		fmt.Fprintf(e.stdout, "%s: %s\n", label, f)
	}
	if in.Verified == 0 {
		fmt.Fprintf(e.stdout, "%s: signed: no record covered; %d records after the last checkpoint\n", label, in.After)
		return
	}
	anchors := ""
	if in.Anchors > 0 {
		anchors = fmt.Sprintf("; %d anchors consistent", in.Anchors)
	}
	if in.Fork != "" {
		anchors += "; fork prefix " + in.Fork
	}
	fmt.Fprintf(e.stdout, "%s: signed: records 0-%d covered by %s; %d records after the last checkpoint%s\n",
		label, in.Covered-1, strings.Join(in.Keys, ", "), in.After, anchors)
}
