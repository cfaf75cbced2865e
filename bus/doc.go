// Package bus is Vigil's plugin context: a tree of fibers, typed events,
// services and effects, with Cordis semantics.
//
// # Model
//
// A [Root] owns one listener table and one service table. Applying a
// [Plugin] through [Context.Plugin] creates a child [Fiber]; the plugin's
// apply function receives a [Context] bound to that fiber. Everything the
// plugin registers through that context — listeners, services, effects and
// child plugins — is owned by the fiber and undone, last in first out, when
// the fiber is disposed, reloaded or fails. Disposers run one after another,
// never concurrently, and each runs at most once.
//
// A fiber moves pending → loading → active. An apply that returns an error
// or panics rolls back everything it registered and leaves the fiber failed;
// the host keeps running. Disposal moves it through unloading to disposed.
// A fiber whose required services are missing stays pending and is applied
// as soon as they are all provided by active fibers; when one is withdrawn
// its dependents are unloaded first and go back to pending. A fiber never
// becomes active without them: one whose required service is withdrawn, or
// whose provider is disposed, while it is loading has its apply undone when
// the apply returns and goes back to pending, to be applied again when the
// service returns. [Root.Pending] lists it meanwhile. A plugin declares the
// services it reads by their typed keys ([Requires], [Optional], [Inject]).
//
// A config is validated before the plugin sees it, whoever applies the
// plugin: when it (or, for a [Func], the C it converts to) is a
// [Validator], [Context.Plugin] and [Fiber.Update] call Validate first and
// refuse an invalid config with a [*PluginError] whose Op is "validate".
// Plugins loadable by name from plugins.yaml register a [Module];
// [RegisterFunc] does it, and builds the plugin, in one statement.
//
// # Disposal
//
// [Context.Done] closes, and [Context.Context] is cancelled with cause
// [ErrDisposed], as soon as the disposal of the context's fiber is
// requested — before its disposers run, and also while its apply is still
// running, so a long apply can stop early. From that moment the context
// refuses new listeners, services, effects and child plugins: [Context.Effect]
// returns [ErrDisposed] without running its function, and an effect that
// was running when the request came has its disposer run at once. Once the
// fiber is disposed its context also refuses reads ([Service.Get], [Lookup])
// with [ErrDisposed]; cleanup running during the disposal can still read.
// A reload does not close Done: the fiber comes back, and what one
// application set up is undone by its effects.
//
// A plugin whose [Plugin.Name] is "" is anonymous: its fiber, errors and
// logger go by the name of its nearest named ancestor ("root" at the top),
// as in Cordis. [Context.PluginAs] names a fiber's logger otherwise: a
// composition logs each entry under its id, so two entries of one plugin
// log apart.
//
// # Events
//
// Events are typed keys: [NewEvent] binds a name from the event taxonomy to
// a payload type, so emitters and listeners cannot disagree. Listeners run
// in a documented order: appended by default, [Prepend] puts one at the
// front (the latest prepend first). Dispatch modes:
//
//   - [Event.Emit]: every listener in order; the first error stops and is returned.
//   - [Event.Parallel]: every listener concurrently; errors joined.
//   - [Hook.Serial]: in order; the first non-zero result or error stops and
//     is returned; the context's cancellation is checked between listeners.
//   - [Hook.Bail]: like Serial but never consults the context: a purely
//     synchronous first-answer query.
//   - [Waterfall.Run]: onion order, each listener receives next; the
//     innermost fallback is the default handler.
//
// Every dispatch first runs the listeners of the internal/dispatch event
// ([Veto]), which see the event name and payload and may veto the dispatch
// by returning an error. This is a place, not a position: every veto
// listener runs before every listener of the dispatch, whenever either was
// registered (a Prepend after it, a hot reload), and a veto listener can
// only refuse a dispatch, never answer it. A check that must run first
// belongs there. [Event.Check] and [Event.Observe] split a dispatch
// into that pre-commit phase and an observer phase, which is how the
// session log commits an event only after no one vetoed it.
//
// A listener list is copied on write: a dispatch runs the listeners that
// were registered when it started, except those removed meanwhile, which
// are skipped. Registering or removing listeners from inside a listener is
// therefore safe.
//
// # Scopes
//
// [Context.Scope] returns a context whose listeners only receive
// dispatches whose subject passes a filter. A payload names its subject by
// implementing [Subjecter]. A listener registered with [Global] receives
// every dispatch regardless of its context's filter.
//
// Panicking listeners are recovered and reported as a [*PluginError] naming
// the plugin that registered them. The package logs through go-hclog, one
// named sub-logger per plugin, and never writes to stdout.
package bus
