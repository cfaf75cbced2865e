package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
)

// scope says which of turn and step an event type carries.
type scope uint8

const (
	scopeAny      scope = iota // anything (plugin types, compaction)
	scopeNone                  // neither turn nor step
	scopeOptTurn               // optionally a turn, never a step without one
	scopeTurnOnly              // a turn and no step
	scopeTurn                  // a turn, optionally a step
	scopeStep                  // a turn and a step
)

// kind describes a core event type.
type kind struct {
	scope   scope
	surface bool
	payload reflect.Type // the payload struct type
	// decode parses data into the payload value (not a pointer).
	decode func(data []byte) (any, error)
	// decodeOwn is decode without its strictness, for bytes that are
	// canonical or are compared with the canonical encoding of what they
	// decode to (a record's own line, see pay; a line DecodeRecord reads):
	// an unknown field, a duplicate key or trailing data cannot survive
	// that comparison, so refusing them again only costs a cold open.
	decodeOwn func(data []byte) (any, error)
	name      string // the type's name
}

func kindOf[T any](sc scope, surface bool) *kind {
	return &kind{
		scope:   sc,
		surface: surface,
		payload: reflect.TypeFor[T](),
		// Unknown fields are refused: the record is encoded again from
		// the payload, which would drop them silently.
		decode: func(data []byte) (any, error) {
			var v T
			if err := strictUnmarshal(data, &v); err != nil {
				return nil, err
			}
			return v, nil
		},
		decodeOwn: func(data []byte) (any, error) {
			var v T
			if err := json.Unmarshal(data, &v); err != nil {
				return nil, err
			}
			return v, nil
		},
	}
}

var coreKinds = map[string]*kind{
	TypeTurnStart:        kindOf[TurnStart](scopeTurnOnly, false),
	TypeTurnEnd:          kindOf[TurnEnd](scopeTurnOnly, false),
	TypeStepStart:        kindOf[StepStart](scopeStep, false),
	TypeStepEnd:          kindOf[StepEnd](scopeStep, false),
	TypeUserMessage:      kindOf[UserMessage](scopeOptTurn, true),
	TypeRequestHeader:    kindOf[RequestHeader](scopeTurn, false),
	TypeRequestDigest:    kindOf[Digest](scopeStep, false),
	TypeRequestOneshot:   kindOf[Oneshot](scopeAny, false),
	TypeRequestUsage:     kindOf[Usage](scopeAny, false),
	TypeStepUsage:        kindOf[Usage](scopeStep, false),
	TypeAssistantChunk:   kindOf[AssistantChunk](scopeStep, false),
	TypeAssistantMessage: kindOf[AssistantMessage](scopeStep, true),
	TypeToolCall:         kindOf[ToolCall](scopeStep, false),
	TypeToolStart:        kindOf[ToolStart](scopeStep, false),
	TypeToolResult:       kindOf[ToolResult](scopeStep, true),
	TypeToolRetry:        kindOf[ToolRetry](scopeTurnOnly, false),
	TypeToolReconcile:    kindOf[ToolReconcile](scopeOptTurn, true),
	TypeCompactionStart:  kindOf[Compaction](scopeAny, false),
	TypeCompactionEnd:    kindOf[Compaction](scopeAny, false),
	TypeEndSeed:          kindOf[EndSeed](scopeNone, false),
	TypeApprovalRequest:  kindOf[ApprovalRequest](scopeStep, false),
	TypeApprovalDecision: kindOf[ApprovalDecision](scopeStep, false),
	TypeApprovalPolicy:   kindOf[ApprovalPolicy](scopeOptTurn, false),
}

func init() {
	for name, k := range coreKinds {
		k.name = name
	}
}

// CoreTypes returns the names of the core event types, sorted: the
// types docs/log-format.md defines, which no plugin may register.
func CoreTypes() []string { return slices.Sorted(maps.Keys(coreKinds)) }

// registered holds the plugin-owned types readers must understand.
var registered sync.Map // string -> struct{}

