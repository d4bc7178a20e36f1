package wire_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// A client over TCP that pipelines requests whose replies fill the socket,
// and reads nothing until it has sent them all: the server keeps reading
// (its reader writes replies only as far as the socket takes them without
// waiting, and leaves the rest to the writer), and every frame then
// arrives whole and in order, the notification a setData fires just
// before that setData's reply, as ZooKeeper sends them.
func TestPipelinedClientThatReadsLate(t *testing.T) {
	srv := wire.New(sim.NewServer(sim.ServerConfig{}), wire.Config{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	readFrame := func() []byte {
		t.Helper()
		nc.SetReadDeadline(time.Now().Add(20 * time.Second))
		var prefix [4]byte
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			t.Fatal(err)
		}
		body := make([]byte, binary.BigEndian.Uint32(prefix[:]))
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		return body
	}
	if _, err := nc.Write(wire.AppendConnectRequest(nil, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 30000}})); err != nil {
		t.Fatal(err)
	}
	readFrame()
	const path = "/big"
	big := make([]byte, 512<<10)
	if _, err := nc.Write(wire.AppendRequest(nil, sim.Request{Xid: 1, Op: sim.OpCreate, Path: path, Data: big, ACL: zk.WorldACL(zk.PermAll)})); err != nil {
		t.Fatal(err)
	}
	if h, err := wire.DecodeReplyHeader(readFrame()); err != nil || h.Xid != 1 || h.Err != sim.CodeOK {
		t.Fatalf("create: %+v, %v", h, err)
	}

	// 40 getData replies of 512 KiB (20 MiB, past any socket buffer),
	// then 20 setData requests of 512 KiB (10 MiB) that the server must
	// read while nobody reads its replies.
	const gets, sets = 40, 20
	var stream []byte
	stream = wire.AppendRequest(stream, sim.Request{Xid: 2, Op: sim.OpExists, Path: path, Watch: true})
	for i := range gets {
		stream = wire.AppendRequest(stream, sim.Request{Xid: int32(3 + i), Op: sim.OpGetData, Path: path})
	}
	for i := range sets {
		stream = wire.AppendRequest(stream, sim.Request{Xid: int32(3 + gets + i), Op: sim.OpSetData, Path: path, Data: big, Version: -1})
	}
	nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := nc.Write(stream); err != nil {
		t.Fatalf("writing %d bytes of requests without reading the replies: %v (the server stopped reading)", len(stream), err)
	}

	expect := func(xid int32, what string) []byte {
		t.Helper()
		body := readFrame()
		h, err := wire.DecodeReplyHeader(body)
		if err != nil || h.Xid != xid || h.Err != sim.CodeOK {
			t.Fatalf("%s: got %+v, %v; want xid %d, OK", what, h, err, xid)
		}
		return body
	}
	expect(2, "exists")
	for i := range gets {
		body := expect(int32(3+i), "getData")
		resp, err := wire.DecodeReply(sim.OpGetData, body)
		if err != nil || len(resp.Data) != len(big) {
			t.Fatalf("getData xid %d: %d bytes, %v; want %d", 3+i, len(resp.Data), err, len(big))
		}
	}
	ev, err := wire.DecodeEvent(expect(-1, "the notification before the first setData's reply"))
	if err != nil || ev.Type != zk.EventNodeDataChanged || ev.Path != path {
		t.Fatalf("notification %+v, %v; want NodeDataChanged %s", ev, err, path)
	}
	for i := range sets {
		expect(int32(3+gets+i), "setData")
	}
}
