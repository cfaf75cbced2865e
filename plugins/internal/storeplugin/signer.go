package storeplugin

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/session/live"
)

// The signing key of the sessions' checkpoints (see `vigil keys
// generate`) when the store's signing setting names no key_file: the key
// itself in SigningKeyEnv, or the file it is in named by
// SigningKeyFileEnv. None of them set: sessions are not signed.
const (
	SigningKeyEnv     = "VIGIL_SIGNING_KEY"
	SigningKeyFileEnv = "VIGIL_SIGNING_KEY_FILE"
)

// Signer returns the signer of the key s names: its key_file, else the
// key the environment names; nil when none names one.
func Signer(s live.Signing) (note.Signer, error) {
	if s.KeyFile != "" {
		return signerFromFile("signing.key_file", s.KeyFile)
	}
	if key := os.Getenv(SigningKeyEnv); key != "" {
		return parseSigner(key)
	}
	if path := os.Getenv(SigningKeyFileEnv); path != "" {
		return signerFromFile(SigningKeyFileEnv, path)
	}
	return nil, nil
}

// ValidateSigning checks s: a key_file it names holds a signing key.
func ValidateSigning(s live.Signing) error {
	if s.KeyFile == "" {
		return nil
	}
	_, err := signerFromFile("signing.key_file", s.KeyFile)
	return err
}

func signerFromFile(what, path string) (note.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s, err := parseSigner(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return s, nil
}

func parseSigner(key string) (note.Signer, error) {
	s, err := note.NewSigner(strings.TrimSpace(key))
	if err != nil {
		// The key is secret: the error names where it came from, not it.
		return nil, errors.New("signing key: not a signing key (PRIVATE+KEY+name+hash+key, as vigil keys generate writes it)")
	}
	return s, nil
}
