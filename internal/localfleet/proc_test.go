package localfleet

import (
	"net"
	"strconv"
	"testing"
)

// FreePort hands out distinct ports below the kernel's ephemeral range,
// each bindable on 127.0.0.1 when returned.
func TestFreePort(t *testing.T) {
	lo, hi := serverPorts()
	seen := map[int]bool{}
	for range 200 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < lo || port >= hi {
			t.Fatalf("port %d outside %d-%d", port, lo, hi-1)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", port, err)
		}
		_ = l.Close()
	}
}

// A port in use is never returned.
func TestFreePortSkipsPortsInUse(t *testing.T) {
	lo, hi := serverPorts()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	inUse := map[int]bool{}
	for port := lo; port < lo+2000 && port < hi; port++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		held = append(held, l)
		inUse[port] = true
	}
	for range 300 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if inUse[port] {
			t.Fatalf("port %d is in use, yet FreePort returned it", port)
		}
	}
}
