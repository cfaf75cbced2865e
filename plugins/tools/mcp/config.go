package mcp

//lint:file-ignore SA1019 MCP roots are deprecated by SEP-2577 but remain what servers read during the deprecation window (issue 33 item 11).

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTimeout bounds each request to the server when Config.Timeout is
// zero.
const DefaultTimeout = 60 * time.Second

// ErrConfig marks an invalid config.
var ErrConfig = errors.New("tools/mcp: invalid config")

// Config is the plugin's config: either Command (stdio) or URL
// (streamable HTTP).
type Config struct {
	// Command starts the server as a subprocess spoken to over stdio. It
	// is used as written, as os/exec does: a bare name is looked up on
	// PATH, a relative path is relative to Dir (or, without Dir, to the
	// working directory).
	Command string `yaml:"command" doc:"Starts the server as a subprocess spoken to over stdio. It is used as written, as os/exec does: a bare name is looked up on PATH, a relative path is relative to Dir (or, without Dir, to the working directory)."`
	// Args are the command's arguments, handed over as written (the
	// server decides what they mean).
	Args []string `yaml:"args" doc:"The command's arguments, handed over as written (the server decides what they mean)."`
	// Env adds to (or overrides) the host's environment for the command.
	Env map[string]string `yaml:"env" doc:"Adds to (or overrides) the host's environment for the command."`
	// Dir is the command's working directory; empty is the host's. In
	// plugins.yaml a relative dir is relative to the file's directory.
	Dir string `yaml:"dir" vigil:"path" doc:"The command's working directory; empty is the host's. In plugins.yaml a relative dir is relative to the file's directory."`

	// URL is the endpoint of a server spoken to over streamable HTTP.
	URL string `yaml:"url" doc:"The endpoint of a server spoken to over streamable HTTP."`
	// Headers are sent with every HTTP request (for example an
	// Authorization header, from "${VAR}").
	Headers map[string]string `yaml:"headers" doc:"Sent with every HTTP request (for example an Authorization header, from '${VAR}')."`

	// Include, when not empty, keeps only the tools whose server name
	// matches one of these path.Match patterns.
	Include []string `yaml:"include" doc:"When not empty, keeps only the tools whose server name matches one of these path.Match patterns."`
	// Exclude drops the tools whose server name matches one of these
	// path.Match patterns (after Include).
	Exclude []string `yaml:"exclude" doc:"Drops the tools whose server name matches one of these path.Match patterns (after Include)."`
	// Prefix is put before every tool name the model sees, so that two
	// servers with a tool of the same name can be mounted together.
	Prefix string `yaml:"prefix" doc:"Put before every tool name the model sees, so that two servers with a tool of the same name can be mounted together."`
	// Timeout bounds each request to the server: the handshake, a tools
	// listing, a tool call. Zero means DefaultTimeout.
	Timeout time.Duration `yaml:"timeout" doc:"Bounds each request to the server: the handshake, a tools listing, a tool call. Zero means DefaultTimeout."`
	// Roots are the folders the server is told it may work in (MCP
	// roots). Unset, it is the folder of plugins.yaml; an empty list
	// offers none, and then the client does not advertise the roots
	// capability at all (nor does it for a composition built in Go
	// without roots: it has no folder).
	Roots []string `yaml:"roots" vigil:"path" doc:"Folders offered to the server as MCP roots. Default: the folder of plugins.yaml; [] offers none, and the client then does not advertise roots."`

	// folder is the directory of the plugins.yaml the config was loaded
	// from ("" for one built in Go), the default root.
	folder string
}

// SetFolder tells the config the directory of the file it was loaded
// from; the config loader calls it.
func (c *Config) SetFolder(dir string) { c.folder = dir }

// roots returns the roots offered to the server, as file URIs.
func (c *Config) roots() ([]*mcpsdk.Root, error) {
	dirs := c.Roots
	if dirs == nil && c.folder != "" {
		dirs = []string{c.folder}
	}
	out := make([]*mcpsdk.Root, 0, len(dirs))
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("root %q: %w", d, err)
		}
		u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
		out = append(out, &mcpsdk.Root{URI: u.String(), Name: filepath.Base(abs)})
	}
	return out, nil
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	switch {
	case c.Command == "" && c.URL == "":
		errs = append(errs, errors.New("one of command or url is required"))
	case c.Command != "" && c.URL != "":
		errs = append(errs, errors.New("command and url are exclusive"))
	}
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("url %q is not an http or https URL", c.URL))
		}
		if len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != "" {
			errs = append(errs, errors.New("args, env and dir apply to command only"))
		}
	}
	if c.Command != "" && len(c.Headers) > 0 {
		errs = append(errs, errors.New("headers apply to url only"))
	}
	for _, p := range c.Include {
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("include pattern %q: %w", p, err))
		}
	}
	for _, p := range c.Exclude {
		if _, err := path.Match(p, ""); err != nil {
			errs = append(errs, fmt.Errorf("exclude pattern %q: %w", p, err))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, errors.New("timeout must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// timeout returns the request bound.
func (c *Config) timeout() time.Duration {
	if c.Timeout == 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

// selects reports whether the server's tool called name is offered.
// Patterns were checked by Validate.
func (c *Config) selects(name string) bool {
	if len(c.Include) > 0 && !matchAny(c.Include, name) {
		return false
	}
	return !matchAny(c.Exclude, name)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// server names the server in logs and errors.
func (c *Config) server() string {
	if c.URL != "" {
		return c.URL
	}
	return c.Command
}
