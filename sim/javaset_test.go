package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// The expected orders are what a real ZooKeeper 3.8.0 (Java 17) returned
// from getChildren, and the order in which it deleted a closing session's
// ephemerals (/tmp/zkprobe, probes q10 and q11b).
func TestJavaSetOrder(t *testing.T) {
	q := func(s string) []string { return strings.Fields(s) }
	type step struct {
		add, remove []string
		want        string // space-separated, "" to skip the check
	}
	seq := func(prefix string, from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("%s%010d", prefix, i))
		}
		return out
	}
	smallNames := func(k int) []string {
		var out []string
		for i := range k {
			out = append(out, fmt.Sprintf("n%d-%c", i, 'a'+rune(i*7%26)))
		}
		return out
	}
	kNames := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("k%d", i))
		}
		return out
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"q10 /small6: no resize yet, one per bucket", []step{{add: smallNames(6), want: "n0-a n1-h n2-o n3-v n4-c n5-j"}}},
		{"q10 /small7: resized from 8 to 16", []step{{add: smallNames(7), want: "n0-a n2-o n5-j n1-h n3-v n4-c n6-q"}}},
		{"q10 /small8", []step{{add: smallNames(8), want: "n0-a n2-o n5-j n7-x n1-h n3-v n4-c n6-q"}}},
		{"q10 /o: sequential and odd names, deletions, re-insertions", []step{
			{add: append(seq("lock-", 0, 20), q("b a zz _c_0123-lock- node x lock A Zz é 日本")...),
				want: "zz A _c_0123-lock- lock-0000000009 lock-0000000008 lock-0000000007 lock-0000000006 lock-0000000001 lock-0000000000 lock lock-0000000005 lock-0000000004 lock-0000000003 lock-0000000002 Zz a b é 日本 lock-0000000019 node lock-0000000018 lock-0000000017 lock-0000000012 x lock-0000000011 lock-0000000010 lock-0000000016 lock-0000000015 lock-0000000014 lock-0000000013"},
			{remove: q("lock-0000000003 a lock-0000000010 zz lock-0000000000"),
				want: "A _c_0123-lock- lock-0000000009 lock-0000000008 lock-0000000007 lock-0000000006 lock-0000000001 lock lock-0000000005 lock-0000000004 lock-0000000002 Zz b é 日本 lock-0000000019 node lock-0000000018 lock-0000000017 lock-0000000012 x lock-0000000011 lock-0000000016 lock-0000000015 lock-0000000014 lock-0000000013"},
			{add: q("a zz lock-0000000003"),
				want: "zz A _c_0123-lock- lock-0000000009 lock-0000000008 lock-0000000007 lock-0000000006 lock-0000000001 lock lock-0000000005 lock-0000000004 lock-0000000003 lock-0000000002 Zz a b é 日本 lock-0000000019 node lock-0000000018 lock-0000000017 lock-0000000012 x lock-0000000011 lock-0000000016 lock-0000000015 lock-0000000014 lock-0000000013"},
		}},
		{"q10 /reset: the table never shrinks", []step{
			{add: kNames(40)}, {remove: kNames(40)},
			{add: q("k1 k9 k17 k25 k33 a b"), want: "k33 k17 a b k1 k9 k25"},
		}},
		{"q10 root", []step{{add: q("zookeeper zprobe o small1 small2 small3 small4 small5 small6 small7 small8 big reset"),
			want: "small2 small1 big zookeeper small6 small5 small4 small3 o zprobe reset small8 small7"}}},
		{"q10 adding a member twice keeps its place", []step{{add: q("b a b"), want: "a b"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newJavaSet(8)
			for i, st := range tc.steps {
				for _, n := range st.add {
					s.add(n)
				}
				for _, n := range st.remove {
					if !s.remove(n) {
						t.Fatalf("step %d: remove %s: not a member", i, n)
					}
				}
				if st.want == "" {
					continue
				}
				if got := strings.Join(s.ordered(), " "); got != st.want {
					t.Fatalf("step %d:\n got %s\nwant %s", i, got, st.want)
				}
			}
		})
	}
}

// A session's ephemerals are a HashSet of default capacity 16; a closing
// session deletes them in the order of the set's clone, which is sized
// for its members and so differs from the live set once that was resized
// (measured on 3.8.0, probe q11b round 1).
func TestJavaSetClonedOrder(t *testing.T) {
	s := newJavaSet(16)
	for _, p := range strings.Fields("/k1/e0 /k1/e1 /k1/sub/x2 /k1/e3 /k1/e4") {
		s.add(p)
	}
	if got := strings.Join(s.ordered(), " "); got != "/k1/e3 /k1/e4 /k1/e1 /k1/e0 /k1/sub/x2" {
		t.Fatalf("live order %s", got)
	}
	if got := strings.Join(s.clonedOrder(), " "); got != "/k1/e1 /k1/e0 /k1/sub/x2 /k1/e3 /k1/e4" {
		t.Fatalf("clone order %s", got)
	}
	if got := newJavaSet(16).clonedOrder(); len(got) != 0 {
		t.Fatalf("empty clone %q", got)
	}
}

