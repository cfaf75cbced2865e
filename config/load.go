package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"

	"go.yaml.in/yaml/v4"

	"github.com/vigil-run/vigil/bus"
)

// GroupName is the name of the built-in plugin that applies a list of
// entries as one fiber.
const GroupName = "group"

// Entry is one plugin of a composition.
type Entry struct {
	// ID identifies the entry across reloads; it defaults to Name.
	ID string
	// Name is the registered plugin name.
	Name string
	// Disabled entries are kept in the file but not applied.
	Disabled bool
	// Config is the decoded config: a pointer to the module's config
	// struct, []Entry for a group, or nil.
	Config any
	// Line and Col locate the entry in its file.
	Line, Col int

	fingerprint string
}

// File is a loaded plugins.yaml.
type File struct {
	Path    string
	Entries []Entry
}

// Limits on a plugins.yaml, so that a file (also one read on a hot
// reload) cannot make the loader exhaust memory.
const (
	// MaxFileSize bounds the size of a plugins.yaml in bytes.
	MaxFileSize = 1 << 20
	// MaxAliasNodes bounds the YAML nodes aliases (*name) may add to the
	// file when expanded, nested aliases included.
	MaxAliasNodes = 10_000
)

// Load reads and decodes the file at path, expanding ${VAR} from the
// environment. Relative values of path fields resolve against the
// file's directory (see the package doc).
func Load(path string) (*File, error) {
	return load(path, nil)
}

// LoadOnly reads and decodes the file at path like Load, but keeps
// enabled only the entries whose plugin name only accepts (groups are
// kept, and hold what they keep). The others are checked as disabled
// entries are: a ${VAR} they name need not be set and they are not
// validated. Commands that need one part of a composition (the session
// store) use it, so that a variable the rest needs (a provider's API key)
// need not be set for them.
func LoadOnly(path string, only func(name string) bool) (*File, error) {
	return load(path, only)
}

func load(path string, only func(string) bool) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	// One byte more than the limit is enough to see it is exceeded.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	// Absolute, so that the resolved paths do not depend on the working
	// directory either when a plugin uses them.
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(path, dir, data, envLookup, only)
}

// Parse decodes a plugins.yaml held in data; name is used in error
// positions. lookup resolves ${VAR}; nil means the environment. Data has
// no directory, so relative values of path fields are kept as written
// (only ~ is expanded).
func Parse(name string, data []byte, lookup func(string) (string, bool)) (*File, error) {
	if lookup == nil {
		lookup = envLookup
	}
	return parse(name, "", data, lookup, nil)
}

func parse(name, dir string, data []byte, lookup func(string) (string, bool), only func(string) bool) (*File, error) {
	if len(data) > MaxFileSize {
		line := 1 + bytes.Count(data[:MaxFileSize], []byte("\n"))
		col := MaxFileSize - bytes.LastIndexByte(data[:MaxFileSize], '\n')
		return nil, &Error{File: name, Line: line, Col: col, Msg: fmt.Sprintf("the file is larger than %d bytes (1 MiB)", MaxFileSize), Err: ErrTooLarge}
	}
	d := &decoder{file: name, dir: dir, lookup: lookup, only: only}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(name, err)
	}
	f := &File{Path: name}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return f, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, d.errAt(top, ErrType, "expected a mapping with a plugins list, got %s", describe(top))
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if k.Value != "plugins" {
			if err := d.keep(d.errAt(k, ErrUnknownKey, "unknown key %q%s", k.Value, suggest(k.Value, []string{"plugins"}))); err != nil {
				return nil, err
			}
			continue
		}
		entries, err := d.entries(v)
		if err := d.keep(err); err != nil {
			return nil, err
		}
		f.Entries = entries
	}
	if err := problems(d.problems); err != nil {
		// The peers of a file with mistakes would be checked against
		// entries that are not what the file means.
		return nil, err
	}
	if err := CheckPeers(f.Entries); err != nil {
		var ce *Error
		if errors.As(err, &ce) && ce.File == "" {
			ce.File = name
		}
		return nil, err
	}
	return f, nil
}

// peerChecker is a config that checks itself against the other enabled
// entries of its composition (the agents: what they delegate to, the
// tools and provider they name), given as parallel slices of ids, plugin
// names and configs. An error with a Position method is reported there.
type peerChecker interface {
	CheckPeers(ids, names []string, configs []any) error
}

