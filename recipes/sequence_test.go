package recipes

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// parseSequence reads a suffix exactly as strconv.ParseInt(s, 10, 64)
// does: the same number, and an error for the same strings.
func TestParseSequenceIsParseInt(t *testing.T) {
	for _, s := range []string{
		"0000000000", "0000000001", "2147483647", "9999999999",
		"-000000001", "-000000000", "+000000001", "-2147483648",
		"+", "-", "", "00000000a1", "0000_00001", " 000000001", "++00000001",
		"-+00000001", "00000000:0", "0000000/00", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"99999999999999999999",
	} {
		checkParseSequence(t, s)
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("0123456789+-_ a:/")), 0, 22, -1).Draw(t, "s")
		checkParseSequence(t, s)
	})
	// A sequence's ten digits, and the same with one byte changed to any
	// other: tenDigits reads eight at once.
	for at := range sequenceDigits {
		for b := range 256 {
			s := []byte("1234567890")
			s[at] = byte(b)
			checkParseSequence(t, string(s))
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		checkParseSequence(t, fmt.Sprintf("%010d", rapid.Int64Range(0, 9_999_999_999).Draw(t, "n")))
	})
}

func checkParseSequence(t interface{ Fatalf(string, ...any) }, s string) {
	want, err := strconv.ParseInt(s, 10, 64)
	got, ok := parseSequence(s)
	if ok != (err == nil) || (ok && got != want) {
		t.Fatalf("parseSequence(%q) = %d, %v; strconv.ParseInt gives %d, %v", s, got, ok, want, err)
	}
}

// A node's name within its queue's directory is its path's last element,
// as path.Base gives it, whether or not the node is a child of the
// directory.
func TestNodeNameInItsDirIsItsBase(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		elems := []string{"", "/", "a", "lock", "_c_0f-lock-0000000001", "x/y"}
		dir := "/" + rapid.SampledFrom(elems).Draw(t, "dir")
		p := rapid.SampledFrom([]string{dir + "/", dir, "/other/", "/"}).Draw(t, "parent") + rapid.SampledFrom(elems).Draw(t, "name")
		n := lockNode{path: p}
		if got, want := n.nameIn(dir), path.Base(p); got != want {
			t.Fatalf("lockNode{%q}.nameIn(%q) = %q, path.Base %q", p, dir, got, want)
		}
	})
}

// sortChildren's insertion sort of a short listing orders the children as
// slices.SortFunc does a listing of any length, into a reused array.
func TestSortChildrenIsSortFunc(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seqs := rapid.SliceOfN(rapid.IntRange(0, 20), 0, 2*insertionSortMax).Draw(t, "seqs")
		names := make([]string, len(seqs))
		for i, s := range seqs {
			prefix := rapid.SampledFrom([]string{"lock-", "read-", "write-", "x"}).Draw(t, "prefix")
			names[i] = fmt.Sprintf("%s%010d", prefix, s)
		}
		var want []child
		for _, n := range names {
			if c, ok := parseChild(n); ok {
				want = append(want, c)
			}
		}
		slices.SortFunc(want, compareChildren)
		buf := make([]child, rapid.IntRange(0, 4).Draw(t, "buffered"))
		if got := sortChildren(buf, names); !slices.Equal(got, want) {
			t.Fatalf("sortChildren(%q) = %v, want %v", names, got, want)
		}
	})
}
