package scenarios

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklab/zklab/recipes"
	"github.com/zklab/zklab/sim"
)

// Access is who the clients of a scenario are to ZooKeeper's access
// control, and the ACL of the lock's directory (addresses on the simulator
// only: on a real server every client comes through a local proxy). In a
// scenario file:
//
//	credentials c1=digest:alice:pw c3=digest:bob:pw
//	addresses c2=10.0.0.7
//	lock-acl digest:alice:pw:cdrwa world:anyone:r
//
// Each client named in credentials adds them (zk.Conn.AddAuth) before its
// workload starts, and keeps them across reconnects; each client named in
// addresses connects from that address, which the ip scheme matches
// (others from sim.DefaultClientAddr). With lock-acl, the lock's directory
// is created before the workloads start, with that ACL, by the first
// client with credentials (c1 if none has any); its parents are open.
type Access struct {
	Credentials []Credential
	Addresses   []ClientAddress
	LockACL     []ACLEntry
}

// Credential is one AddAuth of a client: a scheme ("digest", "ip") and
// its bytes ("alice:pw").
type Credential struct {
	Client int
	Scheme string
	Auth   string
}

// ClientAddress is the address a client connects from.
type ClientAddress struct {
	Client int
	Addr   netip.Addr
}

// ACLEntry is one entry of an ACL as a scenario writes it, zkCli's
// SCHEME:ID:PERMS, except that a digest's ID is USER:PASSWORD (zklab
// computes the digest, which zkCli wants written out).
type ACLEntry struct {
	Scheme string
	ID     string
	Perms  int32
}

// The letters of the permissions, in zkCli's order.
const permLetters = "cdrwa"

var permBits = []int32{zk.PermCreate, zk.PermDelete, zk.PermRead, zk.PermWrite, zk.PermAdmin}

func (e ACLEntry) String() string {
	var b strings.Builder
	for i, bit := range permBits {
		if e.Perms&bit != 0 {
			b.WriteByte(permLetters[i])
		}
	}
	return e.Scheme + ":" + e.ID + ":" + b.String()
}

// acl is the entry as the server takes it: a digest's password hashed.
func (e ACLEntry) acl() zk.ACL {
	id := e.ID
	if e.Scheme == "digest" {
		id = sim.DigestID(e.ID)
	}
	return zk.ACL{Perms: e.Perms, Scheme: e.Scheme, ID: id}
}

func (a Access) clone() Access {
	return Access{Credentials: slices.Clone(a.Credentials), Addresses: slices.Clone(a.Addresses), LockACL: slices.Clone(a.LockACL)}
}

func (a Access) empty() bool {
	return len(a.Credentials) == 0 && len(a.Addresses) == 0 && len(a.LockACL) == 0
}

// accessKeys are the directives of Access, each at most once.
var accessKeys = []string{"credentials", "addresses", "lock-acl"}

// renderAccess is render for the directives of Access.
func (s *Scenario) renderAccess(key string) ([]string, bool) {
	var words []string
	switch key {
	case "credentials":
		for _, c := range s.Access.Credentials {
			words = append(words, fmt.Sprintf("c%d=%s:%s", c.Client, c.Scheme, c.Auth))
		}
	case "addresses":
		for _, a := range s.Access.Addresses {
			words = append(words, fmt.Sprintf("c%d=%s", a.Client, a.Addr))
		}
	case "lock-acl":
		for _, e := range s.Access.LockACL {
			words = append(words, e.String())
		}
	}
	if len(words) == 0 {
		return nil, false
	}
	return []string{key + " " + strings.Join(words, " ")}, true
}

