package zkconn

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// The data calls are zk.Conn's. Each checks ctx before it sends: once
// sent, a request runs to its reply or to the loss of the connection.

// Create is zk.Conn.Create.
func (c *Conn) Create(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return c.handle().Create(path, data, flags, acl)
}

// CreateContainer is zk.Conn.CreateContainer.
func (c *Conn) CreateContainer(ctx context.Context, path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return c.handle().CreateContainer(path, data, flags, acl)
}

// Delete is zk.Conn.Delete.
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.handle().Delete(path, version)
}

// Exists is zk.Conn.Exists.
func (c *Conn) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, err
	}
	return c.handle().Exists(path)
}

// ExistsW is zk.Conn.ExistsW.
func (c *Conn) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, nil, err
	}
	return c.handle().ExistsW(path)
}

// Get is zk.Conn.Get.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return c.handle().Get(path)
}

// GetW is zk.Conn.GetW.
func (c *Conn) GetW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	return c.handle().GetW(path)
}

// Set is zk.Conn.Set.
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.handle().Set(path, data, version)
}

// Children is zk.Conn.Children.
func (c *Conn) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return c.handle().Children(path)
}

// ChildrenW is zk.Conn.ChildrenW.
func (c *Conn) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	return c.handle().ChildrenW(path)
}

// Multi is zk.Conn.Multi.
func (c *Conn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.handle().Multi(ops...)
}

// Sync is zk.Conn.Sync.
func (c *Conn) Sync(ctx context.Context, path string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return c.handle().Sync(path)
}
