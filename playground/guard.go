package playground

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/vigil-run/vigil/internal/hostcheck"
)

// statusRefused is the status of a request the guard refuses.
const statusRefused = http.StatusForbidden

// guard refuses what a page of another site could make a browser send
// here. The playground drives a runtime with no authentication, meant for
// the person at this machine; a DNS-rebinding page (a name of its own,
// re-pointed at 127.0.0.1) is same-origin with it as far as the browser
// knows, so the Content-Type check of the actions does not stop it. Its
// requests still carry its own name in their Host header: only loopback
// names and the names the server was told it binds are served. A page of
// another origin that posts here (a form, a fetch in no-cors mode) sends
// its Origin: an action whose Origin is not this host is refused.
type guard struct {
	hosts hostcheck.Policy // loopback and the names given, at any port
}

func newGuard(hosts []string) guard {
	return guard{hosts: hostcheck.New("", hosts)}
}

// actionPaths are the routes that change the playground's state.
var actionPaths = map[string]bool{"/api/visitor": true, "/api/control": true, "/api/send": true, "/api/fork": true, "/api/replay": true, "/api/verify": true, "/api/decide": true}

// check returns why r is refused, or "".
func (g guard) check(r *http.Request) string {
	if !g.hosts.Allows(r.Host) {
		return fmt.Sprintf("host %q is not served here: the playground answers only requests for 127.0.0.1, [::1], localhost or the address it binds (a page of another site may be trying to drive it)", r.Host)
	}
	safe := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
	if safe && !actionPaths[r.URL.Path] {
		return ""
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return "" // not sent by a page of another origin: curl, a test
	}
	if u, err := url.Parse(origin); err != nil || !strings.EqualFold(u.Host, r.Host) || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Sprintf("origin %q may not act on the playground at %q: only its own page may", origin, r.Host)
	}
	return ""
}
