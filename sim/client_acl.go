package sim

import (
	"context"
	"net/netip"
	"strings"

	"github.com/go-zookeeper/zk"
)

// authCred is one set of credentials a client has added, which it sends
// again on every new connection (go-zookeeper's authCreds).
type authCred struct {
	scheme string
	auth   []byte
}

// addr is the address the client's connections come from.
func (c *Client) addr() netip.Addr {
	if c.cfg.Addr.IsValid() {
		return c.cfg.Addr
	}
	return DefaultClientAddr
}

// AddAuth is zk.Conn.AddAuth: it sends the credentials and, once the
// server accepts them, keeps them to send again after every reconnect. A
// scheme the server has no provider for fails with zk.ErrAuthFailed, and
// the server closes the connection after it: the client reconnects, with
// the same session and the credentials it had before.
func (c *Client) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	i := c.begin("addAuth", "")
	i.Data = []byte(scheme)
	_, err := c.do(ctx, Request{Op: OpAuth, AuthScheme: scheme, AuthData: auth}, nil)
	if err == nil {
		c.creds = append(c.creds, authCred{scheme: scheme, auth: append([]byte(nil), auth...)})
	}
	c.end(i, err, nil)
	return err
}

// GetACL is zk.Conn.GetACL: the node's ACL and Stat. As there, a failed
// call still returns a zero Stat (and no ACL), except when the connection
// closed.
func (c *Client) GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	i := c.begin("getACL", path)
	if !validateClientPath(path, false) {
		c.end(i, zk.ErrInvalidPath, nil)
		return nil, nil, zk.ErrInvalidPath
	}
	resp, err := c.do(ctx, Request{Op: OpGetACL, Path: path}, nil)
	if err == zk.ErrConnectionClosed {
		c.end(i, err, nil)
		return nil, nil, err
	}
	stat := resp.Stat
	c.end(i, err, func(o *Operation) { o.Stat = &stat })
	return resp.ACL, &stat, err
}

// SetACL is zk.Conn.SetACL: version is the expected aversion (-1: any).
// As there, a failed call still returns a zero Stat, except when the
// connection closed.
func (c *Client) SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	i := c.begin("setACL", path)
	i.Version = version
	if !validateClientPath(path, false) {
		c.end(i, zk.ErrInvalidPath, nil)
		return nil, zk.ErrInvalidPath
	}
	resp, err := c.do(ctx, Request{Op: OpSetACL, Path: path, ACL: acl, Version: version}, nil)
	if err == zk.ErrConnectionClosed {
		c.end(i, err, nil)
		return nil, err
	}
	stat := resp.Stat
	c.end(i, err, func(o *Operation) { o.Stat = &stat })
	return &stat, err
}

// resendAuth sends the client's credentials again on a new connection, one
// at a time, each after the reply to the one before, as go-zookeeper's
// resendZkAuth does before its send loop starts; then done runs. A failed
// resend ends the connection, as there.
func (c *Client) resendAuth(k int, done func()) {
	if k == len(c.creds) {
		done()
		return
	}
	cred := c.creds[k]
	p := &pending{req: Request{Xid: c.nextXid(), Op: OpAuth, AuthScheme: cred.scheme, AuthData: cred.auth}, wide: true}
	gen := c.generation
	p.onReply = func(err error) {
		if c.generation != gen {
			return
		}
		if err != nil {
			c.connectionLost("resending credentials failed: " + err.Error())
			return
		}
		c.resendAuth(k+1, done)
	}
	c.transmit(p)
}

// IncrementalReconfig is zk.Conn.IncrementalReconfig: joining servers
// (server.N=spec lines) and leaving server ids, each list sent joined by
// commas, newMembers null. version is the configuration's version it
// applies to, -1 for any. It returns /zookeeper/config's new Stat. The
// call is not in the operation history (a configuration is not a node
// the checkers model).
func (c *Client) IncrementalReconfig(ctx context.Context, joining, leaving []string, version int64) (*zk.Stat, error) {
	return c.reconfig(ctx, Request{Op: OpReconfig, Path: "/zookeeper/config", JoiningServers: strings.Join(joining, ","),
		LeavingServers: strings.Join(leaving, ","), NewMembersNull: true, CurConfigID: version})
}

// Reconfig is zk.Conn.Reconfig: the whole new list of servers.
func (c *Client) Reconfig(ctx context.Context, members []string, version int64) (*zk.Stat, error) {
	return c.reconfig(ctx, Request{Op: OpReconfig, Path: "/zookeeper/config", NewMembers: strings.Join(members, ","), CurConfigID: version})
}

func (c *Client) reconfig(ctx context.Context, req Request) (*zk.Stat, error) {
	p, err := c.call(ctx, &req, nil, 0, 0)
	if err == zk.ErrConnectionClosed {
		c.release(p)
		return nil, err
	}
	stat := replyOf(p).Stat
	c.release(p)
	return &stat, err
}
