// Package fstools is the "tools/fs" plugin: the read-only file tools
// list_dir and read_file, confined to a root directory.
//
// Confinement is enforced by [os.Root], not by inspecting path strings:
// every path is resolved by the kernel relative to the root's directory
// handle, so "..", absolute paths and symbolic links that lead outside the
// root are refused, including links created after the plugin started.
// Absolute paths are refused before they reach the root, with a message
// that tells the model to use a relative path.
package fstools
