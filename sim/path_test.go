package sim

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPathValidators compares the server's path rules (PathUtils
// validatePath, applied by the server to create, setData and check) with
// go-zookeeper's laxer client-side check (util.go validatePath), which
// decides whether a request is sent at all. The cases are probe q6 and
// q10, measured on ZooKeeper 3.8.0 with go-zookeeper v1.0.4: a path the
// client refuses fails with "zk: invalid path"; one the server refuses
// with "invalid arguments".
func TestPathValidators(t *testing.T) {
	cases := []struct {
		path       string
		sequential bool
		client     bool // go-zookeeper sends it
		server     bool // the server accepts it
	}{
		{"/", false, true, true},
		{"/a", false, true, true},
		{"/a.b", false, true, true},
		{"/a/.b", false, true, true},
		{"/é", false, true, true},
		{"/日本", false, true, true},
		{"/a/", false, false, false},
		{"/a/", true, true, true}, // a sequential prefix: "/a/0000000001"
		{"/a/./b", false, false, false},
		{"/a/../b", false, false, false},
		{"/.", false, false, false},
		{"/..", false, false, false},
		{"/a/.", false, false, false},
		{"/a//b", false, false, false},
		{"a", false, false, false},
		{"", false, false, false},
		{"/a\x00b", false, false, false},
		{"/a\x01", false, false, false},
		{"/a\u007f", false, false, false},
		{"/a\u0085", false, false, false},
		{"/zookeeper/../x", false, false, false},
		// Outside the Basic Multilingual Plane: a surrogate pair in Java,
		// which the server refuses and the client lets through (q10).
		{"/\U0001D11E", false, true, false},
		// go-zookeeper looks one byte short after a leading "." (probe3).
		{"/./x", false, true, false},
		{"/../x", false, false, false},
		{"/...", false, true, true},
		{"/a..", false, true, true},
		// Longer than a word, which the fast paths check eight bytes at a
		// time.
		{"/fair-lock/_c_9f8e7d6c-5b4a-lock-0000000012", false, true, true},
		{"/abcdefgh/./ijklmnop", false, false, false},
		{"/abcdefgh/../ijklmnop", false, false, false},
		{"/abcdefgh//ijklmnop", false, false, false},
		{"/abcdefghijklmnop\x01q", false, false, false},
		{"/abcdefghijklmnop\x7fq", false, false, false},
		{"/abcdefghijklmnop\u0085", false, false, false},
		{"/abcdefghijklmnopé", false, true, true},
		{"/abcdefghijklmnop/", false, false, false},
		{"/abcdefghijklmnop/", true, true, true},
		{"/abcdefgh-ijklmnop.qrstuvwx ", false, true, true},
	}
	for _, tc := range cases {
		if got := validateClientPath(tc.path, tc.sequential); got != tc.client {
			t.Errorf("client %q seq=%v: sent=%v, want %v", tc.path, tc.sequential, got, tc.client)
		}
		if got := validateServerPath(tc.path, tc.sequential) == nil; got != tc.server {
			t.Errorf("server %q seq=%v: accepted=%v, want %v", tc.path, tc.sequential, got, tc.server)
		}
	}
}

// TestPlainPathsAreValid holds plainPath, the server's fast accept, to the
// full rules: every path it accepts, of up to five characters over an
// alphabet of the characters the rules treat apart, the rules accept too;
// and it accepts the plain ones.
func TestPlainPathsAreValid(t *testing.T) {
	alphabet := []string{"/", ".", "a", "0", "~", " ", "-", "\x00", "\x01", "\x7f", "\u0085", "é"}
	accepted := 0
	var walk func(path string, depth int)
	walk = func(path string, depth int) {
		if plainPath(path) {
			accepted++
			if err := validateServerPathRules(path, false); err != nil {
				t.Errorf("plainPath accepts %q, which the rules refuse: %v", path, err)
			}
		}
		if depth == 5 {
			return
		}
		for _, c := range alphabet {
			walk(path+c, depth+1)
		}
	}
	walk("", 0)
	for _, path := range []string{"/a", "/bench/n", "/lock/n-0000000001", "/A_b:c/~x"} {
		if !plainPath(path) {
			t.Errorf("plainPath refuses plain %q", path)
		}
	}
	if accepted == 0 {
		t.Fatal("plainPath accepted no path of the alphabet")
	}
}

// TestLongPlainPaths holds plainPath, which looks at a long path eight
// bytes at a time, to the byte-at-a-time look (plainBytes), and
// both validators to their full rules: on paths of every length up to
// three words drawn from the characters the rules treat apart, and on
// plain ones with every byte at every place.
func TestLongPlainPaths(t *testing.T) {
	check := func(path string) {
		want := plainBytes(path)
		if got := plainPath(path); got != want {
			t.Fatalf("plainPath(%q) = %v, want %v", path, got, want)
		}
		if want && (validateServerPathRules(path, false) != nil || !validateClientPathRules(path, false) || !validateClientPathRules(path, true)) {
			t.Fatalf("plainPath accepts %q, which the rules refuse", path)
		}
	}
	for _, fill := range []byte{'a', '-', '0', '~'} {
		for n := 2; n <= 24; n++ {
			for at := 1; at < n; at++ {
				for b := range 256 {
					path := []byte("/" + strings.Repeat(string(fill), n-1))
					path[at] = byte(b)
					check(string(path))
				}
			}
		}
	}
	alphabet := []byte{0, 1, ',', '-', '.', '/', '0', 'a', '~', 0x7f, 0x80, 0xc3, 0xff}
	r := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		path := make([]byte, 1+r.IntN(24))
		path[0] = '/'
		for i := 1; i < len(path); i++ {
			path[i] = 'a'
			if r.IntN(4) == 0 {
				path[i] = alphabet[r.IntN(len(alphabet))]
			}
		}
		check(string(path))
	}
}

// TestLastSlash holds LastSlash, which looks eight bytes at a time, to
// strings.LastIndexByte: on strings of every length up to three words with
// every byte at every place, and of bytes drawn from those next to '/'.
func TestLastSlash(t *testing.T) {
	check := func(s string) {
		if got, want := LastSlash(s), strings.LastIndexByte(s, '/'); got != want {
			t.Fatalf("LastSlash(%q) = %d, want %d", s, got, want)
		}
	}
	for n := range 25 {
		check(strings.Repeat("a", n))
		for at := range n {
			for b := range 256 {
				s := []byte(strings.Repeat("a", n))
				s[at] = byte(b)
				check(string(s))
				s[n-1-at] = '/'
				check(string(s))
			}
		}
	}
	alphabet := []byte{0, '.', '/', '0', 0x7f, 0x80, 0xaf, 0xff}
	r := rand.New(rand.NewPCG(5, 6))
	for range 100_000 {
		s := make([]byte, r.IntN(25))
		for i := range s {
			s[i] = alphabet[r.IntN(len(alphabet))]
		}
		check(string(s))
	}
}
