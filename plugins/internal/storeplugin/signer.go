package storeplugin

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// The signing key of the sessions' checkpoints (see `vigil keys
// generate`): the key itself in SigningKeyEnv, or the file it is in
// named by SigningKeyFileEnv. Neither set: sessions are not signed.
const (
	SigningKeyEnv     = "VIGIL_SIGNING_KEY"
	SigningKeyFileEnv = "VIGIL_SIGNING_KEY_FILE"
)

// SignerFromEnv returns the signer of the key the environment names, nil
// when it names none.
func SignerFromEnv() (note.Signer, error) {
	key := os.Getenv(SigningKeyEnv)
	if key == "" {
		path := os.Getenv(SigningKeyFileEnv)
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", SigningKeyFileEnv, err)
		}
		key = string(b)
	}
	s, err := note.NewSigner(strings.TrimSpace(key))
	if err != nil {
		// The key is secret: the error names where it came from, not it.
		return nil, errors.New("signing key: not a signing key (PRIVATE+KEY+name+hash+key, as vigil keys generate writes it)")
	}
	return s, nil
}
