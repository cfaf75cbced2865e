package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

func newProveCmd(e *env) *cobra.Command {
	var cfg, out string
	var turn int
	cmd := &cobra.Command{
		Use:   "prove FILE|ID --turn N [--out FILE]",
		Short: "Prove one turn of a signed session to a third party",
		Long: `Write turn N of a signed session (a log file, or the id of a session in the
store of the composition -c names) as a turn proof: the turn's lines, each
with its inclusion proof in the tree of the first signed checkpoint after
the turn (the checkpoint the turn ended or suspended with), that checkpoint
and the header line's hash. Nothing else of the session is in it: hand it
on with the public key, and vigil verify-proof checks it alone. The format
is in docs/log-format.md, "Turn proofs".

The signature is not checked here (the prover may hold no public key):
verify-proof checks it. Exit 4 when the session or turn does not exist, 1
when no checkpoint follows the turn (an unsigned log, or a turn still open).`,
		Example: `  vigil prove 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --turn 3 --out turn3.proof.json
  vigil verify-proof --key vigil-audit-2026.pub turn3.proof.json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSessionIDs(e, true),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if turn < 1 {
				return usagef("prove needs --turn N (turns count from 1)")
			}
			return cmdProve(cmd.Context(), e, cfg, args[0], turn, out)
		}),
	}
	configFlag(cmd, &cfg)
	cmd.Flags().IntVar(&turn, "turn", 0, "the turn to prove (from 1)")
	cmd.Flags().StringVar(&out, "out", "", "write the proof to this file (default stdout)")
	return cmd
}

func cmdProve(ctx context.Context, e *env, cfg, arg string, turn int, out string) error {
	var h *host
	defer func() {
		if h != nil {
			_ = h.close()
		}
	}()
	data, err := readLog(ctx, e, cfg, &h, arg)
	if err != nil {
		return fmt.Errorf("%s: %w", arg, err)
	}
	p, err := invariants.ProveTurn(bytes.NewReader(data), turn)
	if errors.Is(err, session.ErrCorrupt) {
		return fmt.Errorf("%s: %w", arg, err) // which log the line is of
	}
	var pe *invariants.ProofError
	if errors.As(err, &pe) && pe.Reason == invariants.ProofNoTurn {
		// The reason code is for a proof's checker; a person asked for a
		// turn that is not there.
		return notFoundError{pe.Err}
	}
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "" {
		_, err = e.stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

func newVerifyProofCmd(e *env) *cobra.Command {
	var keys []string
	cmd := &cobra.Command{
		Use:   "verify-proof --key PUBKEY FILE",
		Short: "Check a turn proof alone with the public key",
		Long: `Check a turn proof (as vigil prove writes it) with nothing but the auditor's
public key (as vigil keys generate printed it, or a file holding it;
repeat for several): the checkpoint's signature, that it is of the proof's
session and header, that every line is the leaf of its seq in the
checkpoint's tree, and that the lines are the whole turn from its
turn/start, none of another turn. On success it prints

  FILE: proven: turn N of session ID, seqs A-B (K lines, ended|open), covered by NAME at checkpoint size S

A refusal prints FILE: refused: REASON: message and exits 1, REASON one of
malformed, key-mismatch, bad-signature, wrong-session, header-mismatch,
not-covered, inclusion-mismatch, wrong-turn, incomplete.`,
		Example: `  vigil verify-proof --key vigil-audit-2026.pub turn3.proof.json`,
		Args:    cobra.ExactArgs(1),
		RunE: action(func(_ *cobra.Command, args []string) error {
			if len(keys) == 0 {
				return usagef("verify-proof needs --key PUBKEY: a proof is checked with the key that signed it")
			}
			vs, err := verifiersOf(keys)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			p, err := invariants.DecodeTurnProof(data)
			var got *invariants.ProvenTurn
			if err == nil {
				got, err = invariants.VerifyTurnProof(p, vs)
			}
			if err != nil {
				fmt.Fprintf(e.stdout, "%s: refused: %v\n", args[0], err)
				return silentError{code: exitFailed}
			}
			state := "open"
			if got.Ended {
				state = "ended"
			}
			first, last := got.Records[0].Seq(), got.Records[len(got.Records)-1].Seq()
			_, err = fmt.Fprintf(e.stdout, "%s: proven: turn %d of session %s, seqs %d-%d (%d lines, %s), covered by %s at checkpoint size %d\n",
				args[0], got.Turn, got.Session, first, last, len(got.Records), state, got.Key, got.Checkpoint.Size)
			return err
		}),
	}
	cmd.Flags().StringArrayVar(&keys, "key", nil, "the public key the checkpoint is signed with (or a file holding it); repeatable")
	return cmd
}
