package difftest

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/recipes/zkconn"
	"github.com/zklab/zklab/sim"
)

// SuperPassword is the password of the super user of both backends: the
// real server is started with its digest as
// zookeeper.DigestAuthenticationProvider.superDigest (SuperJVMFlag), the
// simulator gets it as ServerConfig.SuperDigest.
const SuperPassword = "secret"

// SuperDigest is super's digest, "super:<base64 SHA-1>".
var SuperDigest = sim.DigestID("super:" + SuperPassword)

// SuperJVMFlag configures the super digest on a real server, through
// SERVER_JVMFLAGS.
var SuperJVMFlag = "-Dzookeeper.DigestAuthenticationProvider.superDigest=" + SuperDigest

// More ACLs a create or a setACL can give, beyond ACLAll, ACLRead and
// ACLNone: every scheme a 3.8 server has, permissions one short of all,
// and invalid ones of each kind.
const (
	ACLAuth       ACLKind = "auth"        // auth:, every permission: the caller's digests
	ACLAuthRead   ACLKind = "auth+read"   // auth: every permission, world: read
	ACLAlice      ACLKind = "alice"       // digest alice:pw, every permission
	ACLAliceRead  ACLKind = "alice+read"  // digest alice:pw, every permission; world: read
	ACLBob        ACLKind = "bob"         // digest bob:pw, every permission
	ACLIP1        ACLKind = "ip1"         // ip 127.0.0.1, every permission
	ACLIP2        ACLKind = "ip2"         // ip 127.0.0.2, every permission
	ACLLoopback   ACLKind = "loopback"    // ip 127.0.0.0/8: read, create, delete
	ACLNoRead     ACLKind = "noRead"      // world: all but read
	ACLNoCreate   ACLKind = "noCreate"    // world: all but create
	ACLNoDelete   ACLKind = "noDelete"    // world: all but delete
	ACLNoWrite    ACLKind = "noWrite"     // world: all but write
	ACLNoAdmin    ACLKind = "noAdmin"     // world: all but admin
	ACLAdminOnly  ACLKind = "adminOnly"   // world: admin; alice: all
	ACLDuplicates ACLKind = "duplicates"  // world all twice, and auth twice
	ACLBadIP      ACLKind = "badIP"       // ip 127.0.0.1/33
	ACLIPv6       ACLKind = "ipv6"        // ip ::1: 3.8 parses IPv4 only
	ACLBadDigest  ACLKind = "badDigest"   // digest without a colon
	ACLUnknown    ACLKind = "unknown"     // scheme foo
	ACLWorldOther ACLKind = "world:other" // world with an id other than anyone
)

