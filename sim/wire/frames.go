package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"
)

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
