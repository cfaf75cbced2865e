package bus

import (
	"fmt"
	"sort"
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
	modules.Lock()
	defer modules.Unlock()
	if _, ok := modules.byName[m.Name]; ok {
		panic(fmt.Sprintf("bus: module %q registered twice", m.Name))
	}
	modules.byName[m.Name] = m
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
