// Package webui is the web UI that `vigil serve` serves under /ui/: a
// static single-page application of plain ES modules, HTML and CSS,
// embedded in the binary, so it needs no build toolchain, no CDN and no
// network beyond the API it calls.
//
// The page calls only the public /v1 API, with the bearer token of the
// person logged in (pasted, or an OpenID Connect ID token the page got by
// the authorization-code flow with PKCE): every check is the API's own,
// and the page can see and do nothing its principal could not with curl.
// The handler serves the assets with a strict Content-Security-Policy (no
// inline script or style, no framing) and /ui/config.json, which tells
// the page how to log in.
//
// It imports nothing of this module: the server mounts it.
package webui
