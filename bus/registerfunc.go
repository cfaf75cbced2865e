package bus

import "reflect"

// RegisterFunc registers, under name, the plugin that applies apply with
// a C decoded from its plugins.yaml entry (validated first when C or *C is
// a [Validator]; a C of struct{} takes no config), and returns it, for the
// package to export and for Go programs and tests to apply with
// [Context.Plugin]. opts declare the services it reads ([Requires],
// [Optional]). Like [Register], it panics on an empty or taken name.
func RegisterFunc[C any](name, description string, apply func(*Context, C) error, opts ...FuncOption) *Func[C] {
	f := PluginFunc(name, apply, opts...)
	Register(Module{Name: name, Description: description, Config: newConfig[C](), New: func() Plugin { return f }})
	return f
}

// newConfig returns the Module.Config of a plugin whose config is a C:
// nil for struct{}, which takes none.
func newConfig[C any]() func() any {
	t := reflect.TypeFor[C]()
	switch {
	case t.Kind() == reflect.Struct && t.NumField() == 0:
		return nil
	case t.Kind() == reflect.Pointer:
		return func() any { return reflect.New(t.Elem()).Interface() }
	default:
		return func() any { return new(C) }
	}
}
