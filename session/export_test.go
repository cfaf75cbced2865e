package session

import "reflect"

// CorePayloadTypes returns each core event type's payload type, for the
// external tests that cover every core type.
func CorePayloadTypes() map[string]reflect.Type {
	out := make(map[string]reflect.Type, len(coreKinds))
	for name, k := range coreKinds {
		out[name] = k.payload
	}
	return out
}
