package sim

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// Access control as a standalone ZooKeeper 3.8 server enforces it. The
// rules live in a handful of server classes, and each function here names
// the one it follows:
//
//   - ZooKeeperServer.checkACL decides whether a connection's ids grant a
//     permission on a node (checkACL below);
//   - PrepRequestProcessor.fixupACL validates and expands the ACL of a
//     create or a setACL (fixupACL);
//   - the providers of the schemes a server has by default
//     (ProviderRegistry.initialize): IPAuthenticationProvider ("ip") and
//     DigestAuthenticationProvider ("digest"); "world" and "auth" are
//     handled by checkACL and fixupACL themselves, and every other scheme is
//     unknown;
//   - ZooKeeperServer.processPacket answers the auth packet, and
//     FinalRequestProcessor answers getACL and whoAmI.
//
// The Programmer's Guide tells the same story in "ZooKeeper access control
// using ACLs".

// aclID names an ACL in the server's table. ZooKeeper too keeps each
// distinct ACL once and stores a reference in the node
// (ReferenceCountedACLCache), which keeps a million znodes small.
type aclID uint32

const (
	aclOpen     aclID = 0 // world:anyone, every permission
	aclReadOnly aclID = 1 // world:anyone, read: /zookeeper/config
)

// aclTable interns ACLs. Unlike ReferenceCountedACLCache it never forgets
// one: a server whose clients keep inventing new ACLs grows.
type aclTable struct {
	lists [][]zk.ACL
	// world[id] is the permissions that lists[id] grants everyone: those
	// of its world:anyone entries, or all of them for an empty list (which
	// checkACL lets through). A check it answers needs no identities.
	world []int32
	index map[string]aclID
}

func newACLTable() *aclTable {
	t := &aclTable{index: make(map[string]aclID)}
	t.intern(zk.WorldACL(zk.PermAll))
	t.intern(zk.WorldACL(zk.PermRead))
	return t
}

// intern returns the id of acl, adding it if it is new. The ACL of almost
// every create is world:anyone with every permission, and is found first.
func (t *aclTable) intern(acl []zk.ACL) aclID {
	if len(t.lists) > 0 && len(acl) == 1 && acl[0] == t.lists[aclOpen][0] {
		return aclOpen
	}
	key := aclKey(acl)
	if id, ok := t.index[key]; ok {
		return id
	}
	if uint64(len(t.lists)) > uint64(^aclID(0)) {
		panic("sim: more than 2^32 distinct ACLs")
	}
	id := aclID(len(t.lists))
	acl = slices.Clone(acl)
	t.lists = append(t.lists, acl)
	t.world = append(t.world, worldPerms(acl))
	t.index[key] = id
	return id
}

// check asserts what the permission checks rest on: world holds, for
// each list, what worldPerms makes of it.
func (t *aclTable) check() error {
	if len(t.world) != len(t.lists) {
		return fmt.Errorf("sim: invariant: %d ACLs, world permissions for %d", len(t.lists), len(t.world))
	}
	for id, acl := range t.lists {
		if got, want := t.world[id], worldPerms(acl); got != want {
			return fmt.Errorf("sim: invariant: ACL %d %v grants everyone %#x, the table says %#x", id, acl, want, got)
		}
	}
	return nil
}

// aclKey encodes an ACL unambiguously, as a map key.
func aclKey(acl []zk.ACL) string {
	b := make([]byte, 0, 32)
	for _, a := range acl {
		b = binary.BigEndian.AppendUint32(b, uint32(a.Perms))
		b = binary.AppendUvarint(b, uint64(len(a.Scheme)))
		b = append(b, a.Scheme...)
		b = binary.AppendUvarint(b, uint64(len(a.ID)))
		b = append(b, a.ID...)
	}
	return string(b)
}

func worldPerms(acl []zk.ACL) int32 {
	if len(acl) == 0 {
		return ^int32(0)
	}
	var perms int32
	for _, a := range acl {
		if isWorldAnyone(a) {
			perms |= a.Perms
		}
	}
	return perms
}

func isWorldAnyone(a zk.ACL) bool { return a.Scheme == "world" && a.ID == "anyone" }

// --- identities ---