// javaSpreadHash is String.hashCode, over UTF-16 code units, spread by
// HashMap.hash. The hash codes are Java's ("a".hashCode() == 97,
// "hello".hashCode() == 99162322; a surrogate pair hashes as two units).
func TestJavaSpreadHash(t *testing.T) {
	cases := []struct {
		s    string
		code uint32
	}{
		{"", 0}, {"a", 97}, {"hello", 99162322}, {"é", 233}, {"\U0001D11E", 0xD834*31 + 0xDD1E},
	}
	for _, tc := range cases {
		if got, want := javaSpreadHash(tc.s), tc.code^tc.code>>16; got != want {
			t.Errorf("%q: %#x, want %#x", tc.s, got, want)
		}
		if got := refJavaHash(tc.s); got != tc.code^tc.code>>16 {
			t.Errorf("reference hash of %q: %#x", tc.s, got)
		}
	}
}

// javaSpreadHash hashes eight ASCII characters at a time: it is held to
// the reference, a UTF-16 unit at a time, on strings of every length up
// to three words of every byte at every place, and of characters drawn
// from ASCII, two-byte and four-byte runes.
func TestJavaSpreadHashWords(t *testing.T) {
	check := func(s string) {
		if got, want := javaSpreadHash(s), refJavaHash(s); got != want {
			t.Fatalf("%q: %#x, want %#x", s, got, want)
		}
	}
	for n := range 25 {
		for at := range n {
			for b := range 128 {
				s := []byte(strings.Repeat("~", n))
				s[at] = byte(b)
				check(string(s))
			}
			check(strings.Repeat("~", at) + "é" + strings.Repeat("~", n-at))
			check(strings.Repeat("\x7f", at) + "\U0001D11E" + strings.Repeat("\x00", n-at))
		}
	}
	runes := []rune{0, 'a', '-', '~', 0x7f, 'é', '日', 0x1D11E}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50_000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteRune(runes[r.IntN(len(runes))])
		}
		check(b.String())
	}
}

// The table's order is the order computed afresh from the members'
// buckets and insertion numbers, kept aside by the test, after every step
// of random sequences (names from a small alphabet, so that buckets
// collide, and enough of them to resize the table); and a set restored
// from what a snapshot keeps of it (bySeq) lists them alike.
func TestJavaSetIncrementalOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := newJavaSet(uint32(rapid.SampledFrom([]int{2, 8, 16}).Draw(t, "initial")))
		seqs := map[string]uint32{} // the members and their insertion numbers
		inserted := uint32(0)
		name := rapid.StringMatching(`[a-d]{1,3}`)
		for i := range rapid.IntRange(1, 200).Draw(t, "steps") {
			if rapid.IntRange(0, 2).Draw(t, "op") == 0 && s.len() > 0 {
				members := slices.Sorted(maps.Keys(seqs))
				victim := rapid.SampledFrom(members).Draw(t, "remove")
				if !s.remove(victim) {
					t.Fatalf("step %d: remove(%q) found no member", i, victim)
				}
				delete(seqs, victim)
			} else if n := name.Draw(t, "add"); s.add(n) {
				inserted++
				seqs[n] = inserted
			}
			if s.len() != len(seqs) {
				t.Fatalf("step %d: %d members, want %d", i, s.len(), len(seqs))
			}
			if err := s.checkTable(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			// has answers for the name last changed without the table: it
			// answers as the table does, for that name and any other.
			if !s.lastAgrees() || !s.lastHashAgrees() {
				t.Fatalf("step %d: has(%q) answers %v, not the set's", i, s.last, s.lastIn)
			}
			asked := name.Draw(t, "has")
			if _, in := seqs[asked]; s.has(asked) != in {
				t.Fatalf("step %d: has(%q) = %v, want %v", i, asked, !in, in)
			}
			if rapid.Bool().Draw(t, "look") || i%17 == 0 {
				got := s.ordered()
				want := slices.Collect(maps.Keys(seqs))
				mask := s.capacity() - 1
				slices.SortFunc(want, func(a, b string) int {
					return cmp.Or(cmp.Compare(javaSpreadHash(a)&mask, javaSpreadHash(b)&mask), cmp.Compare(seqs[a], seqs[b]))
				})
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: order %v, want %v", i, got, want)
				}
				names, bySeq := s.bySeq()
				restored := restoredJavaSet(names, bySeq, s.capacity(), s.initial, s.inserted)
				if again := restored.ordered(); !slices.Equal(again, want) {
					t.Fatalf("step %d: restored order %v, want %v", i, again, want)
				}
			}
		}
	})
}
