package sim

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
	"unicode/utf8"
)

// javaSet is a set of strings that lists its members in the order a
// java.util.HashSet<String> iterates them.
//
// ZooKeeper keeps a znode's children in a HashSet<String> (DataNode.children,
// created as new HashSet<>(8)) and a session's ephemerals in another
// (DataTree.ephemerals, new HashSet<>()), and it hands their iteration order
// straight to clients: getChildren returns the children in that order, and a
// closing session deletes its ephemerals (firing their watches) in that
// order. A recipe that forgets to sort the children therefore sees the same
// order here as on a real server.
//
// It is java.util.HashMap's table of Java 8 and later itself: hash is
// h ^ (h >>> 16) of String.hashCode, the bucket is hash & (capacity-1), a
// bucket is a chain its insertions go to the end of, the table doubles
// when size exceeds 3/4 of capacity and never shrinks, and a resize
// splits each bucket in two without reordering it. The order is the
// buckets' in turn, each chain's from its head. It does not emulate tree
// bins, which Java builds only when one bucket of a table of 64 or more
// holds eight names.
//
// Keeping the table, rather than a Go map beside an order sorted by
// bucket and insertion, makes an insertion and a removal a walk of one
// short chain, with the name's hash the create brought (addHashed): the
// map's assignment and deletion, and the sorted order's binary searches
// and moves, were a twentieth of an exploration. Listing the order is a
// walk of the table, with nothing to sort.
type javaSet struct {
	// heads is the table: for each bucket, where its chain's first entry
	// is in entries, plus one (0 for an empty bucket). Its length is the
	// capacity, 0 until the first insertion.
	heads   []int32
	entries []javaEntry
	free    int32  // the first free slot of entries plus one, 0 for none
	size    int    // members
	initial uint32 // the capacity the Java constructor was given
	// inserted counts the insertions so far, to number each member: the
	// numbers are the insertion order within each bucket, which a
	// snapshot keeps (bySeq).
	inserted uint32

	// last is the name the last insertion or removal named, and lastIn
	// whether it is a member: has answers for it without hashing it. The
	// invariants' check of a transaction asks about just the names it
	// added or removed, each a lock node's name of some fifty bytes.
	// lastHash is its hash: CheckInvariants' look at what the table
	// holds for it (lastAgrees) needs no hashing.
	last     string
	lastIn   bool
	lastHash uint32

	// firstHeads is storage for the table of the set's first insertion,
	// made with the set (newJavaSet), nil once taken.
	firstHeads []int32
}

// javaSetBlock is a new set with the storage of its first table and of
// its first few members: allocated apart, the three were some 3% of the
// allocations of an exploration, most of whose sets (a lock's children,
// a session's ephemerals) stay small.
type javaSetBlock struct {
	set     javaSet
	heads   [16]int32
	entries [2]javaEntry
}

// javaEntry is a member in its bucket's chain, or a free slot (seq 0).
type javaEntry struct {
	name string
	hash uint32 // javaSpreadHash of the name, computed once
	seq  uint32 // insertion number, from 1; 0 for a free slot
	next int32  // the chain's next entry plus one, 0 at its end; a free slot's next free slot
}

func newJavaSet(initialCapacity uint32) *javaSet {
	b := new(javaSetBlock)
	s := &b.set
	s.initial = initialCapacity
	if int(initialCapacity) <= len(b.heads) {
		s.firstHeads = b.heads[:initialCapacity:initialCapacity]
	}
	s.entries = b.entries[:0]
	return s
}

func (s *javaSet) len() int { return s.size }

// capacity is the Java table's length, 0 until the first insertion.
func (s *javaSet) capacity() uint32 { return uint32(len(s.heads)) }

// find returns where name, whose javaSpreadHash is hash, is in entries,
// or -1.
func (s *javaSet) find(name string, hash uint32) int32 {
	if len(s.heads) == 0 {
		return -1
	}
	for i := s.heads[hash&uint32(len(s.heads)-1)]; i != 0; i = s.entries[i-1].next {
		if e := &s.entries[i-1]; e.hash == hash && e.name == name {
			return i - 1
		}
	}
	return -1
}

// lastAgrees reports whether what has knows of the last name inserted or
// removed is what the table holds: CheckInvariants asserts it.
func (s *javaSet) lastAgrees() bool {
	return (s.find(s.last, s.lastHash) >= 0) == s.lastIn
}

// lastHashAgrees reports whether lastHash is the last name's hash, which
// lastAgrees trusts: the servers that check every step assert it.
func (s *javaSet) lastHashAgrees() bool { return s.lastHash == javaSpreadHash(s.last) }

func (s *javaSet) has(name string) bool {
	if name == s.last {
		return s.lastIn
	}
	return s.find(name, javaSpreadHash(name)) >= 0
}

// hasHashed is has for a name whose javaSpreadHash the caller holds.
// A wrong hash finds nothing: a check that asks with one fails.
func (s *javaSet) hasHashed(name string, hash uint32) bool {
	if name == s.last {
		return s.lastIn
	}
	return s.find(name, hash) >= 0
}

