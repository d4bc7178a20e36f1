//go:build !unix

package wire

import (
	"net"
	"syscall"
)

// rawConnOf: writes from the reader are only made on unix, where the
// descriptor is non-blocking; elsewhere the writer writes everything.
func rawConnOf(net.Conn) syscall.RawConn { return nil }

func writeNoWait(syscall.RawConn, []byte) (int, error) {
	panic("wire: writeNoWait without a raw connection")
}