// parseAccess parses a directive of Access; it reports false for a key
// that is none of them.
func (s *Scenario) parseAccess(key, rest string) (bool, error) {
	switch key {
	case "credentials":
		for _, w := range strings.Fields(rest) {
			client, value, err := clientAssignment(w)
			if err != nil {
				return true, fmt.Errorf("credentials: %v", err)
			}
			scheme, auth, ok := strings.Cut(value, ":")
			if !ok || scheme == "" {
				return true, fmt.Errorf("credentials: want cN=SCHEME:AUTH like c1=digest:alice:pw, got %q", w)
			}
			s.Access.Credentials = append(s.Access.Credentials, Credential{Client: client, Scheme: scheme, Auth: auth})
		}
		if len(s.Access.Credentials) == 0 {
			return true, errors.New("credentials: want cN=SCHEME:AUTH like c1=digest:alice:pw")
		}
	case "addresses":
		for _, w := range strings.Fields(rest) {
			client, value, err := clientAssignment(w)
			if err != nil {
				return true, fmt.Errorf("addresses: %v", err)
			}
			addr, err := netip.ParseAddr(value)
			if err != nil {
				return true, fmt.Errorf("addresses: %q is not an IP address", value)
			}
			if slices.ContainsFunc(s.Access.Addresses, func(a ClientAddress) bool { return a.Client == client }) {
				return true, fmt.Errorf("addresses: c%d given twice", client)
			}
			s.Access.Addresses = append(s.Access.Addresses, ClientAddress{Client: client, Addr: addr})
		}
		if len(s.Access.Addresses) == 0 {
			return true, errors.New("addresses: want cN=ADDRESS like c2=10.0.0.7")
		}
	case "lock-acl":
		for _, w := range strings.Fields(rest) {
			e, err := parseACLEntry(w)
			if err != nil {
				return true, fmt.Errorf("lock-acl: %v", err)
			}
			s.Access.LockACL = append(s.Access.LockACL, e)
		}
		if len(s.Access.LockACL) == 0 {
			return true, errors.New("lock-acl: want SCHEME:ID:PERMS entries like world:anyone:r")
		}
	default:
		return false, nil
	}
	return true, nil
}

func clientAssignment(w string) (int, string, error) {
	name, value, ok := strings.Cut(w, "=")
	if !ok || value == "" {
		return 0, "", fmt.Errorf("want cN=VALUE, got %q", w)
	}
	var c int
	if err := parseClient(name, &c); err != nil {
		return 0, "", err
	}
	return c, value, nil
}

// parseACLEntry reads SCHEME:ID:PERMS; the ID may hold colons (a digest's
// USER:PASSWORD, an auth's empty ID). Whether the server takes the entry
// is the server's to say, as on a real one: a run reports its refusal.
func parseACLEntry(w string) (ACLEntry, error) {
	first := strings.IndexByte(w, ':')
	last := strings.LastIndexByte(w, ':')
	if first < 0 || first == last {
		return ACLEntry{}, fmt.Errorf("want SCHEME:ID:PERMS like world:anyone:r or digest:alice:pw:cdrwa, got %q", w)
	}
	e := ACLEntry{Scheme: w[:first], ID: w[first+1 : last]}
	letters := w[last+1:]
	for _, r := range letters {
		i := strings.IndexRune(permLetters, r)
		if i < 0 {
			return ACLEntry{}, fmt.Errorf("%q: permission %q is none of c, d, r, w, a", w, r)
		}
		e.Perms |= permBits[i]
	}
	if e.Scheme == "" {
		return ACLEntry{}, fmt.Errorf("%q: no scheme", w)
	}
	if want := e.String(); want != w {
		return ACLEntry{}, fmt.Errorf("write %q as %q (permissions once each, in the order cdrwa)", w, want)
	}
	return e, nil
}

// checkAccess reports the clients Access names that the scenario does not
// have.
func (s *Scenario) checkAccess(fail func(line int, format string, args ...any), layout []layoutItem) {
	for _, c := range s.Access.Credentials {
		if c.Client > s.Clients && s.Clients > 0 {
			fail(lineOf(layout, "credentials", 0)+1, "credentials for c%d, but there are %d clients", c.Client, s.Clients)
		}
	}
	for _, a := range s.Access.Addresses {
		if a.Client > s.Clients && s.Clients > 0 {
			fail(lineOf(layout, "addresses", 0)+1, "address for c%d, but there are %d clients", a.Client, s.Clients)
		}
	}
}