// RegisterType declares a plugin-owned event type that is not ignorable,
// for plugin authors whose events a reader must understand: a process
// that registered it appends and loads events of that type without the
// ignorable flag. Call it at init time. Registering a core
// type name panics (a programming error in the taxonomy).
func RegisterType(name string) {
	if _, ok := coreKinds[name]; ok {
		panic(fmt.Sprintf("session: RegisterType(%q): a core type", name))
	}
	registered.Store(name, struct{}{})
}

func known(name string) bool {
	_, ok := registered.Load(name)
	return ok
}

// payloadValue returns the payload value a core type's data v holds: v
// itself or *v dereferenced, cloned deeply so the caller's later changes
// cannot reach the record. ok is false when v is not k's payload type.
func payloadValue(k *kind, v any) (any, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && rv.Type().Elem() == k.payload {
		if rv.IsNil() {
			return nil, false
		}
		v = rv.Elem().Interface()
	} else if rv.Type() != k.payload {
		return nil, false
	}
	return clonePayload(v), true
}

// clonePayload deep-copies the reference fields of a core payload value.
// Payloads without any are returned as they are, boxed once: re-boxing
// would allocate on the append hot path.
func clonePayload(v any) any {
	switch p := v.(type) {
	case StepEnd:
		if cloneRefs(&p) {
			return p
		}
	case AssistantChunk:
		if cloneRefs(&p) {
			return p
		}
	case AssistantMessage:
		if cloneRefs(&p) {
			return p
		}
	case ToolResult:
		if cloneRefs(&p) {
			return p
		}
	case ToolReconcile:
		if cloneRefs(&p) {
			return p
		}
	case RequestHeader:
		if cloneRefs(&p) {
			return p
		}
	case Oneshot:
		if cloneRefs(&p) {
			return p
		}
	case ApprovalPolicy:
		if cloneRefs(&p) {
			return p
		}
	}
	return v
}

// cloneRefs deep-copies in place the reference fields of the core
// payload p points to, so that writing them cannot reach the value it was
// copied from (its strings are immutable and stay shared). It reports
// whether p had any to copy. p is a pointer, not a boxed value, so that
// DecodeData hands out a copy without allocating one.
func cloneRefs(p any) bool {
	switch v := p.(type) {
	case *StepEnd:
		if v.Usage != nil {
			u := *v.Usage
			v.Usage = &u
			return true
		}
	case *AssistantChunk:
		if v.ToolCall != nil {
			c := *v.ToolCall
			v.ToolCall = &c
			return true
		}
	case *AssistantMessage:
		if v.ToolCalls != nil {
			v.ToolCalls = slices.Clone(v.ToolCalls)
			return true
		}
	case *ToolResult:
		if v.Error != nil {
			e := *v.Error
			v.Error = &e
		}
		if v.Child != nil {
			c := *v.Child
			v.Child = &c
		}
		return v.Error != nil || v.Child != nil
	case *ToolReconcile:
		if v.Error != nil {
			e := *v.Error
			v.Error = &e
			return true
		}
	case *RequestHeader:
		v.Header = CloneHeader(v.Header)
		return true
	case *Oneshot:
		if v.Header != nil {
			h := CloneHeader(*v.Header)
			v.Header = &h
			return true
		}
	case *ApprovalPolicy:
		if v.Rules != nil {
			*v = v.Clone()
			return true
		}
	}
	return false
}

// CloneHeader returns a deep copy of h.
func CloneHeader(h Header) Header {
	if h.Temperature != nil {
		t := *h.Temperature
		h.Temperature = &t
	}
	h.Stop = slices.Clone(h.Stop)
	h.OutputSchema = bytes.Clone(h.OutputSchema)
	if h.Tools != nil {
		tools := make([]ToolSpec, len(h.Tools))
		for i, t := range h.Tools {
			t.Parameters = bytes.Clone(t.Parameters)
			tools[i] = t
		}
		h.Tools = tools
	}
	return h
}
