package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkStartup builds the default composition from the repository's
// plugins.yaml (store, provider, agent, tools, invariants) and tears it
// down: what `vigil run` does before the model is called.
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	src, err := os.ReadFile("../../plugins.yaml")
	if err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(cfg, src, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Chdir(dir)
	e := &env{stdin: os.Stdin, stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	b.ReportAllocs()
	for b.Loop() {
		h, err := openHost(e, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.runtime(); err != nil {
			b.Fatal(err)
		}
		if err := h.close(); err != nil {
			b.Fatal(err)
		}
	}
}
