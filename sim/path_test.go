package sim

import "testing"

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