// CheckPeers runs the check of every enabled entry whose config checks
// itself against the others (see the agent's as_tool), groups flattened;
// Load runs it, and so does vigil.Compose for entries built in Go. The
// error is an [*Error] at the position the check names, else at the
// entry (File is left empty for the caller).
func CheckPeers(entries []Entry) error {
	var (
		flat       []Entry
		ids, names []string
		configs    []any
		walk       func([]Entry)
	)
	walk = func(es []Entry) {
		for _, e := range es {
			if e.Disabled {
				continue
			}
			if children, ok := e.Config.([]Entry); ok && e.Name == GroupName {
				walk(children)
				continue
			}
			flat = append(flat, e)
			ids, names, configs = append(ids, e.ID), append(names, e.Name), append(configs, e.Config)
		}
	}
	walk(entries)
	for _, e := range flat {
		pc, ok := e.Config.(peerChecker)
		if !ok {
			continue
		}
		if err := pc.CheckPeers(ids, names, configs); err != nil {
			line, col := e.Line, e.Col
			var pos interface{ Position() (int, int) }
			if errors.As(err, &pos) {
				if l, c := pos.Position(); l > 0 {
					line, col = l, c
				}
			}
			return &Error{Line: line, Col: col, Msg: fmt.Sprintf("%s: %v", e.ID, err), Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
	}
	return nil
}

// syntaxError is the error of a file the YAML parser refuses, at the
// position of the problem itself (an indentation mistake is on its own
// line, not where its block began, which the message names).
func syntaxError(name string, err error) error {
	line, col, msg := 1, 1, err.Error()
	var le *yaml.LoadError
	if errors.As(err, &le) {
		msg = le.Message
		if le.Mark.Line > 0 {
			line, col = le.Mark.Line, max(le.Mark.Column, 1)
		}
		if c := le.ContextMark; le.ContextMsg != "" && c.Line > 0 && c != le.Mark {
			msg += fmt.Sprintf(" (%s from %d:%d)", le.ContextMsg, c.Line, c.Column)
		}
		if indentation.MatchString(le.Message) {
			msg += "; check this line's indentation against the lines above"
		}
	}
	return &Error{File: name, Line: line, Col: col, Msg: "YAML syntax: " + msg, Err: ErrSyntax}
}

// indentation matches the parser's messages that a line indented too
// little or too much gives.
var indentation = regexp.MustCompile(`expected key|expected '-' indicator|mapping values are not allowed`)

// entries decodes a list of plugin entries.
func (d *decoder) entries(n *yaml.Node) ([]Entry, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, d.errAt(n, ErrType, "expected a list of plugins, got %s", describe(n))
	}
	out := make([]Entry, 0, len(n.Content))
	ids := map[string]*yaml.Node{}
	for _, en := range n.Content {
		e, err := d.entry(en)
		if err := d.keep(err); err != nil {
			return nil, err
		}
		if prev, ok := ids[e.ID]; ok && e.ID != "" {
			err = d.errAt(en, ErrDuplicateID, "duplicate id %q (first at line %d); give one entry an id", e.ID, prev.Line)
			if err := d.keep(err); err != nil {
				return nil, err
			}
			continue
		}
		ids[e.ID] = en
		out = append(out, e)
	}
	return out, nil
}

var entryKeys = []string{"name", "id", "disabled", "config"}

func (d *decoder) entry(n *yaml.Node) (Entry, error) {
	e := Entry{Line: n.Line, Col: n.Column}
	if n.Kind != yaml.MappingNode {
		return e, d.errAt(n, ErrType, "expected a plugin entry (a mapping with a name), got %s", describe(n))
	}
	before := len(d.problems)
	nameNode, cfgNode, err := d.entryKeys(n, &e)
	if err != nil {
		return e, err
	}
	if len(d.problems) > before && (nameNode == nil || e.Name == "") {
		// A misspelt name key is reported once, with its suggestion.
		return e, nil
	}
	if d.only != nil && e.Name != GroupName && !d.only(e.Name) {
		e.Disabled = true
	}
	if e.Disabled {
		// A disabled entry is still checked, but the variables it names
		// need only be set once it is enabled. The decoder itself is
		// kept: its alias budget is the whole file's.
		defer d.lenient()()
	}
	if nameNode == nil || e.Name == "" {
		return e, d.errAt(n, ErrMissingKey, "missing required key \"name\"")
	}
	if e.ID == "" {
		e.ID = e.Name
	}
	if e.Name == GroupName {
		return d.group(e, cfgNode)
	}
	return d.plugin(n, e, nameNode, cfgNode)
}

// entryKeys decodes the keys of entry n but its config into e, and
// returns the nodes of its name and its config (nil: not given).
func (d *decoder) entryKeys(n *yaml.Node, e *Entry) (nameNode, cfgNode *yaml.Node, err error) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "name":
			nameNode = v
			e.Name, err = d.scalar(v, "a plugin name")
		case "id":
			e.ID, err = d.scalar(v, "an id")
		case "disabled":
			err = d.decode(v, reflect.ValueOf(&e.Disabled).Elem())
		case "config":
			cfgNode = v
		default:
			err = d.errAt(k, ErrUnknownKey, "unknown key %q%s", k.Value, suggest(k.Value, entryKeys))
		}
		if err := d.keep(err); err != nil {
			return nameNode, cfgNode, err
		}
	}
	return nameNode, cfgNode, nil
}

