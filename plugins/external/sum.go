package external

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"os"
)

func newSHA256() hash.Hash { return sha256.New() }

func hexDecode(s string) ([]byte, error) { return hex.DecodeString(s) }

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