var aclKinds = map[ACLKind][]zk.ACL{
	ACLAuth:       zk.AuthACL(zk.PermAll),
	ACLAuthRead:   append(zk.AuthACL(zk.PermAll), zk.WorldACL(zk.PermRead)...),
	ACLAlice:      zk.DigestACL(zk.PermAll, "alice", "pw"),
	ACLAliceRead:  append(zk.DigestACL(zk.PermAll, "alice", "pw"), zk.WorldACL(zk.PermRead)...),
	ACLBob:        zk.DigestACL(zk.PermAll, "bob", "pw"),
	ACLIP1:        {{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1"}},
	ACLIP2:        {{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.2"}},
	ACLLoopback:   {{Perms: zk.PermRead | zk.PermCreate | zk.PermDelete, Scheme: "ip", ID: "127.0.0.0/8"}},
	ACLNoRead:     zk.WorldACL(zk.PermAll &^ zk.PermRead),
	ACLNoCreate:   zk.WorldACL(zk.PermAll &^ zk.PermCreate),
	ACLNoDelete:   zk.WorldACL(zk.PermAll &^ zk.PermDelete),
	ACLNoWrite:    zk.WorldACL(zk.PermAll &^ zk.PermWrite),
	ACLNoAdmin:    zk.WorldACL(zk.PermAll &^ zk.PermAdmin),
	ACLAdminOnly:  append(zk.WorldACL(zk.PermAdmin), zk.DigestACL(zk.PermAll, "alice", "pw")...),
	ACLDuplicates: {zk.WorldACL(zk.PermAll)[0], zk.WorldACL(zk.PermAll)[0], zk.AuthACL(zk.PermRead)[0], zk.AuthACL(zk.PermRead)[0]},
	ACLBadIP:      {{Perms: zk.PermAll, Scheme: "ip", ID: "127.0.0.1/33"}},
	ACLIPv6:       {{Perms: zk.PermAll, Scheme: "ip", ID: "::1"}},
	ACLBadDigest:  {{Perms: zk.PermAll, Scheme: "digest", ID: "alice"}},
	ACLUnknown:    {{Perms: zk.PermAll, Scheme: "foo", ID: "bar"}},
	ACLWorldOther: {{Perms: zk.PermAll, Scheme: "world", ID: "someone"}},
}

// Cred names the credentials of an AddAuth.
type Cred string

// The credentials an AddAuth can add.
const (
	CredAlice      Cred = "alice"     // digest alice:pw
	CredBob        Cred = "bob"       // digest bob:pw
	CredAliceWrong Cred = "alice:bad" // digest alice:wrong: a different digest
	CredNoColon    Cred = "nocolon"   // digest nocolon: accepted as it is
	CredSuper      Cred = "super"     // digest super:SuperPassword
	CredIP         Cred = "ip"        // ip: the connection's own address again
	CredUnknown    Cred = "unknown"   // scheme foo: AUTHFAILED, connection closed
	CredWorld      Cred = "world"     // scheme world: no provider either
)

func (c Cred) schemeAuth() (string, []byte) {
	switch c {
	case CredAlice:
		return "digest", []byte("alice:pw")
	case CredBob:
		return "digest", []byte("bob:pw")
	case CredAliceWrong:
		return "digest", []byte("alice:wrong")
	case CredNoColon:
		return "digest", []byte("nocolon")
	case CredSuper:
		return "digest", []byte("super:" + SuperPassword)
	case CredIP:
		return "ip", []byte("anything")
	case CredWorld:
		return "world", []byte("anyone")
	}
	return "foo", []byte("bar")
}

// aclConn is what the ACL operations need of a client: the simulated
// client has them with a context, zk.Conn without.
type aclConn interface {
	AddAuth(ctx context.Context, scheme string, auth []byte) error
	GetACL(ctx context.Context, path string) ([]zk.ACL, *zk.Stat, error)
	SetACL(ctx context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error)
}

// realACL adapts a zkconn.Conn's zk.Conn to aclConn.
type realACL struct{ c *zk.Conn }

func (r realACL) AddAuth(_ context.Context, scheme string, auth []byte) error {
	return r.c.AddAuth(scheme, auth)
}

func (r realACL) GetACL(_ context.Context, path string) ([]zk.ACL, *zk.Stat, error) {
	return r.c.GetACL(path)
}

func (r realACL) SetACL(_ context.Context, path string, acl []zk.ACL, version int32) (*zk.Stat, error) {
	return r.c.SetACL(path, acl, version)
}

func aclOf(c recipes.Conn) aclConn {
	switch c := c.(type) {
	case *sim.Client:
		return c
	case *zkconn.Conn:
		return realACL{c.ZK()}
	}
	panic(fmt.Sprintf("difftest: %T has no ACL calls", c))
}

func aclText(acl []zk.ACL) string {
	if acl == nil {
		return "acl=nil"
	}
	parts := make([]string, len(acl))
	for i, a := range acl {
		parts[i] = fmt.Sprintf("%d:%s:%s", a.Perms, a.Scheme, a.ID)
	}
	return "acl=[" + strings.Join(parts, " ") + "]"
}

// execACL runs the ACL operations of a sequence.
func (r *Run) execACL(ctx context.Context, op Op, c recipes.Conn) string {
	a := aclOf(c)
	p := op.Path.full(r.root)
	switch op.Kind {
	case AddAuth:
		scheme, auth := op.Cred.schemeAuth()
		seen := c.Session()
		err := a.AddAuth(ctx, scheme, auth)
		if err != zk.ErrAuthFailed {
			return errText(err)
		}
		// The server closed the connection after its answer: wait for
		// the client to see that, then for its new connection (the next
		// step waits for go-zookeeper to finish starting it).
		if seen.Connected() {
			wctx, cancel := c.WithTimeout(ctx, sessionWaitMax)
			_, werr := c.WaitSession(wctx, seen)
			cancel()
			if werr != nil {
				return errText(err) + " then " + errText(werr)
			}
		}
		return errText(err) + " then " + r.waitSession(ctx, op.Client, c)
	case GetACL:
		acl, stat, err := a.GetACL(ctx, p)
		return fmt.Sprintf("%s %s %s", aclText(acl), r.stat(stat), errText(err))
	case SetACL:
		stat, err := a.SetACL(ctx, p, op.ACL.acl(), op.Version)
		return fmt.Sprintf("%s %s", r.stat(stat), errText(err))
	}
	panic(fmt.Sprintf("difftest: %q is not an ACL op", op.Kind))
}
