package wire

import (
	"net"
	"testing"

	"github.com/zklab/zklab/sim"
)

// A handshake whose frame was read before a restart cut its connection
// reaches a server that no longer knows the connection: it closes that
// connection, and the server goes on (it had panicked, found by the
// control API's race test).
func TestHandshakeAfterItsConnectionWasCut(t *testing.T) {
	srv := New(sim.NewServer(sim.ServerConfig{}), Config{})
	defer srv.Close()
	server, client := net.Pipe()
	defer client.Close()
	if err := srv.ServeConn(server); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	var c *conn
	for _, x := range srv.conns {
		c = x
	}
	srv.mu.Unlock()
	if c == nil {
		t.Fatal("no connection served")
	}
	srv.Restart(0)
	frame := AppendConnectRequest(nil, ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 10000, Passwd: make([]byte, 16)}})
	if why := c.handshake(frame[4:]); why == "" {
		t.Error("a handshake on a connection the server cut was applied")
	}
}