// clientAddr is the address client i connects from (the zero Addr: the
// default).
func (a Access) clientAddr(i int) netip.Addr {
	for _, ca := range a.Addresses {
		if ca.Client == i {
			return ca.Addr
		}
	}
	return netip.Addr{}
}

// lockOwner is the client that creates the lock's directory.
func (a Access) lockOwner() int {
	if len(a.Credentials) > 0 {
		return a.Credentials[0].Client
	}
	return 1
}

// setupAccess runs before the workloads: each client adds its
// credentials, then the lock's owner creates the lock's directory with
// its ACL. It returns what went wrong, for the run's verdict.
func (r *runner) setupAccess() error {
	a := r.sc.Access
	if len(a.Credentials) == 0 && len(a.LockACL) == 0 {
		return nil
	}
	var errs []error
	done := 0
	tasks := 0
	for i := 1; i <= r.sc.Clients; i++ {
		var creds []Credential
		for _, c := range a.Credentials {
			if c.Client == i {
				creds = append(creds, c)
			}
		}
		owner := len(a.LockACL) > 0 && a.lockOwner() == i
		if len(creds) == 0 && !owner {
			continue
		}
		c := r.clients[i-1]
		tasks++
		r.w.Go(c, fmt.Sprintf("c%d access", i), func(ctx context.Context) {
			defer func() { done++ }()
			for _, cr := range creds {
				if err := c.AddAuth(ctx, cr.Scheme, []byte(cr.Auth)); err != nil {
					errs = append(errs, fmt.Errorf("c%d: AddAuth %s: %w", i, cr.Scheme, err))
				}
			}
			if owner {
				if err := r.createLockDir(ctx, c); err != nil {
					errs = append(errs, fmt.Errorf("c%d: creating %s with ACL %v: %w", i, r.lockPath, a.LockACL, err))
				}
			}
		})
	}
	for done < tasks {
		if r.w.Now() > r.quietPeriod()+10*time.Second {
			errs = append(errs, errors.New("the access setup did not finish"))
			break
		}
		if err := r.w.RunFor(runChunk); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// setupAccessZK is setupAccess on a real server: each client adds its
// credentials, then the lock's owner creates the lock's directory. The
// clients connect through proxies on this machine, so the server sees
// them all at one address: addresses are refused.
func (z *zkRun) setupAccessZK(ctx context.Context) error {
	r := z.r
	a := r.sc.Access
	if len(a.Addresses) > 0 {
		return fmt.Errorf("scenario: addresses run on the simulator only: a real server sees every client of a run at the proxies' address")
	}
	for _, cr := range a.Credentials {
		if err := z.conns[cr.Client-1].ZK().AddAuth(cr.Scheme, []byte(cr.Auth)); err != nil {
			return fmt.Errorf("access setup: c%d: AddAuth %s: %w", cr.Client, cr.Scheme, err)
		}
	}
	if len(a.LockACL) == 0 {
		return nil
	}
	owner := a.lockOwner()
	if err := r.createLockDir(ctx, z.conns[owner-1]); err != nil {
		return fmt.Errorf("access setup: c%d: creating %s with ACL %v: %w", owner, r.lockPath, a.LockACL, err)
	}
	return nil
}

// createLockDir creates the lock's parents (open) and the lock's
// directory with the scenario's ACL; the lock's owner must already hold
// the credentials an auth entry stands for. On a real server the parents
// start below the run's own tree.
func (r *runner) createLockDir(ctx context.Context, c recipes.Conn) error {
	var acl []zk.ACL
	for _, e := range r.sc.Access.LockACL {
		acl = append(acl, e.acl())
	}
	base := ""
	if r.real != nil {
		base = r.real.root
	}
	parts := strings.Split(strings.TrimPrefix(strings.TrimPrefix(r.lockPath, base), "/"), "/")
	for i := range parts {
		p := base + "/" + strings.Join(parts[:i+1], "/")
		nodeACL := zk.WorldACL(zk.PermAll)
		if i == len(parts)-1 {
			nodeACL = acl
		}
		if _, err := c.Create(ctx, p, nil, 0, nodeACL); err != nil && err != zk.ErrNodeExists {
			return err
		}
	}
	return nil
}
