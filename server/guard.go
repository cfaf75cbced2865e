package server

import (
	"mime"
	"net/http"
)

// What a page of another site could make a browser send here is refused
// before anything else reads the request.
//
// A DNS-rebinding page (its own name re-pointed at this server's address)
// is same-origin with the API as far as the browser knows; its requests
// still name its domain in their Host header, so only the bound address's
// names (and the allowed hosts) are answered: 421 wrong_host otherwise.
//
// A page of any origin can POST to any server without asking it first
// when the body is a "simple" type (text/plain, a form) or there is none;
// a POST must therefore say application/json, which a browser sends
// cross-origin only after a CORS preflight the API answers for the
// configured origins alone: 415 unsupported_media_type otherwise.

// checkHost refuses a request whose Host header does not name this
// server.
func (s *Server) checkHost(r *http.Request) error {
	if s.hosts.Allows(r.Host) {
		return nil
	}
	return apiError(http.StatusMisdirectedRequest, CodeWrongHost,
		"host %.100q is not served here: this server answers its bound address's names and --allowed-host (a page of another site may be trying to drive it)", r.Host)
}

// requireJSON refuses a POST whose body is not declared application/json
// (parameters such as charset allowed), even an empty one. It reads no
// body. Other state-changing methods (DELETE, PUT) are never CORS-simple:
// a browser asks the server before it sends one cross-origin.
func requireJSON(r *http.Request) error {
	if r.Method != http.MethodPost {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return apiError(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
		"a POST needs Content-Type: application/json (got %.100q), even without a body", ct)
}
