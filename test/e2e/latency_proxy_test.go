//go:build e2e

package e2e

import (
	"net"
	"sync"
	"testing"
	"time"
)

// latencyProxy forwards TCP connections from a 127.0.0.1 port to target,
// holding every chunk back by delay in each direction, so that a request
// and its response cost 2*delay more, as a cluster that far away would.
// It is a line, not a queue: chunks in flight overlap, so throughput is
// not limited, only latency. TLS passes through untouched.
type latencyProxy struct {
	Addr   string
	ln     net.Listener
	target string
	delay  time.Duration

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startLatencyProxy starts a proxy to target that adds rtt to every round
// trip; the test's cleanup stops it and closes its connections.
func startLatencyProxy(tb testing.TB, target string, rtt time.Duration) *latencyProxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &latencyProxy{Addr: ln.Addr().String(), ln: ln, target: target, delay: rtt / 2, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	tb.Cleanup(p.close)
	return p
}

func (p *latencyProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.handle(c)
	}
}

// handle forwards one connection both ways; each direction's end is passed
// on as a half close, and both ends are closed when both are done.
func (p *latencyProxy) handle(client net.Conn) {
	defer p.wg.Done()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	if !p.track(client, server) {
		return
	}
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.forward(server, client) }()
	go func() { defer both.Done(); p.forward(client, server) }()
	both.Wait()
	p.untrack(client, server)
}

// forward copies src to dst, each chunk written delay after it was read.
func (p *latencyProxy) forward(dst, src net.Conn) {
	type chunk struct {
		data []byte
		due  time.Time
	}
	chunks := make(chan chunk, 4096)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range chunks {
		time.Sleep(time.Until(c.due))
		if _, err := dst.Write(c.data); err != nil {
			_ = src.Close() // ends the reader, which closes chunks
			for range chunks {
			}
			return
		}
	}
	if tcp, ok := dst.(*net.TCPConn); ok {
		_ = tcp.CloseWrite()
	}
}

func (p *latencyProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil { // closed
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *latencyProxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *latencyProxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}
