package wire_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes/zkconn/zktest"
	"github.com/zklab/zklab/sim"
	"github.com/zklab/zklab/sim/wire"
)

// FuzzDecodeRequest: no frame makes the decoder panic, and a frame it
// decodes whole encodes back to a frame that decodes to the same request.
// Its seed corpus (testdata/fuzz/FuzzDecodeRequest) is go-zookeeper's
// traffic to a real ZooKeeper (TestCaptureFuzzCorpus) and one request of
// every type; `go test` runs the seeds, `go test -fuzz FuzzDecodeRequest`
// explores.
func FuzzDecodeRequest(f *testing.F) {
	for _, req := range requestCases {
		f.Add(wire.AppendRequest(nil, req)[4:])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := wire.DecodeRequest(frame)
		if err != nil {
			return
		}
		again, err := wire.DecodeRequest(wire.AppendRequest(nil, req)[4:])
		if err != nil {
			t.Fatalf("re-encoded %+v does not decode: %v", req, err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(req)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", again, req)
		}
	})
}

// normalize forgets what jute does not carry apart: a null list and an
// empty one.
func normalize(r sim.Request) sim.Request {
	for _, l := range []*[]string{&r.DataWatches, &r.ExistWatches, &r.ChildWatches, &r.PersistentWatches, &r.PersistentRecursiveWatches} {
		if len(*l) == 0 {
			*l = nil
		}
	}
	if len(r.ACL) == 0 {
		r.ACL = nil
	}
	for i := range r.Ops {
		r.Ops[i] = normalize(r.Ops[i])
	}
	return r
}

// FuzzServeStream: whatever bytes a client sends, the server neither
// panics nor hangs; it answers or closes the connection. Its seed corpus
// (testdata/fuzz/FuzzServeStream) is whole client streams: go-zookeeper's
// to a real ZooKeeper, and a Java-style handshake with pipelined auth and
// setWatches2.
//
// Coverage-guided fuzzing keeps an input only if it reaches new code, and
// minimizes it by re-running it until the same coverage shows again: an
// input must cover the same code every time it runs, and run fast. So the
// stream is served over streamConn, which hands the server the whole
// stream at once and holds the server's first write until the server
// closes the connection: the reader applies the stream to its end, the
// writer makes one write that fails, whatever the goroutines'
// interleaving, and nothing waits on a clock. (Over net.Pipe, with a
// client goroutine draining the replies and a poll for the close, the
// interleaving changed the coverage counts of every run: each input looked
// new, and both fuzzing workers spent the run minimizing inputs that never
// reproduced, at 0 execs/s.)
func FuzzServeStream(f *testing.F) {
	var javaStyle []byte
	javaStyle = wire.AppendConnectRequest(javaStyle, wire.ConnectRequest{ConnectRequest: sim.ConnectRequest{TimeoutMs: 30000}, HasReadOnly: true})
	for _, req := range requestCases {
		javaStyle = wire.AppendRequest(javaStyle, req)
	}
	for _, seed := range streamWindows(javaStyle) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		// Wall-clock time: testing/synctest's bubble hangs the fuzzing
		// worker (go 1.26), and nothing here waits on a timer.
		srv := wire.New(sim.NewServer(sim.ServerConfig{}), wire.Config{})
		nc := newStreamConn(stream)
		srv.ServeConn(nc)
		// The server reads the stream to its end (or to the frame that
		// closes the connection), then closes the connection.
		select {
		case <-nc.closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("the server still holds the connection 10 s after the client's stream ended")
		}
		srv.Close()
	})
}

// streamConn is a client connection that sent stream and then closed its
// side, and reads nothing: reads return the stream, then io.EOF; a write
// waits for the server to close the connection and fails; closed is
// closed when the server closes the connection.
type streamConn struct {
	in     bytes.Reader
	once   sync.Once
	closed chan struct{}
}

func newStreamConn(stream []byte) *streamConn {
	c := &streamConn{closed: make(chan struct{})}
	c.in.Reset(stream)
	return c
}

func (c *streamConn) Read(b []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	return c.in.Read(b)
}

func (c *streamConn) Write(b []byte) (int, error) {
	<-c.closed
	return 0, net.ErrClosed
}

func (c *streamConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *streamConn) LocalAddr() net.Addr              { return streamAddr{} }
func (c *streamConn) RemoteAddr() net.Addr             { return streamAddr{} }
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

type streamAddr struct{}

func (streamAddr) Network() string { return "stream" }
func (streamAddr) String() string  { return "stream" }