// lenient makes every variable count as set until the function it
// returns restores the strict lookup.
func (d *decoder) lenient() func() {
	strict := d.lookup
	d.lookup = func(name string) (string, bool) {
		v, _ := strict(name)
		return v, true
	}
	return func() { d.lookup = strict }
}

// group completes e, a group entry, with its children, the entries of
// its config node cfgNode.
func (d *decoder) group(e Entry, cfgNode *yaml.Node) (Entry, error) {
	var children []Entry
	if cfgNode != nil {
		var err error
		if children, err = d.entries(cfgNode); err != nil {
			return e, err
		}
	}
	e.Config = children
	e.fingerprint = groupFingerprint(children)
	return e, nil
}

// plugin completes e, the entry n of a plugin, with its config decoded
// from cfgNode (nil: an empty mapping) and validated if e is enabled.
func (d *decoder) plugin(n *yaml.Node, e Entry, nameNode, cfgNode *yaml.Node) (Entry, error) {
	m, ok := bus.LookupModule(e.Name)
	if !ok {
		return e, d.errAt(nameNode, ErrUnknownPlugin, "unknown plugin %q%s", e.Name, suggest(e.Name, moduleNames()))
	}
	if m.Config == nil {
		if cfgNode != nil && !(cfgNode.Kind == yaml.ScalarNode && cfgNode.Tag == "!!null") {
			return e, d.errAt(cfgNode, ErrUnknownKey, "plugin %q takes no config", e.Name)
		}
		e.fingerprint = "null"
		return e, nil
	}
	cfg := m.Config()
	at := cfgNode
	if at == nil {
		at = &yaml.Node{Kind: yaml.MappingNode, Line: n.Line, Column: n.Column}
	}
	before := len(d.problems)
	if err := d.decode(at, reflect.ValueOf(cfg).Elem()); err != nil {
		return e, err
	}
	if len(d.problems) > before {
		// Validating a config decoded in part would report what the
		// file does not say.
		return e, nil
	}
	// A config that wants to name its entry in errors learns its id.
	if v, ok := cfg.(interface{ SetEntryID(string) }); ok {
		v.SetEntryID(e.ID)
	}
	// One with a default relative to the file (tools/mcp's roots) learns
	// its folder; Parse has none.
	if v, ok := cfg.(interface{ SetFolder(string) }); ok && d.dir != "" {
		v.SetFolder(d.dir)
	}
	if v, ok := cfg.(interface{ Validate() error }); ok && !e.Disabled {
		if err := v.Validate(); err != nil {
			return e, &Error{File: d.file, Line: at.Line, Col: at.Column, Msg: fmt.Sprintf("%s: %v", e.Name, err), Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
	}
	e.Config = cfg
	e.fingerprint = fingerprint(cfg)
	return e, nil
}

func moduleNames() []string {
	mods := bus.Modules()
	names := make([]string, 0, len(mods)+1)
	for _, m := range mods {
		names = append(names, m.Name)
	}
	return append(names, GroupName)
}

func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

func groupFingerprint(es []Entry) string {
	var b bytes.Buffer
	for _, e := range es {
		fmt.Fprintf(&b, "%s|%s|%t|%s\n", e.ID, e.Name, e.Disabled, e.fingerprint)
	}
	return b.String()
}
