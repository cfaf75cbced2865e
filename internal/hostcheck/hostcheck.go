// Package hostcheck tells whether a request's Host header names the
// server that received it. A DNS-rebinding page (a name of its own,
// re-pointed at 127.0.0.1 or at a machine of the LAN) is same-origin with
// a local server as far as the browser knows, but its requests carry its
// own name in their Host header; a server that answers only the names it
// is reached by stops it. `vigil serve` (package server) and `vigil demo`
// (package playground) both check through a [Policy].
package hostcheck

import (
	"net"
	"os"
	"strings"
)

// Policy is the set of Host header values a server answers: the loopback
// names (localhost, 127.0.0.0/8, ::1) and the names of its bound address
// at its port, and the allowed hosts given (a bare host at any port, a
// host:port as it is).
type Policy struct {
	port  string          // the port a Host must name; "" for any
	names map[string]bool // hosts accepted at port, besides loopback
	exact map[string]bool // host:port accepted as given
	any   map[string]bool // hosts accepted at any port
}

// New returns the policy of a server listening on bound (host:port, as
// the listener has it; "" accepts the loopback names at any port) that
// also answers allowed (each a host, at any port, or a host:port).
func New(bound string, allowed []string) Policy {
	p := Policy{names: map[string]bool{}, exact: map[string]bool{}, any: map[string]bool{}}
	if bound != "" {
		_, p.port, _ = net.SplitHostPort(bound)
		for _, n := range Names(bound) {
			p.names[normal(n)] = true
		}
	}
	for _, a := range allowed {
		if host, port, ok := split(a); ok && port != "" {
			p.exact[net.JoinHostPort(host, port)] = true
		} else if host != "" {
			p.any[host] = true
		}
	}
	return p
}

// Allows reports whether a Host header value names this server. A Host
// without a port names port 80, as a browser sends it for http.
func (p Policy) Allows(hostHeader string) bool {
	host, port, ok := split(hostHeader)
	if !ok || host == "" {
		return false
	}
	if port == "" {
		port = "80"
	}
	if p.any[host] || p.exact[net.JoinHostPort(host, port)] {
		return true
	}
	if p.port != "" && port != p.port {
		return false
	}
	return p.names[host] || isLoopbackName(host)
}

// Names returns the host names, besides loopback, that a server listening
// at addr (host:port) is reached by: the host addr names, or, for a
// wildcard or empty host, this machine's interface addresses and host
// name. A DNS-rebinding page names its own domain, never one of these.
func Names(addr string) []string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			return []string{h}
		}
	}
	var hosts []string
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				hosts = append(hosts, n.IP.String())
			}
		}
	}
	if name, err := os.Hostname(); err == nil {
		hosts = append(hosts, name)
	}
	return hosts
}

// split returns the host of a Host header value (or of a bare host), in
// the form normal gives, and its port ("" when it names none). ok is false
// for a value that is no host.
func split(hostport string) (host, port string, ok bool) {
	host = hostport
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(hostport, "[") != strings.HasSuffix(hostport, "]") {
		return "", "", false
	}
	if strings.ContainsAny(port, "[]:") {
		return "", "", false
	}
	return normal(host), port, true
}

// normal is a host without IPv6 brackets, in lower case, without a
// trailing dot.
func normal(host string) string {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// isLoopbackName reports whether host (normal) names this machine's
// loopback interface.
func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
