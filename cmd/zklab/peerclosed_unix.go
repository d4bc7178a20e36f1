//go:build unix

package main

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether c's peer has closed it, without taking
// anything from it or waiting: a non-blocking peek that reads end of
// file. Another goroutine may be blocked reading c meanwhile (the peek
// runs through Control, which does not take the read lock).
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	cerr := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err != nil && !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EINTR)
	})
	return cerr == nil && closed
}
