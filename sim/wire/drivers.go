package wire

// The connection mechanics Server and EnsembleServer share: the frame
// reader, the writer and its queue, the deadline timer and the accept
// loop. What a frame means is each driver's (its hooks); none of this
// knows ZooKeeper beyond the frame format.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"
)

// oversizedDrainBytesMax bounds what the server reads of a frame past
// MaxFrameBytes before it closes the connection: past any frame a client
// library sends (go-zookeeper's buffer is 1.5 MiB).
const oversizedDrainBytesMax = 16 << 20

// oversizedDrainWait bounds how long the server waits for the rest of a
// frame past MaxFrameBytes before it closes the connection.
const oversizedDrainWait = 50 * time.Millisecond

// frameReadBytes is the read buffer of a connection: pipelined clients
// send many small frames per read.
const frameReadBytes = 64 << 10

// wholeFrameBuffered reports whether r holds a whole frame (or a length
// prefix that closes the connection): the reader can go on without a
// read that may wait.
func wholeFrameBuffered(r *bufio.Reader) bool {
	if r.Buffered() < 4 {
		return false
	}
	prefix, _ := r.Peek(4)
	n := int32(binary.BigEndian.Uint32(prefix))
	return n < 0 || r.Buffered()-4 >= int(n)
}

func readError(err error) string {
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
		return "connection closed"
	}
	return err.Error()
}

// isFourLetterWord reports whether a connection's first four bytes are a
// word rather than a length: four lowercase ASCII letters.
func isFourLetterWord(b [4]byte) bool {
	for _, x := range b {
		if x < 'a' || x > 'z' {
			return false
		}
	}
	return true
}

// frameHandler is what a driver's connection does with the frames its
// reader reads (readFrames): Server's conn and EnsembleServer's ensConn.
type frameHandler interface {
	// handshake applies the first frame, the connect request; request
	// applies each one after. Each returns why the connection must
	// close, or "".
	handshake(body []byte) string
	request(body []byte) string
	// caughtUp is called when every whole frame read so far has been
	// applied: the reader's next read may wait for the client.
	caughtUp()
}

// frameReading is how a connection's frames are read (readFrames).
type frameReading struct {
	// maxFrameBytes is Config.MaxFrameBytes: a longer length prefix
	// closes the connection.
	maxFrameBytes int
	// answerWord, if set, answers a four-letter word sent as the
	// connection's first four bytes (Config.FourLetterWord); the
	// connection closes after. Without it the word reads as a length past
	// maxFrameBytes.
	answerWord func(word string, w io.Writer)
	// drainOversized: before closing on a frame past maxFrameBytes, read
	// what of it comes at once (Server's conn.readLoop says why).
	drainOversized bool
}

