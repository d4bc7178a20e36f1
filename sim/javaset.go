package sim

import (
	"cmp"
	"slices"
	"unicode/utf8"
)

// javaSet is a set of strings that remembers enough to list its members in
// the order a java.util.HashSet<String> iterates them.
//
// ZooKeeper keeps a znode's children in a HashSet<String> (DataNode.children,
// created as new HashSet<>(8)) and a session's ephemerals in another
// (DataTree.ephemerals, new HashSet<>()), and it hands their iteration order
// straight to clients: getChildren returns the children in that order, and a
// closing session deletes its ephemerals (firing their watches) in that
// order. A recipe that forgets to sort the children therefore sees the same
// order here as on a real server.
//
// The emulation follows java.util.HashMap of Java 8 and later: hash is
// h ^ (h >>> 16) of String.hashCode, the bucket is hash & (capacity-1), the
// table doubles when size exceeds 3/4 of capacity and never shrinks, and a
// bucket keeps insertion order (a resize splits a bucket without reordering
// it). It does not emulate tree bins, which Java builds only when one bucket
// of a table of 64 or more holds eight names.
type javaSet struct {
	members  map[string]javaMember
	capacity uint32 // the Java table length; 0 until the first insertion
	initial  uint32 // the capacity the Java constructor was given
	inserted uint32 // insertions so far

	// While orderValid, order is the iteration order and entries the same
	// members with their places, sorted alike; insertions and removals
	// keep them up to date, a resize (which moves every bucket) drops them.
	order      []string
	entries    []javaEntry
	orderValid bool

	// last is the name the last insertion or removal named, and lastIn
	// whether it is a member: has answers for it without hashing it. The
	// invariants' check of a transaction asks about just the names it
	// added or removed, each a lock node's name of some fifty bytes.
	// While lastIn, lastMember is what members holds for it: removing
	// the name just added (a node created and deleted again) needs no
	// lookup before the map's delete.
	last       string
	lastIn     bool
	lastMember javaMember
}

// javaEntry is a member with its place: bucket, then insertion.
type javaEntry struct {
	name   string
	bucket uint32
	seq    uint32
}

// javaMember is what a javaSet remembers of a name.
type javaMember struct {
	seq  uint32 // insertion number, for order within a bucket
	hash uint32 // javaSpreadHash of the name, computed once
}

func newJavaSet(initialCapacity uint32) *javaSet {
	return &javaSet{members: make(map[string]javaMember), initial: initialCapacity}
}

func (s *javaSet) len() int { return len(s.members) }

// lastAgrees reports whether what has and remove know of the last name
// inserted or removed is what the set holds: CheckInvariants asserts it.
func (s *javaSet) lastAgrees() bool {
	m, ok := s.members[s.last]
	return ok == s.lastIn && (!ok || m == s.lastMember)
}

func (s *javaSet) has(name string) bool {
	if name == s.last {
		return s.lastIn
	}
	_, ok := s.members[name]
	return ok
}

// add inserts name; it reports false if name was already present, which
// leaves its place in the order unchanged, as in Java.
func (s *javaSet) add(name string) bool {
	if _, ok := s.members[name]; ok {
		return false
	}
	s.addHashed(name, javaSpreadHash(name))
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
// every transaction), and the map's size says whether the insertion was
// new; one that was not panics, a simulator bug.
func (s *javaSet) addHashed(name string, hash uint32) {
	size := len(s.members)
	m := javaMember{seq: s.inserted + 1, hash: hash}
	s.members[name] = m
	if len(s.members) == size {
		panic("sim: invariant: " + name + " added to a set that holds it already")
	}
	capacityBefore := s.capacity
	if s.capacity == 0 {
		s.capacity = s.initial
	}
	s.inserted++
	s.last, s.lastIn, s.lastMember = name, true, m
	// HashMap.putVal: if (++size > threshold) resize(); threshold = 0.75*capacity.
	if uint64(len(s.members)) > uint64(s.capacity)*3/4 {
		s.capacity *= 2
	}
	if !s.orderValid {
		return
	}
	if s.capacity != capacityBefore {
		s.orderValid = false
		return
	}
	// The newest insertion comes last in its bucket: after every entry of
	// a bucket not after its own.
	e := javaEntry{name, m.hash & (s.capacity - 1), m.seq}
	i, _ := slices.BinarySearchFunc(s.entries, uint64(e.bucket)+1, func(o javaEntry, bucket uint64) int {
		return cmp.Compare(uint64(o.bucket), bucket)
	})
	s.entries = slices.Insert(s.entries, i, e)
	s.order = slices.Insert(s.order, i, name)
}

func (s *javaSet) remove(name string) bool {
	m := s.lastMember
	if !s.lastIn || name != s.last {
		var ok bool
		if m, ok = s.members[name]; !ok {
			return false
		}
	}
	delete(s.members, name)
	s.last, s.lastIn = name, false
	if !s.orderValid {
		return true
	}
	i, found := slices.BinarySearchFunc(s.entries, javaEntry{bucket: m.hash & (s.capacity - 1), seq: m.seq}, compareJavaEntries)
	if !found || s.entries[i].name != name {
		panic("sim: javaSet order lost a member: " + name)
	}
	s.entries = slices.Delete(s.entries, i, i+1)
	s.order = slices.Delete(s.order, i, i+1)
	return true
}

// compareJavaEntries orders entries as Java iterates them: by bucket, and
// in a bucket by insertion.
func compareJavaEntries(a, b javaEntry) int {
	if a.bucket != b.bucket {
		return cmp.Compare(a.bucket, b.bucket)
	}
	return cmp.Compare(a.seq, b.seq)
}

// ordered returns the members in Java's iteration order, in a slice the
// caller owns.
func (s *javaSet) ordered() []string {
	if !s.orderValid {
		s.order = s.computeOrder()
		s.orderValid = true
	}
	names := make([]string, len(s.order))
	copy(names, s.order)
	return names
}

// computeOrder computes the iteration order, and s.entries with it, into
// the backing array of s.order, which no caller holds (ordered hands out
// copies).
func (s *javaSet) computeOrder() []string {
	clear(s.entries) // keep no names alive that left the set
	entries := s.entries[:0]
	mask := s.capacity - 1
	for name, m := range s.members {
		entries = append(entries, javaEntry{name, m.hash & mask, m.seq})
	}
	slices.SortFunc(entries, compareJavaEntries)
	clear(s.order)
	names := s.order[:0]
	for _, e := range entries {
		names = append(names, e.name)
	}
	s.entries = entries
	return names
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
	names := s.ordered()
	mask := uint32(javaCopyCapacity(len(names)) - 1)
	buckets := make([]uint32, len(names))
	for i, name := range names {
		buckets[i] = javaSpreadHash(name) & mask
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