// add inserts name; it reports false if name was already present, which
// leaves its place in the order unchanged, as in Java.
func (s *javaSet) add(name string) bool {
	hash := javaSpreadHash(name)
	if s.find(name, hash) >= 0 {
		return false
	}
	s.addHashed(name, hash)
	return true
}

// addHashed is add for a name not in the set whose javaSpreadHash the
// caller has: a create's validation hashes its node's name once, and the
// ensemble's members apply the create with that hash (a long name's hash
// was a fortieth of an exploration on three servers, hashed by each).
//
// It does not look the name up first: a create adds a node's name to its
// parent's children and its path to its owner's ephemerals only when the
// node does not exist, so neither set has it (checkNode asserts both after
// every transaction). The walk to its bucket's end passes every name of
// the bucket, and finding it there panics, a simulator bug.
func (s *javaSet) addHashed(name string, hash uint32) {
	if len(s.heads) == 0 {
		if s.firstHeads != nil {
			s.heads, s.firstHeads = s.firstHeads, nil // zero: nothing wrote it
		} else {
			s.heads = make([]int32, s.initial)
		}
	}
	s.inserted++
	slot := s.newSlot(javaEntry{name: name, hash: hash, seq: s.inserted})
	s.link(hash, slot)
	s.size++
	s.last, s.lastIn, s.lastHash = name, true, hash
	// HashMap.putVal: if (++size > threshold) resize(); threshold = 0.75*capacity.
	if uint64(s.size) > uint64(len(s.heads))*3/4 {
		s.resize()
	}
}

// newSlot puts e in a free slot of entries, or a new one, and returns
// the slot's number plus one.
func (s *javaSet) newSlot(e javaEntry) int32 {
	if s.free == 0 {
		s.entries = append(s.entries, e)
		return int32(len(s.entries))
	}
	slot := s.free
	s.free = s.entries[slot-1].next
	s.entries[slot-1] = e
	return slot
}

// link puts the entry at slot (plus one) at the end of its bucket's
// chain; it panics if the chain holds its name already.
func (s *javaSet) link(hash uint32, slot int32) {
	e := &s.entries[slot-1]
	at := &s.heads[hash&uint32(len(s.heads)-1)]
	for *at != 0 {
		o := &s.entries[*at-1]
		if o.hash == hash && o.name == e.name {
			panic("sim: invariant: " + e.name + " added to a set that holds it already")
		}
		at = &o.next
	}
	*at = slot
}

// resize doubles the table as HashMap.resize does: each bucket's chain
// splits into the one that stays at its index and the one that moves
// capacity up, each keeping its order.
func (s *javaSet) resize() {
	old := s.heads
	s.heads = make([]int32, 2*len(old))
	bit := uint32(len(old))
	for j, head := range old {
		lo, hi := &s.heads[j], &s.heads[j+len(old)]
		for i := head; i != 0; {
			e := &s.entries[i-1]
			next := e.next
			e.next = 0
			if e.hash&bit == 0 {
				*lo, lo = i, &e.next
			} else {
				*hi, hi = i, &e.next
			}
			i = next
		}
	}
}

// remove takes name out; it reports false if it was not a member.
func (s *javaSet) remove(name string) bool {
	return s.removeHashed(name, javaSpreadHash(name))
}

// removeHashed is remove for a name whose javaSpreadHash the caller
// holds: a node's delete has its name's and its path's from its create
// (znode.hashes). A wrong hash finds nothing, and the delete panics.
func (s *javaSet) removeHashed(name string, hash uint32) bool {
	if len(s.heads) == 0 {
		return false
	}
	at := &s.heads[hash&uint32(len(s.heads)-1)]
	for *at != 0 {
		i := *at
		e := &s.entries[i-1]
		if e.hash == hash && e.name == name {
			*at = e.next
			// The slot keeps no name alive that left the set.
			*e = javaEntry{next: s.free}
			s.free = i
			s.size--
			s.last, s.lastIn, s.lastHash = name, false, hash
			return true
		}
		at = &e.next
	}
	return false
}

// all yields each member and the hash the set holds for it, in Java's
// iteration order. The loop must not change the set.
func (s *javaSet) all() iter.Seq2[string, uint32] {
	return func(yield func(string, uint32) bool) {
		for _, head := range s.heads {
			for i := head; i != 0; i = s.entries[i-1].next {
				if e := &s.entries[i-1]; !yield(e.name, e.hash) {
					return
				}
			}
		}
	}
}

// checkTable reports a table that breaks its own rules: an entry in a
// chain not its hash's bucket's, or chains that hold other than size
// members (which len answers, and CheckInvariants counts by).
func (s *javaSet) checkTable() error {
	chained := 0
	for j, head := range s.heads {
		for i := head; i != 0; i = s.entries[i-1].next {
			if e := &s.entries[i-1]; e.seq == 0 || int(e.hash&uint32(len(s.heads)-1)) != j {
				return fmt.Errorf("sim: invariant: a set holds %q in bucket %d, not its hash's", e.name, j)
			}
			chained++
		}
	}
	if chained != s.size {
		return fmt.Errorf("sim: invariant: a set chains %d members, counts %d", chained, s.size)
	}
	return nil
}

