// Package config loads plugins.yaml, the file that composes a Vigil agent
// out of plugins registered by name, and applies it to a bus.
//
// # Format
//
//	plugins:
//	  - name: provider/scripted          # a registered plugin name
//	  - id: fs                           # identity for reloads (default: name)
//	    name: tools/fs
//	    disabled: false
//	    config: { root: "${HOME}" }      # decoded strictly into the plugin's config
//	  - name: group                      # a group: its config is a list of entries
//	    id: dev
//	    config: [ { name: invariants } ]
//
// Decoding is strict: an unknown key, an unknown plugin name (the error
// suggests the closest registered one), a value of the wrong type, a
// missing required key and an unset ${VAR} are errors that start with
// file:line:col. The decoder goes on past a mistake: a file with several
// gets them all in one error ([Errors], each an [*Error]); a plugin's
// Validate runs only on a config that decoded whole. A config struct
// marks required keys with the struct tag `vigil:"required"`, a closed set
// of values with `enum:"a,b"` (refused otherwise, and an enum in
// [Schema]) and describes a key for editors with `doc:"…"`; it may
// validate itself with a Validate() error method, called here so that
// its error names the entry's position (the bus calls it again when the
// plugin is applied, however it is applied).
//
// # Paths
//
// A config field tagged `vigil:"path"` (a string, or a list or pointer of
// strings) names a file or directory: store/jsonl's dir, tools/fs's root,
// tools/mcp's dir, external's path, provider/replay's file. When the file
// is loaded from disk ([Load], [LoadOnly], reloads), a relative value
// resolves against the absolute directory of plugins.yaml, not the
// working directory, so the same file means the same folders from
// wherever vigil runs. An absolute value and an empty one (the plugin's
// default, which stays relative to the working directory) are kept. A
// leading ~ or ~/ is the user's home directory, as in a shell (a bare ~
// is YAML's null: quote it); ~user is an error. ${VAR} expands first.
// Other strings are opaque: commands and arguments (tools/mcp's command
// and args, external's args) reach the plugin as written. [Parse] has no
// directory and keeps relative paths as written, and a composition built
// from Go values is applied as given.
//
// ${NAME} expands from the environment (NAME: letters, digits and _); $${
// is a literal ${. A ${ without its closing } or with anything but a name
// inside is an error, not text.
//
// # Limits
//
// A file larger than [MaxFileSize] (1 MiB) is refused, and so is one whose
// aliases (*name) would expand to more than [MaxAliasNodes] (10,000) YAML
// nodes, nested aliases included, or an alias inside its own anchor's
// value: the decoder walks yaml.Node trees itself, where the YAML library's own
// alias limit does not apply. The limits hold on every load, hot reloads
// included, with file:line:col like every other error.
//
// # Reload
//
// [Apply] mounts the entries as one group fiber. [Composition.Reload]
// diffs a newly loaded file against the running one by entry id: removed
// entries are disposed, added ones applied, changed ones updated (plugins
// implementing bus.Reconfigurer in place, others re-applied); unchanged
// entries keep their fibers; an entry now disabled is disposed and
// reported as disabled ([Changes]). A file that fails to load leaves the
// running composition as it is. [OnEntry] lets a program see each entry
// begin and end to apply, to show which one it waits for.
package config