// readFrames reads nc's frames, a 4-byte big-endian length and a body
// each, and hands them to h, the first to its handshake and the rest to
// its request, until the connection must close. It returns why.
func (fr frameReading) readFrames(nc net.Conn, h frameHandler) (reason string) {
	r := bufio.NewReaderSize(nc, frameReadBytes)
	var buf []byte
	first := true
	for {
		var prefix [4]byte
		if _, err := io.ReadFull(r, prefix[:]); err != nil {
			return readError(err)
		}
		if first && fr.answerWord != nil && isFourLetterWord(prefix) {
			word := string(prefix[:])
			w := bufio.NewWriter(nc)
			fr.answerWord(word, w)
			w.Flush()
			return "four-letter word " + word
		}
		n := int32(binary.BigEndian.Uint32(prefix[:]))
		if n < 0 || int(n) > fr.maxFrameBytes {
			// ZooKeeper closes at once, unread; over TCP the client's
			// write of the rest still succeeds into the socket buffers,
			// and it learns of the close from its reader. Reading what
			// of the rest comes at once (within bounds) gives a client on
			// net.Pipe, which has no buffers, the same view.
			if fr.drainOversized && n > 0 && int(n) <= oversizedDrainBytesMax {
				nc.SetReadDeadline(time.Now().Add(oversizedDrainWait))
				io.CopyN(io.Discard, r, int64(n))
			}
			return fmt.Sprintf("frame length %d is not within 0..%d (jute.maxbuffer)", n, fr.maxFrameBytes)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		body := buf[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return readError(err)
		}
		if first {
			reason = h.handshake(body)
			first = false
		} else {
			reason = h.request(body)
		}
		if reason != "" {
			return reason
		}
		if !wholeFrameBuffered(r) {
			h.caughtUp()
		}
	}
}

// outQueue is a connection's frames that wait for its writer
// (writeFrames), guarded by the server's lock: the drivers queue frames
// under it and the writer sends them without it, so that no lock is held
// during I/O.
type outQueue struct {
	out     []byte // the frames queued
	queued  int    // frames in out
	spare   []byte // the buffer the last write gave back, for out to reuse
	closing bool   // close the connection once out is sent
	// writing: a goroutine (the writer, or Server's reader in
	// writeInline) has taken out and is writing it; any other leaves the
	// connection alone, so that frames leave in the order they were
	// queued.
	writing bool
	wake    chan struct{}
}

func newOutQueue() outQueue { return outQueue{wake: make(chan struct{}, 1)} }

func (q *outQueue) wakeWriter() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// closeAfterFlush has the writer close the connection once what is
// queued is sent.
func (q *outQueue) closeAfterFlush() {
	q.closing = true
	q.wakeWriter()
}

// takeLocked hands what is queued to the goroutine that is to write it,
// which gives the buffer back with giveBackLocked.
func (q *outQueue) takeLocked() []byte {
	buf := q.out
	q.out = q.spare[:0]
	q.spare = nil
	q.queued = 0
	q.writing = len(buf) > 0
	return buf
}

func (q *outQueue) giveBackLocked(buf []byte) {
	q.writing = false
	q.spare = buf[:0]
}

// writeFrames is a connection's writer: each time it is woken it takes
// what is queued, under mu, and writes it to nc without the lock, until
// nothing is left. closingLocked, called under mu before each take, says
// whether to close once nothing is left (it may wait, letting mu go). The
// writer closes nc and returns then, or when a write fails (the reader
// sees the close).
func (q *outQueue) writeFrames(mu *sync.Mutex, nc net.Conn, closingLocked func() bool) {
	for range q.wake {
		for {
			mu.Lock()
			closing := closingLocked()
			if q.writing {
				// Another goroutine is writing (Server's writeInline); it
				// wakes the writer again if anything is left.
				mu.Unlock()
				break
			}
			buf := q.takeLocked()
			mu.Unlock()
			var err error
			if len(buf) > 0 {
				_, err = nc.Write(buf)
			}
			mu.Lock()
			q.giveBackLocked(buf)
			mu.Unlock()
			if err != nil || len(buf) == 0 && closing {
				nc.Close()
				return
			}
			if len(buf) == 0 {
				break
			}
		}
	}
}

// deadlineTimer wakes a driver at its state machine's next deadline (a
// session's expiry, a container's check): armed under the server's lock
// after every input, fired as fire, which takes the lock.
type deadlineTimer struct {
	t    *time.Timer
	atMs int64 // the deadline t is armed for, math.MaxInt64 if none
}

func newDeadlineTimer(fire func()) deadlineTimer {
	t := time.AfterFunc(time.Hour, fire)
	t.Stop()
	return deadlineTimer{t: t, atMs: math.MaxInt64}
}

// rearm arms the timer for nextMs (math.MaxInt64: no deadline), at nowMs.
func (d *deadlineTimer) rearm(nowMs, nextMs int64) {
	if nextMs == d.atMs {
		return
	}
	d.atMs = nextMs
	if nextMs == math.MaxInt64 {
		d.t.Stop()
		return
	}
	d.t.Reset(time.Duration(max(nextMs-nowMs, 0)) * time.Millisecond)
}

// due reports whether the armed deadline has come by nowMs; if it has,
// the timer counts as disarmed until rearm.
func (d *deadlineTimer) due(nowMs int64) bool {
	if nowMs < d.atMs {
		return false
	}
	d.atMs = math.MaxInt64
	return true
}

func (d *deadlineTimer) stop() { d.t.Stop() }

// acceptLoop hands each connection accepted on l to serve until l fails.
// It returns why: stoppedLocked's error, asked under mu, if the server
// has stopped (ErrServerClosed, say), else l's.
func acceptLoop(l net.Listener, serve func(net.Conn), mu *sync.Mutex, stoppedLocked func() error) error {
	for {
		nc, err := l.Accept()
		if err != nil {
			mu.Lock()
			stopped := stoppedLocked()
			mu.Unlock()
			if stopped != nil {
				return stopped
			}
			return err
		}
		serve(nc)
	}
}