// DefaultClientAddr is the address a connection opened with Open comes
// from: a client on the server's own machine, as in the differential tests.
var DefaultClientAddr = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// authID is one identity of a connection: ZooKeeper's Id, a scheme and an
// id ("ip" and "127.0.0.1", "digest" and "alice:<base64 SHA-1>", "super"
// and "").
type authID struct {
	scheme, id string
}

// connAuth is what the server knows of a connection's identities
// (ServerCnxn.authInfo): its peer address, and its ids in the order they
// were added. ServerCnxn keeps them in a set backed by a
// ConcurrentHashMap, and hands out that set's iteration order: whoAmI
// lists the ids in it, and the "auth" scheme expands to them in it.
type connAuth struct {
	addr    netip.Addr
	ids     []authID // insertion order, no duplicates
	ordered []authID // the set's iteration order, nil until needed
	// first is the first storage of ids, for the "ip" id every
	// connection starts with (openAuth).
	first [1]authID
}

func (s *Server) openAuth(conn ConnID, addr netip.Addr) {
	if s.auth == nil {
		s.auth = make(map[ConnID]*connAuth)
	}
	addr = addr.Unmap()
	a := &connAuth{addr: addr}
	a.ids = a.first[:0]
	// NIOServerCnxn's constructor: addAuthInfo(new Id("ip", getHostAddress())).
	if addr != s.hostAddr.addr || s.hostAddr.text == "" {
		s.hostAddr.addr, s.hostAddr.text = addr, javaHostAddress(addr)
	}
	a.add(authID{"ip", s.hostAddr.text})
	s.auth[conn] = a
}

// add is ServerCnxn.addAuthInfo: a set, so an id held already is not
// added again.
func (a *connAuth) add(id authID) {
	if slices.Contains(a.ids, id) {
		return
	}
	a.ids = append(a.ids, id)
	a.ordered = nil
}

func (a *connAuth) has(scheme string) bool {
	return slices.ContainsFunc(a.ids, func(id authID) bool { return id.scheme == scheme })
}

// iteration returns the ids in the order ServerCnxn.getAuthInfo lists them.
func (a *connAuth) iteration() []authID {
	if a.ordered == nil {
		a.ordered = chmOrder(a.ids)
	}
	return a.ordered
}

// javaHostAddress formats addr as InetAddress.getHostAddress does: dotted
// quads for IPv4, eight uncompressed lowercase hex groups for IPv6.
func javaHostAddress(addr netip.Addr) string {
	if addr.Is4() || !addr.IsValid() {
		return addr.String()
	}
	b := addr.As16()
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := addr.Zone(); z != "" {
		sb.WriteByte('%')
		sb.WriteString(z)
	}
	return sb.String()
}

// idHash is Id.hashCode as jute generates it.
func idHash(id authID) int32 {
	h := int32(17)
	h = 37*h + javaStringHash(id.scheme)
	h = 37*h + javaStringHash(id.id)
	return h
}

// javaStringHash is String.hashCode: javaSpreadHash without its spread
// (x ^ x>>>16 is its own inverse).
func javaStringHash(s string) int32 {
	x := javaSpreadHash(s)
	return int32(x ^ x>>16)
}

// chmOrder lists ids, given in insertion order, in the iteration order of a
// ConcurrentHashMap-backed set they were added to one by one: a table of
// 16 bins that doubles once it holds 3/4 of its size (addCount), bins in
// index order, each bin in insertion order, and a resize that splits each
// bin as ConcurrentHashMap.transfer does (the tail run that goes to one
// half keeps its order, the nodes before it are pushed on the front of
// their half's list, reversing them). It does not emulate tree bins, which
// need eight ids in one bin of a table of 64.
func chmOrder(ids []authID) []authID {
	type node struct {
		id   authID
		hash uint32
	}
	spread := func(h int32) uint32 { return (uint32(h) ^ uint32(h)>>16) & 0x7fffffff }
	bins := make([][]node, 16)
	count := 0
	for _, id := range ids {
		nd := node{id, spread(idHash(id))}
		i := nd.hash & uint32(len(bins)-1)
		bins[i] = append(bins[i], nd)
		count++
		if sizeCtl := len(bins) * 3 / 4; count >= sizeCtl {
			n := uint32(len(bins))
			next := make([][]node, 2*n)
			for i, bin := range bins {
				if len(bin) == 0 {
					continue
				}
				// The last run: the longest tail whose nodes all go to the
				// same half.
				last := len(bin) - 1
				run := bin[last].hash & n
				for last > 0 && bin[last-1].hash&n == run {
					last--
				}
				var lo, hi []node
				if run == 0 {
					lo = slices.Clone(bin[last:])
				} else {
					hi = slices.Clone(bin[last:])
				}
				for _, p := range bin[:last] {
					if p.hash&n == 0 {
						lo = append([]node{p}, lo...)
					} else {
						hi = append([]node{p}, hi...)
					}
				}
				next[i], next[uint32(i)+n] = lo, hi
			}
			bins = next
		}
	}
	out := make([]authID, 0, len(ids))
	for _, bin := range bins {
		for _, nd := range bin {
			out = append(out, nd.id)
		}
	}
	return out
}

