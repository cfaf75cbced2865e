package main

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is stamped by a release build:
//
//	go build -trimpath -ldflags "-s -w -X main.version=v1.2.3" ./cmd/vigil
//
// Unstamped, the module's build info says what was built.
var version string

// versionString is the version of this binary: the stamp, else the
// main module's version from the build info (a tag for `go install
// …@v1.2.3`, a pseudo-version or "(devel)" for a checkout) with the VCS
// revision when the build recorded one.
func versionString() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" (%.12s%s)", rev, modified)
	}
	return v
}

func newVersionCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of vigil",
		Long: `Print the version of this binary: the one a release build stamped
(-ldflags "-X main.version=…"), else the module's build info, then the Go
version and platform it was built with.`,
		Example: "  vigil version",
		Args:    noArgs,
		RunE: action(func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(e.stdout, "vigil %s %s %s/%s\n", versionString(), goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
			return err
		}),
	}
}
