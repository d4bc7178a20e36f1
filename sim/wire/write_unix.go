//go:build unix

package wire

import (
	"net"
	"syscall"
)

// rawConnOf is nc's file descriptor, for writeNoWait; nil if it has none.
func rawConnOf(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeNoWait writes as much of buf as the socket takes now, without
// waiting for room (the descriptor is non-blocking, as the net package
// keeps it). It returns how much it wrote; a full socket is no error.
func writeNoWait(raw syscall.RawConn, buf []byte) (int, error) {
	written := 0
	var werr error
	err := raw.Write(func(fd uintptr) bool {
		for written < len(buf) {
			n, err := syscall.Write(int(fd), buf[written:])
			if n > 0 {
				written += n
			}
			switch {
			case err == syscall.EINTR:
				continue
			case err == syscall.EAGAIN:
				return true
			case err != nil:
				werr = err
				return true
			case n == 0:
				return true
			}
		}
		return true
	})
	if werr == nil {
		werr = err
	}
	return written, werr
}
