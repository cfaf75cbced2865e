// Package fstools is the "tools/fs" plugin: the read-only file tools
// list_dir and read_file, confined to a root directory. It is the one
// plugin package not named after the last element of its path: a package
// fs would read as the standard library's io/fs.
//
// Confinement is enforced by [os.Root], not by inspecting path strings:
// every path is resolved by the kernel relative to the root's directory
// handle, so "..", absolute paths and symbolic links that lead outside the
// root are refused, including links created after the plugin started.
// Absolute paths are refused before they reach the root, with a message
// that tells the model to use a relative path.
//
// Only regular files and directories are read. A named pipe, a socket or
// a device is refused with [CodeNotRegular] — checked before it is opened
// and again on the open descriptor, which is opened non-blocking — since
// opening or reading one can block forever.
package fstools
