package main

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDemoHostsAreTheBoundOnes(t *testing.T) {
	tcp := func(ip string) string { return (&net.TCPAddr{IP: net.ParseIP(ip), Port: 8080}).String() }
	for _, tc := range []struct {
		addr  string
		bound string
		want  []string
	}{
		{addr: "127.0.0.1:8080", bound: tcp("127.0.0.1"), want: []string{"127.0.0.1", "127.0.0.1"}},
		{addr: "demo.lan:8080", bound: tcp("192.168.1.20"), want: []string{"demo.lan", "192.168.1.20"}},
		{addr: "[fd00::1]:8080", bound: tcp("fd00::1"), want: []string{"fd00::1", "fd00::1"}},
	} {
		assert.Equal(t, tc.want, demoHosts(tc.addr, tc.bound), tc.addr)
	}
	// A wildcard address: every address of this machine and its name.
	hosts := demoHosts(":8080", tcp("::"))
	assert.Equal(t, hosts, demoHosts("0.0.0.0:8080", tcp("0.0.0.0")))
	name, err := os.Hostname()
	require.NoError(t, err)
	assert.Contains(t, hosts, name)
	assert.Contains(t, hosts, "127.0.0.1")
	assert.NotContains(t, hosts, "::", "the wildcard itself names no host")
	assert.NotContains(t, hosts, "0.0.0.0", "the wildcard itself names no host")
	assert.NotContains(t, hosts, "", "the wildcard itself names no host")
}
