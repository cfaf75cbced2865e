package providertest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// Golden compares got with the file at path. With -update it writes got
// to the file instead. JSON is indented first so goldens read well and
// diff by line; key order is kept as sent.
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	if json.Valid(got) {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err == nil {
			buf.WriteByte('\n')
			got = buf.Bytes()
		}
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("providertest: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("providertest: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("providertest: %v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("providertest: %s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
