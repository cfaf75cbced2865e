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
// file:line:col. A config struct marks required keys with the struct tag
// `vigil:"required"` and may validate itself with a Validate() error method,
// called here so that its error names the entry's position (the bus calls
// it again when the plugin is applied, however it is applied).
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
// value: the decoder walks yaml.Node trees itself, where yaml.v3's own
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
