package bus

import (
	"fmt"
	"net/url"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// Module is a plugin that can be loaded by name (from plugins.yaml).
// Built-in plugins register theirs at init time: most with [RegisterFunc],
// plugin types of their own with [Register].
type Module struct {
	// Name is the name used in plugins.yaml, like "provider/openai".
	Name string
	// Description is one line for `vigil plugins`.
	Description string
	// Config returns a pointer to a new zero config value that the loader
	// decodes the entry's config into, then hands to the plugin. Nil
	// means the plugin takes no config.
	Config func() any
	// New returns the plugin to apply.
	New func() Plugin
	// Package is the import path of the Go package that implements the
	// module, shown by `vigil plugins`. Left empty, [Register] fills in
	// the package of the code that called it (outside this package).
	Package string
}

var modules = struct {
	sync.RWMutex
	byName map[string]Module
}{byName: map[string]Module{}}

// Register adds m to the module registry. Registering an empty or taken
// name is a programming error and panics, at init time.
func Register(m Module) {
	if m.Name == "" || m.New == nil {
		panic("bus: Register needs a name and a constructor")
	}
	if m.Package == "" {
		m.Package = callerPackage()
	}
	modules.Lock()
	defer modules.Unlock()
	if _, ok := modules.byName[m.Name]; ok {
		panic(fmt.Sprintf("bus: module %q registered twice", m.Name))
	}
	modules.byName[m.Name] = m
}

// busPackage is this package's import path.
var busPackage = reflect.TypeOf(Module{}).PkgPath()

// callerPackage is the import path of the innermost caller outside this
// package: the package whose init registers a module, however many
// helpers of this package it went through.
func callerPackage() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if p := funcPackage(f.Function); p != busPackage && p != "" {
			return p
		}
		if !more {
			return ""
		}
	}
}

// funcPackage returns the import path in a qualified function name such
// as "example.com/a/b.init.0" or "example.com/a/b.(*T).M". The linker
// escapes dots in the path's last element ("yaml%2ev3"), so the first dot
// after the last slash ends the path.
func funcPackage(name string) string {
	slash := strings.LastIndexByte(name, '/')
	dot := strings.IndexByte(name[slash+1:], '.')
	if dot < 0 {
		return ""
	}
	path := name[:slash+1+dot]
	if p, err := url.PathUnescape(path); err == nil {
		return p
	}
	return path
}

// LookupModule returns the module registered under name.
func LookupModule(name string) (Module, bool) {
	modules.RLock()
	defer modules.RUnlock()
	m, ok := modules.byName[name]
	return m, ok
}

// Modules returns every registered module, sorted by name.
func Modules() []Module {
	modules.RLock()
	defer modules.RUnlock()
	out := make([]Module, 0, len(modules.byName))
	for _, m := range modules.byName {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
