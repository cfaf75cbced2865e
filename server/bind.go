package server

import (
	"net"
	"net/netip"
	"strings"
)

// isLoopback reports whether addr (host:port) listens on loopback only.
// An empty host listens everywhere; a name other than localhost may
// resolve anywhere.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
