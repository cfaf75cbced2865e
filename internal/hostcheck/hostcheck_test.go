package hostcheck

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPolicyAllowsTheBoundNamesOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bound   string
		allowed []string
		yes, no []string
	}{
		{
			name:  "a loopback bind: its port, on loopback names",
			bound: "127.0.0.1:18091",
			yes:   []string{"127.0.0.1:18091", "localhost:18091", "LOCALHOST.:18091", "[::1]:18091", "127.0.0.2:18091"},
			no: []string{"attacker.example:18091", "attacker.example", "localhost:18092", "localhost", "127.0.0.1",
				"localhost.attacker.example:18091", "evil.localhost:18091", "", ":18091", "[::1:18091", "0.0.0.0:18091"},
		},
		{
			name:    "a loopback bind and allowed hosts",
			bound:   "127.0.0.1:8080",
			allowed: []string{"vigil.example.com", "api.example.com:8443", "[fd00::2]:9000"},
			yes:     []string{"vigil.example.com", "vigil.example.com:443", "VIGIL.example.com.:8080", "api.example.com:8443", "[fd00::2]:9000", "localhost:8080"},
			no:      []string{"api.example.com", "api.example.com:8080", "[fd00::2]:8080", "example.com:8080", "other.example.com"},
		},
		{
			name:  "a name bound",
			bound: "192.168.1.20:80",
			yes:   []string{"192.168.1.20", "192.168.1.20:80", "localhost"},
			no:    []string{"192.168.1.20:8080", "attacker.example"},
		},
		{
			name:  "no bound address: loopback at any port",
			bound: "",
			yes:   []string{"127.0.0.1:1", "localhost", "[::1]:65535"},
			no:    []string{"attacker.example:8080", "192.168.1.20:80"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.bound, tc.allowed)
			for _, h := range tc.yes {
				assert.True(t, p.Allows(h), "%q is refused", h)
			}
			for _, h := range tc.no {
				assert.False(t, p.Allows(h), "%q is allowed", h)
			}
		})
	}
}

func TestAWildcardBindAnswersThisMachinesNames(t *testing.T) {
	name, err := os.Hostname()
	require.NoError(t, err)
	for _, bound := range []string{"[::]:8080", "0.0.0.0:8080", ":8080"} {
		hosts := Names(bound)
		assert.Contains(t, hosts, name, bound)
		assert.Contains(t, hosts, "127.0.0.1", bound)
		for _, wild := range []string{"::", "0.0.0.0", ""} {
			assert.NotContains(t, hosts, wild, "the wildcard itself names no host")
		}
		p := New(bound, nil)
		assert.True(t, p.Allows(name+":8080"), bound)
		assert.False(t, p.Allows(name+":8081"), bound)
		assert.False(t, p.Allows("attacker.example:8080"), bound)
	}
	assert.Equal(t, []string{"demo.lan"}, Names("demo.lan:8080"))
	assert.Empty(t, Names("no port"))
}

// FuzzAllows: any Host header value is answered, never a panic; one the
// policy allows is a loopback name or bound name at the port, or an
// allowed host.
func FuzzAllows(f *testing.F) {
	for _, h := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost", "[::1", "a:b:c", "vigil.example.com:1", "", ":", "[]:80"} {
		f.Add(h)
	}
	p := New("127.0.0.1:8080", []string{"vigil.example.com"})
	f.Fuzz(func(t *testing.T, host string) {
		if !p.Allows(host) {
			return
		}
		h, port, ok := split(host)
		require.True(t, ok)
		assert.True(t, h == "vigil.example.com" || isLoopbackName(h) && (port == "8080"), "%q", host)
	})
}
