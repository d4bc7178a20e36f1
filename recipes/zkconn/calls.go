package zkconn

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-zookeeper/zk"
)

// The data calls are zk.Conn's. Each checks ctx before it sends: once
// sent, a request runs to its reply or to the loss of the connection,
// which it reports as zk.ErrConnectionClosed (lossOf).

// lossOf reports an error of the connection itself as
// zk.ErrConnectionClosed, the one error recipes.Conn promises for a
// request lost with its connection. go-zookeeper reports such a loss in
// two ways: a request in flight when the read side fails gets
// ErrConnectionClosed (conn.go, flushRequests), but a request whose own
// write fails gets the write's error, *net.OpError "use of closed network
// connection" or "broken pipe" (conn.go, sendData). The second happens
// whenever a request is sent just as the connection closes, as after a
// reply dropped by zktest.Proxy. Both are the same loss to a caller: the
// request may or may not have reached the server (a failed write may
// have sent part of it), and a recipe settles it the same way. Every
// other error, zk's own and a context's among them (a context's
// deadline error is a net.Error too), passes unchanged.
func lossOf(err error) error {
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return err
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		return zk.ErrConnectionClosed
	}
	return err
}

// Create is zk.Conn.Create.
func (c *Conn) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	created, err := c.handle().Create(path, data, flags, acl)
	return created, lossOf(err)
}

// CreateContainer is zk.Conn.CreateContainer.
func (c *Conn) CreateContainer(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	created, err := c.handle().CreateContainer(path, data, flags, acl)
	return created, lossOf(err)
}

// Delete is zk.Conn.Delete.
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return lossOf(c.handle().Delete(path, version))
}

// Exists is zk.Conn.Exists.
func (c *Conn) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	ok, stat, err := c.handle().Exists(path)
	return ok, stat, lossOf(err)
}

// ExistsW is zk.Conn.ExistsW.
func (c *Conn) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, nil, err
	}
	ok, stat, watch, err := c.handle().ExistsW(path)
	return ok, stat, watch, lossOf(err)
}

// Get is zk.Conn.Get.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	data, stat, err := c.handle().Get(path)
	return data, stat, lossOf(err)
}

// GetW is zk.Conn.GetW.
func (c *Conn) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	data, stat, watch, err := c.handle().GetW(path)
	return data, stat, watch, lossOf(err)
}

// Set is zk.Conn.Set.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stat, err := c.handle().Set(path, data, version)
	return stat, lossOf(err)
}

// Children is zk.Conn.Children.
func (c *Conn) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	kids, stat, err := c.handle().Children(path)
	return kids, stat, lossOf(err)
}

// ChildrenW is zk.Conn.ChildrenW.
func (c *Conn) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	kids, stat, watch, err := c.handle().ChildrenW(path)
	return kids, stat, watch, lossOf(err)
}

// Multi is zk.Conn.Multi.
func (c *Conn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	results, err := c.handle().Multi(ops...)
	return results, lossOf(err)
}

// Sync is zk.Conn.Sync.
func (c *Conn) Sync(ctx context.Context, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	synced, err := c.handle().Sync(path)
	return synced, lossOf(err)
}