// TestCaptureFuzzCorpus rewrites the seed corpora from go-zookeeper's
// traffic to a real ZooKeeper; it runs only with WIRE_CAPTURE_CORPUS=1.
func TestCaptureFuzzCorpus(t *testing.T) {
	if os.Getenv("WIRE_CAPTURE_CORPUS") == "" {
		t.Skip("set WIRE_CAPTURE_CORPUS=1 to rewrite testdata/fuzz from a real ZooKeeper")
	}
	real := zktest.Shared(t)
	var mu sync.Mutex
	var streams [][]byte
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		nc, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		rec := &recordingConn{Conn: nc}
		mu.Lock()
		streams = append(streams, nil)
		rec.sink = &streams[len(streams)-1]
		rec.mu = &mu
		mu.Unlock()
		return rec, nil
	}
	c, events, err := zk.Connect([]string{real.Addr}, 10*time.Second, zk.WithDialer(dial), zk.WithLogger(quietLogger))
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, events, zk.StateHasSession)
	root := fmt.Sprintf("/fuzz-capture-%d", time.Now().UnixNano())
	acl := zk.WorldACL(zk.PermAll)
	c.Create(root, []byte("r"), 0, acl)
	c.Create(root+"/e-", []byte("e"), zk.FlagEphemeralSequential, acl)
	c.CreateProtectedEphemeralSequential(root+"/p-", nil, acl)
	c.CreateContainer(root+"/c", nil, zk.FlagContainer, acl)
	c.Exists(root)
	c.ExistsW(root + "/missing")
	c.GetW(root)
	c.ChildrenW(root)
	c.Set(root, []byte("s"), -1)
	c.Multi(&zk.CreateRequest{Path: root + "/m", Acl: acl}, &zk.CheckVersionRequest{Path: root, Version: 1},
		&zk.SetDataRequest{Path: root + "/m", Data: []byte("x"), Version: -1}, &zk.DeleteRequest{Path: root + "/m", Version: -1})
	c.Sync(root)
	c.GetACL(root)
	c.SetACL(root, acl, -1)
	c.AddAuth("digest", []byte("user:pw"))
	lock := zk.NewLock(c, root+"/lock", acl)
	lock.Lock()
	lock.Unlock()
	c.Delete(root+"/missing", -1)
	c.Close()

	mu.Lock()
	defer mu.Unlock()
	for i, s := range streams {
		for w, window := range streamWindows(s) {
			writeSeed(t, "FuzzServeStream", fmt.Sprintf("gozk-stream-%d-%02d", i, w), window)
		}
		first := true
		for n := 0; len(s) >= 4; n++ {
			size := int(binary.BigEndian.Uint32(s))
			if len(s) < 4+size {
				break
			}
			if !first {
				writeSeed(t, "FuzzDecodeRequest", fmt.Sprintf("gozk-%d-%03d", i, n), s[4:4+size])
			}
			first = false
			s = s[4+size:]
		}
	}
}

// seedFramesMax is how many requests one FuzzServeStream seed carries
// after its handshake. The fuzzer minimizes every input that reaches new
// code, for up to a minute, by deleting bytes and re-running it, so a
// seed's size bounds how long each find costs: a whole session's stream
// (4 KB) kept both workers minimizing for the whole of a 20 s run.
const seedFramesMax = 4

// streamWindows cuts a client's stream (a handshake, then requests) into
// streams of the same handshake and up to seedFramesMax of the requests
// in a row; a torn tail goes with the last.
func streamWindows(stream []byte) [][]byte {
	var frames [][]byte
	for len(stream) >= 4 {
		size := int(binary.BigEndian.Uint32(stream))
		if size < 0 || len(stream) < 4+size {
			break
		}
		frames = append(frames, stream[:4+size])
		stream = stream[4+size:]
	}
	if len(frames) == 0 {
		return [][]byte{stream}
	}
	handshake, requests := frames[0], frames[1:]
	var windows [][]byte
	for len(requests) > 0 || len(windows) == 0 {
		n := min(len(requests), seedFramesMax)
		w := append([]byte(nil), handshake...)
		for _, r := range requests[:n] {
			w = append(w, r...)
		}
		requests = requests[n:]
		if len(requests) == 0 {
			w = append(w, stream...)
		}
		windows = append(windows, w)
	}
	return windows
}

type recordingConn struct {
	net.Conn
	mu   *sync.Mutex
	sink *[]byte
}

func (c *recordingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	*c.sink = append(*c.sink, b...)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// writeSeed writes one seed in go test's corpus file format.
func writeSeed(t *testing.T, fuzz, name string, b []byte) {
	dir := filepath.Join("testdata", "fuzz", fuzz)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "go test fuzz v1\n[]byte(%q)\n", b)
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