// --- providers ---

// providerKnown reports whether a server has an authentication provider
// for scheme: a standalone 3.8 server has "ip" and "digest"
// (ProviderRegistry.initialize).
func providerKnown(scheme string) bool { return scheme == "ip" || scheme == "digest" }

// providerAuthenticated is AuthenticationProvider.isAuthenticated: whether
// an id of the scheme says who the client is, so that the "auth" scheme
// may expand to it. A digest does; an ip does not.
func providerAuthenticated(scheme string) bool { return scheme == "digest" }

// providerValid is AuthenticationProvider.isValid for the ACL id of a
// known scheme.
func providerValid(scheme, id string) bool {
	switch scheme {
	case "digest":
		// id.split(":").length == 2: Java's split drops trailing empty
		// strings, so "user:" is one part and invalid, ":hash" two and
		// valid, "a:b:c" three and invalid.
		parts := strings.Split(id, ":")
		for len(parts) > 0 && parts[len(parts)-1] == "" {
			parts = parts[:len(parts)-1]
		}
		return len(parts) == 2
	case "ip":
		addr, bitsText, hasBits := strings.Cut(id, "/")
		b := ipv4Bytes(addr)
		if b == nil {
			return false
		}
		if hasBits {
			bits, ok := javaParseInt(bitsText)
			if !ok || bits < 0 || bits > 32 {
				return false
			}
		}
		return true
	}
	return false
}

// providerMatches is AuthenticationProvider.matches(id, aclExpr) for a
// connection's id and an ACL's id of the same known scheme.
func providerMatches(scheme, id, aclExpr string) bool {
	switch scheme {
	case "digest":
		return id == aclExpr
	case "ip":
		return ipMatches(id, aclExpr)
	}
	return false
}

// ipMatches is IPAuthenticationProvider.matches: aclExpr is an IPv4
// address with an optional prefix length, and id the client's address.
// ZooKeeper 3.8 parses IPv4 only (v6addr2Bytes is a TODO there), so an
// IPv6 client matches no ip ACL, and an IPv6 ACL is invalid.
func ipMatches(id, aclExpr string) bool {
	addr, bitsText, hasBits := strings.Cut(aclExpr, "/")
	aclAddr := ipv4Bytes(addr)
	if aclAddr == nil {
		return false
	}
	bits := 32
	if hasBits {
		var ok bool
		bits, ok = javaParseInt(bitsText)
		if !ok || bits < 0 || bits > 32 {
			return false
		}
	}
	remote := ipv4Bytes(id)
	if remote == nil {
		return false
	}
	maskBytes(aclAddr, bits)
	maskBytes(remote, bits)
	return [4]byte(aclAddr) == [4]byte(remote)
}

// ipv4Bytes is IPAuthenticationProvider.v4addr2Bytes: four dot-separated
// parts, each an int in 0..255 as Integer.parseInt reads it (a sign and
// leading zeros allowed); nil if addr is not one.
func ipv4Bytes(addr string) []byte {
	parts := strings.Split(addr, ".")
	if len(parts) != 4 {
		return nil
	}
	b := make([]byte, 4)
	for i, p := range parts {
		v, ok := javaParseInt(p)
		if !ok || v < 0 || v > 255 {
			return nil
		}
		b[i] = byte(v)
	}
	return b
}