// ordered returns the members in Java's iteration order, in a slice the
// caller owns.
func (s *javaSet) ordered() []string {
	return s.appendOrdered(make([]string, 0, s.size))
}

// appendOrdered appends the members to names in Java's iteration order.
func (s *javaSet) appendOrdered(names []string) []string {
	for _, head := range s.heads {
		for i := head; i != 0; i = s.entries[i-1].next {
			names = append(names, s.entries[i-1].name)
		}
	}
	return names
}

// bySeq returns the members in insertion order, with their insertion
// numbers: what a snapshot keeps of a set's order, with its capacity.
func (s *javaSet) bySeq() (names []string, seqs []uint32) {
	members := make([]javaEntry, 0, s.size)
	for _, e := range s.entries {
		if e.seq != 0 {
			members = append(members, e)
		}
	}
	slices.SortFunc(members, func(a, b javaEntry) int { return cmp.Compare(a.seq, b.seq) })
	for _, e := range members {
		names = append(names, e.name)
		seqs = append(seqs, e.seq)
	}
	return names, seqs
}

// restoredJavaSet is the set a snapshot kept (bySeq): each name, with
// its insertion number, goes to the end of its bucket in insertion
// order, which is where the set had it.
func restoredJavaSet(names []string, seqs []uint32, capacity, initial, inserted uint32) *javaSet {
	s := &javaSet{initial: initial, inserted: inserted, size: len(names)}
	if capacity != 0 {
		s.heads = make([]int32, capacity)
	}
	s.entries = make([]javaEntry, 0, len(names))
	for i, name := range names {
		hash := javaSpreadHash(name)
		s.entries = append(s.entries, javaEntry{name: name, hash: hash, seq: seqs[i]})
		s.link(hash, int32(len(s.entries)))
	}
	return s
}

// javaSpreadHash is HashMap.hash(key) for a String key: String.hashCode over
// UTF-16 code units, with the high half folded into the low half.
func javaSpreadHash(s string) uint32 {
	var h uint32
	i := 0
	// Eight ASCII characters at a time: a lock node's name and path are
	// some fifty and ninety bytes, and a create hashes both, which a byte
	// at a time was a fiftieth of an exploration.
	for ; i+8 <= len(s); i += 8 {
		x := load64(s, i)
		if x&0x8080808080808080 != 0 {
			break
		}
		h = h*pow31x8 + javaHash8(x)
	}
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			h = 31*h + uint32(c)
			i++
			continue
		}
		r, width := utf8.DecodeRuneInString(s[i:])
		i += width
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + uint32(0xD800+(r>>10))
			h = 31*h + uint32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + uint32(r)
	}
	return h ^ (h >> 16)
}

// pow31x8 is 31^8, modulo 2^32 as Java's int arithmetic wraps.
const pow31x8 = 31 * 31 * 31 * 31 * 31 * 31 * 31 * 31 % (1 << 32)

// javaHash8 is String.hashCode of eight ASCII characters, x's bytes
// from the lowest: c0*31^7 + c1*31^6 + ... + c7, modulo 2^32. It folds
// neighbours together in lanes too wide to overflow: the byte pairs into
// c0*31+c1 and so on in 16-bit lanes (at most 255*32), those pairs into
// 32-bit lanes (at most 8160*962), and the two halves last.
func javaHash8(x uint64) uint32 {
	const bytes, halves = 0x00ff00ff00ff00ff, 0x0000ffff0000ffff
	pairs := (x&bytes)*31 + (x>>8)&bytes
	quads := (pairs&halves)*(31*31) + (pairs>>16)&halves
	return uint32(quads)*(31*31*31*31) + uint32(quads>>32)
}

// clonedOrder lists the members in the order of a clone of the set, as
// HashSet.clone makes it: a fresh table sized for the members
// (tableSizeFor(size/0.75 + 1)) filled in this set's iteration order. A
// closing session's ephemerals are deleted in this order (measured on
// ZooKeeper 3.8.0).
func (s *javaSet) clonedOrder() []string {
	mask := uint32(javaCopyCapacity(s.size) - 1)
	names, buckets := make([]string, 0, s.size), make([]uint32, 0, s.size)
	for name, hash := range s.all() { // the hashes the set holds: none hashed again
		names = append(names, name)
		buckets = append(buckets, hash&mask)
	}
	index := make([]int, len(names))
	for i := range index {
		index[i] = i
	}
	slices.SortStableFunc(index, func(a, b int) int { return cmp.Compare(buckets[a], buckets[b]) })
	out := make([]string, len(names))
	for i, j := range index {
		out[i] = names[j]
	}
	return out
}

// javaCopyCapacity is the table size of a Java HashMap (or HashSet) made
// as a copy of one of size entries, new HashMap<>(m) or clone():
// tableSizeFor(size/0.75 + 1).
func javaCopyCapacity(size int) int {
	want := int(float32(size)/0.75 + 1)
	capacity := 1
	for capacity < want {
		capacity *= 2
	}
	return capacity
}
