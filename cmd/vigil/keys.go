package main

import (
	"crypto/rand"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
)

func newKeysCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Make the key that signs session checkpoints",
	}
	cmd.AddCommand(newKeysGenerateCmd(e))
	return cmd
}

func newKeysGenerateCmd(e *env) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "generate NAME --out FILE",
		Short: "Generate a checkpoint signing key; print its public key",
		Long: `Generate an Ed25519 key for signing session checkpoints (C2SP signed notes):
the private key is written to FILE (mode 0600; an existing file is refused),
the public key, for auditors, is printed on stdout. NAME names the key in
every signature and in vigil verify's coverage line (vigil-audit-2026, say).

A process signs its sessions' checkpoints when its store's signing.key_file
in plugins.yaml names the file, or else VIGIL_SIGNING_KEY_FILE does (or
VIGIL_SIGNING_KEY holds the key itself); signing.require: true makes a log
without checkpoints a missing-checkpoint finding of vigil verify. An auditor
checks a log with vigil verify --key PUBKEY.`,
		Example: `  vigil keys generate vigil-audit-2026 --out ~/.vigil/signing.key > vigil-audit-2026.pub
  export VIGIL_SIGNING_KEY_FILE=~/.vigil/signing.key
  vigil verify --key "$(cat vigil-audit-2026.pub)" .vigil/sessions/*.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: action(func(_ *cobra.Command, args []string) error {
			if out == "" {
				return usagef("keys generate needs --out FILE for the private key")
			}
			skey, vkey, err := note.GenerateKey(rand.Reader, args[0])
			if err != nil {
				return usagef("key name %q: %v", args[0], err)
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintln(f, skey); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(e.stdout, vkey)
			return err
		}),
	}
	cmd.Flags().StringVar(&out, "out", "", "the file to write the private key to")
	return cmd
}