// maskBytes keeps the first bits bits of b, as IPAuthenticationProvider.mask.
func maskBytes(b []byte, bits int) {
	start := bits / 8
	mask := ^byte((1 << (8 - bits%8)) - 1)
	for ; start < len(b); start++ {
		b[start] &= mask
		mask = 0
	}
}

// javaParseInt is Integer.parseInt(s) in radix 10: an optional sign, then
// one or more decimal digits of any script (Character.digit), the value
// within int's range.
func javaParseInt(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	var v int64
	for _, r := range s {
		d := decimalDigit(r)
		if d < 0 {
			return 0, false
		}
		v = v*10 + int64(d)
		if v > 1<<31 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -1<<31 {
		return 0, false
	}
	return int(v), true
}

// decimalDigit is Character.digit(r, 10): the value of a decimal digit of
// any script (Unicode puts each script's digits 0-9 in a run), -1 if r is
// none.
func decimalDigit(r rune) int {
	if r >= '0' && r <= '9' {
		return int(r - '0')
	}
	if r < utf8.RuneSelf || !unicode.IsDigit(r) {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10
		}
	}
	return -1
}

// DigestID is the id a digest ACL names the user of "user:password" by,
// as DigestAuthenticationProvider.generateDigest computes it: the user (the
// text before the first colon, all of it if there is none), a colon, and
// the base64 SHA-1 of the whole text. zk.DigestACL makes the same id.
func DigestID(userPassword string) string {
	user, _, _ := strings.Cut(userPassword, ":")
	sum := sha1.Sum([]byte(userPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// javaString is new String(bytes) with the server's charset, UTF-8 (on
// another default charset a real server's digests of non-ASCII
// credentials differ): JDK 17's String.decodeUTF8_UTF16, which puts one
// U+FFFD for each malformed sequence as it delimits them, one for an
// encoded surrogate, and stops at a sequence cut short by the end of the
// bytes. Held to a JVM's output by TestJavaStringMatchesJDK17.
func javaString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	const repl = '\uFFFD'
	cont := func(x byte) bool { return x&0xc0 == 0x80 }
	var sb strings.Builder
	sp, sl := 0, len(b)
	for sp < sl {
		b1 := b[sp]
		sp++
		switch {
		case b1 < 0x80:
			sb.WriteByte(b1)
		case b1>>5 == 0x6 && b1&0x1e != 0: // two bytes, not overlong
			if sp < sl {
				b2 := b[sp]
				sp++
				if !cont(b2) {
					sb.WriteRune(repl)
					sp--
				} else {
					sb.WriteRune(rune(b1&0x1f)<<6 | rune(b2&0x3f))
				}
				continue
			}
			sb.WriteRune(repl)
			return sb.String()
		case b1>>4 == 0xe: // three bytes
			if sp+1 < sl {
				b2, b3 := b[sp], b[sp+1]
				sp += 2
				if (b1 == 0xe0 && b2&0xe0 == 0x80) || !cont(b2) || !cont(b3) { // isMalformed3
					sb.WriteRune(repl)
					sp -= 3
					// malformed3: the lead alone, or the lead and b2.
					if (b1 == 0xe0 && b2&0xe0 == 0x80) || !cont(b2) {
						sp++
					} else {
						sp += 2
					}
					continue
				}
				c := rune(b1&0x0f)<<12 | rune(b2&0x3f)<<6 | rune(b3&0x3f)
				if c >= 0xd800 && c <= 0xdfff {
					sb.WriteRune(repl)
				} else {
					sb.WriteRune(c)
				}
				continue
			}
			if sp < sl && ((b1 == 0xe0 && b[sp]&0xe0 == 0x80) || !cont(b[sp])) { // isMalformed3_2
				sb.WriteRune(repl)
				continue
			}
			sb.WriteRune(repl)
			return sb.String()
		case b1>>3 == 0x1e: // four bytes
			if sp+2 < sl {
				b2, b3, b4 := b[sp], b[sp+1], b[sp+2]
				sp += 3
				uc := rune(b1&0x07)<<18 | rune(b2&0x3f)<<12 | rune(b3&0x3f)<<6 | rune(b4&0x3f)
				if !cont(b2) || !cont(b3) || !cont(b4) || uc < 0x10000 || uc > 0x10ffff { // isMalformed4, shortest form
					sb.WriteRune(repl)
					sp -= 4
					// malformed4: how far the sequence was well formed.
					switch {
					case b1 > 0xf4 || (b1 == 0xf0 && (b2 < 0x90 || b2 > 0xbf)) || (b1 == 0xf4 && b2&0xf0 != 0x80) || !cont(b2):
						sp++
					case !cont(b3):
						sp += 2
					default:
						sp += 3
					}
					continue
				}
				sb.WriteRune(uc)
				continue
			}
			if b1 > 0xf4 || (sp < sl && ((b1 == 0xf0 && (b[sp] < 0x90 || b[sp] > 0xbf)) || (b1 == 0xf4 && b[sp]&0xf0 != 0x80) || !cont(b[sp]))) { // isMalformed4_2
				sb.WriteRune(repl)
				continue
			}
			sp++
			sb.WriteRune(repl)
			if sp < sl && !cont(b[sp]) { // isMalformed4_3
				continue
			}
			return sb.String()
		default:
			sb.WriteRune(repl)
		}
	}
	return sb.String()
}

// --- the decisions ---

// checkACL is ZooKeeperServer.checkACL: whether ids grant perm on a node
// whose ACL is acl. An empty ACL grants everything, a super id everything,
// and otherwise an entry that has one of the permissions asked for grants
// them when it is world:anyone or names one of the ids by its provider's
// matches. It is the reference every decision of the server is held to.
func checkACL(acl []zk.ACL, perm int32, ids []authID) bool {
	if len(acl) == 0 {
		return true
	}
	for _, id := range ids {
		if id.scheme == "super" {
			return true
		}
	}
	for _, a := range acl {
		if a.Perms&perm == 0 {
			continue
		}
		if isWorldAnyone(a) {
			return true
		}
		if !providerKnown(a.Scheme) {
			continue
		}
		for _, id := range ids {
			if id.scheme == a.Scheme && providerMatches(a.Scheme, id.id, a.ID) {
				return true
			}
		}
	}
	return false
}

// callerIDs are the ids of the connection whose request is being handled.
func (s *Server) callerIDs() []authID {
	if a := s.callingAuth(); a != nil {
		return a.ids
	}
	return nil
}

// callingAuth is what the connection whose request is being handled has
// proved: a replica's re-execution runs as replayConn, with the record's
// identities (ApplyRecord).
func (s *Server) callingAuth() *connAuth {
	if s.caller == replayConn {
		return &s.replayAuth
	}
	return s.auth[s.caller]
}

// allowed reports whether the caller has perm on a node with ACL id. The
// table answers for ACLs that grant it to everyone, inline where allowed
// is called (the call was some 8 instructions of each check, two a
// write); the rest go through checkACL with the caller's ids
// (allowedByList).
func (s *Server) allowed(id aclID, perm int32) bool {
	return s.acls.world[id]&perm != 0 || s.allowedByList(id, perm)
}

// allowedByList is allowed for an ACL that does not grant perm to everyone.
func (s *Server) allowedByList(id aclID, perm int32) bool {
	return checkACL(s.acls.lists[id], perm, s.callerIDs())
}

// assertPermitted panics unless the caller has perm on n, the node at
// path as the tree holds it now: apply calls it for every write it
// performs, so that no write ever passes a check a real server would fail,
// whatever the validation before it decided (it catches, for one, a multi
// that checked a node created earlier in it against the wrong ACL). The
// ACLs that grant perm to everyone answer at once, from the table's world
// permissions, which CheckInvariants holds to the lists (it made them from
// the list again at every write, a sixtieth of BenchmarkSimThroughput);
// the others go through checkACL with the caller's ids.
func (s *Server) assertPermitted(path string, n *znode, perm int32) {
	if n == nil {
		panic(fmt.Sprintf("sim: permission check on missing node %q", path))
	}
	if s.acls.world[n.acl]&perm != 0 {
		return
	}
	acl := s.acls.lists[n.acl]
	if !checkACL(acl, perm, s.callerIDs()) {
		panic(fmt.Sprintf("sim: connection %d passed a check on %q (perm %d, ACL %v, ids %v) that ZooKeeperServer.checkACL fails", s.caller, path, perm, acl, s.callerIDs()))
	}
}

// fixupACL is PrepRequestProcessor.fixupACL: it validates the ACL of a
// create or a setACL and expands its "auth" entries into the caller's
// authenticated ids. Duplicates go first; an empty ACL, world with an id
// other than anyone, an unknown scheme, an id its provider finds invalid,
// or an "auth" entry from a caller with no authenticated id make it
// invalid. It returns acl itself when there is nothing to change.
func (s *Server) fixupACL(acl []zk.ACL) ([]zk.ACL, bool) {
	if len(acl) == 1 && isWorldAnyone(acl[0]) {
		return acl, true
	}
	uniq := acl
	for i := range acl {
		if slices.Contains(acl[:i], acl[i]) {
			uniq = nil
			for _, a := range acl {
				if !slices.Contains(uniq, a) {
					uniq = append(uniq, a)
				}
			}
			break
		}
	}
	if len(uniq) == 0 {
		return nil, false
	}
	expand := false
	for _, a := range uniq {
		switch {
		case isWorldAnyone(a):
		case a.Scheme == "auth":
			expand = true
		case !providerKnown(a.Scheme) || !providerValid(a.Scheme, a.ID):
			return nil, false
		}
	}
	if !expand {
		return uniq, true
	}
	var ids []authID
	if a := s.callingAuth(); a != nil {
		ids = a.iteration()
	}
	out := make([]zk.ACL, 0, len(uniq))
	for _, a := range uniq {
		if a.Scheme != "auth" {
			out = append(out, a)
			continue
		}
		valid := false
		for _, id := range ids {
			if providerKnown(id.scheme) && providerAuthenticated(id.scheme) {
				valid = true
				out = append(out, zk.ACL{Perms: a.Perms, Scheme: id.scheme, ID: id.id})
			}
		}
		if !valid {
			return nil, false
		}
	}
	return out, true
}

// --- the requests ---

// authenticate answers an auth packet (ZooKeeperServer.processPacket): the
// scheme's provider adds the ids the credentials prove and the reply is OK;
// a scheme the server has no provider for gets AUTHFAILED and the
// connection is closed after it. The reply's zxid is 0, and the session is
// not touched: the packet never enters the request pipeline.
func (s *Server) authenticate(conn ConnID, req Request) {
	a := s.auth[conn]
	switch req.AuthScheme {
	case "digest":
		if req.AuthData == nil {
			// A null buffer (length -1 on the wire) makes the provider's
			// new String(authData) throw; ZooKeeperServer.processPacket
			// answers a provider's RuntimeException with AUTHFAILED and
			// closes the connection, as for an unknown scheme (measured:
			// sim/wire's judge probe "bad credentials").
			s.failAuth(conn, req)
			return
		}
		// DigestAuthenticationProvider.handleAuthentication takes any
		// bytes, a colon or not: the user is what comes before the first.
		id := DigestID(javaString(req.AuthData))
		if s.cfg.SuperDigest != "" && id == s.cfg.SuperDigest {
			a.add(authID{"super", ""})
		}
		a.add(authID{"digest", id})
	case "ip":
		// IPAuthenticationProvider ignores the bytes: the id is the peer.
		a.add(authID{"ip", javaHostAddress(a.addr)})
	default:
		s.failAuth(conn, req)
		return
	}
	s.reply(conn, Response{Xid: req.Xid})
}

// failAuth answers an auth packet with AUTHFAILED and closes the
// connection after the reply.
func (s *Server) failAuth(conn ConnID, req Request) {
	s.reply(conn, Response{Xid: req.Xid, Err: CodeAuthFailed})
	s.dropConn(conn)
	s.send(Output{Conn: conn, Kind: OutClose})
}

// whoAmI answers with the connection's ids as ClientInfos, in the set's
// order (AuthUtil.getClientInfos): the user of a digest id is the text
// before its colon, of an ip id the address, of super (which has no
// provider) "".
func (s *Server) whoAmI(conn ConnID, req Request) {
	ids := s.auth[conn].iteration()
	infos := make([]ClientInfo, len(ids))
	for i, id := range ids {
		user := ""
		switch id.scheme {
		case "digest":
			user, _, _ = strings.Cut(id.id, ":")
		case "ip":
			user = id.id
		}
		infos[i] = ClientInfo{AuthScheme: id.scheme, User: user}
	}
	s.reply(conn, Response{Xid: req.Xid, Zxid: s.lastZxid, Clients: infos})
}

// getACL answers with a node's ACL and Stat (FinalRequestProcessor): it
// needs READ or ADMIN, and without ADMIN the password hash of every digest
// entry reads "x" (ZOOKEEPER-1392).
func (s *Server) getACL(conn ConnID, req Request) {
	n := s.readNode(req.Path) // "" is the root, as for the other reads
	if n == nil {
		s.replyCode(conn, req.Xid, s.lastZxid, CodeNoNode)
		return
	}
	if !s.allowed(n.acl, zk.PermRead|zk.PermAdmin) {
		s.replyCode(conn, req.Xid, s.lastZxid, CodeNoAuth)
		return
	}
	acl := slices.Clone(s.acls.lists[n.acl])
	if !s.allowed(n.acl, zk.PermAdmin) {
		for i, a := range acl {
			if a.Scheme == "digest" {
				acl[i].ID = redactDigest(a.ID)
			}
		}
	}
	s.reply(conn, Response{Xid: req.Xid, Zxid: s.lastZxid, Stat: n.stat(), ACL: acl})
}

// redactDigest is id.replaceAll(":.*", ":x"): from each colon to the end
// of its line ('.' matches no line terminator) becomes ":x".
func redactDigest(id string) string {
	var sb strings.Builder
	for {
		i := strings.IndexByte(id, ':')
		if i < 0 {
			sb.WriteString(id)
			return sb.String()
		}
		sb.WriteString(id[:i])
		sb.WriteString(":x")
		rest := id[i+1:]
		end := strings.IndexFunc(rest, isJavaLineTerminator)
		if end < 0 {
			return sb.String()
		}
		id = rest[end:]
	}
}

// isJavaLineTerminator is what java.util.regex's '.' does not match.
func isJavaLineTerminator(r rune) bool {
	switch r {
	case '\n', '\r', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// eventVisible reports whether a watch event on a node with ACL id may go
// to conn: the server that Debian ships (3.8.0 with the fix of
// CVE-2024-23944, ZOOKEEPER-4799) checks READ with the watcher's ids when
// the event fires (NIOServerCnxn.process), and drops the event otherwise.
// The watch is used up either way: it left the table before.
func (s *Server) eventVisible(conn ConnID, id aclID) bool {
	if s.acls.world[id]&zk.PermRead != 0 {
		return true
	}
	var ids []authID
	if a := s.auth[conn]; a != nil {
		ids = a.ids
	}
	return checkACL(s.acls.lists[id], zk.PermRead, ids)
}

// validateSetACL checks a setACL in PrepRequestProcessor's order: the
// path, the new ACL (fixupACL), the node, ADMIN on it, then the expected
// aversion.
func (s *Server) validateSetACL(req *Request, o *overlay) (write, Code) {
	if validateServerPath(req.Path, false) != nil {
		return write{}, CodeBadArguments
	}
	acl, ok := s.fixupACL(req.ACL)
	if !ok {
		return write{}, CodeInvalidACL
	}
	n := s.record(o, req.Path)
	if !n.exists {
		return write{}, CodeNoNode
	}
	if !s.allowed(n.acl, zk.PermAdmin) {
		return write{}, CodeNoAuth
	}
	if req.Version != -1 && req.Version != n.node.aversion {
		return write{}, CodeBadVersion
	}
	id := s.acls.intern(acl)
	n.acl = id
	return write{path: req.Path, acl: id}, CodeOK
}

// setACL applies a validated setACL: the node takes the ACL and its
// aversion goes up by one (from -1 to 0 on /zookeeper/config, whose
// aversion the server sets to -1). Nothing else in its Stat changes, and no
// watch fires (DataTree.setACL).
func (s *Server) setACL(w write, t *txn) Response {
	n := s.nodes[w.path]
	s.assertPermitted(w.path, n, zk.PermAdmin)
	n.acl = w.acl
	n.aversion++
	t.touched = append(t.touched, touchedNode{path: w.path, node: n})
	return Response{Stat: n.stat()}
}
