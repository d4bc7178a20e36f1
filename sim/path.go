package sim

import (
	"fmt"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// validateServerPath applies ZooKeeper's server-side path rules
// (org.apache.zookeeper.common.PathUtils.validatePath). A sequential create
// is checked as if the suffix were already appended, as the server does, so
// "/lock/" is a valid prefix. The server answers a violation with
// BADARGUMENTS. The rules work on UTF-16 code units, so every character
// outside the Basic Multilingual Plane (a surrogate pair) is rejected.
func validateServerPath(path string, sequential bool) error {
	if !sequential && plainPath(path) {
		return nil
	}
	return validateServerPathRules(path, sequential)
}

// validateServerPathRules is validateServerPath without the fast accept of
// plain paths.
func validateServerPathRules(path string, sequential bool) error {
	if sequential {
		path += "1"
	}
	if path == "" {
		return fmt.Errorf("path length must be > 0")
	}
	if path[0] != '/' {
		return fmt.Errorf("path %q must start with / character", path)
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return fmt.Errorf("path %q must not end with / character", path)
	}
	units := asciiUnits(path)
	if units == nil {
		units = utf16Units(path)
	}
	last := uint16('/')
	for i := 1; i < len(units); last, i = units[i], i+1 {
		c := units[i]
		atEnd := i+1 == len(units)
		switch {
		case c == 0:
			return fmt.Errorf("invalid path %q: null character not allowed @%d", path, i)
		case c == '/' && last == '/':
			return fmt.Errorf("invalid path %q: empty node name specified @%d", path, i)
		case c == '.' && last == '.':
			if units[i-2] == '/' && (atEnd || units[i+1] == '/') {
				return fmt.Errorf("invalid path %q: relative paths not allowed @%d", path, i)
			}
		case c == '.':
			if units[i-1] == '/' && (atEnd || units[i+1] == '/') {
				return fmt.Errorf("invalid path %q: relative paths not allowed @%d", path, i)
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			return fmt.Errorf("invalid path %q: invalid character @%d", path, i)
		}
	}
	return nil
}

// plainPath reports whether path is one the server's rules, and the
// client's laxer check, surely accept: a slash, then names of plain ASCII
// characters (letters, digits, '-' and the other printable characters
// past '/': no dot, no control, not DEL) joined by single slashes, with no
// slash at the end. It is the common case, checked without the UTF-16
// walk; a path it does not recognise takes the full check.
func plainPath(path string) bool {
	n := len(path)
	if n < 2 || path[0] != '/' || path[n-1] == '/' {
		return false
	}
	if n < 8 {
		return plainBytes(path)
	}
	// Eight bytes at a time, each word overlapping the one before by a
	// byte, so that every two neighbours share a word; the last word ends
	// at the path's end. A lock node's path is some ninety bytes, and a
	// byte at a time its checks by the client and the server were a
	// twentieth of an exploration.
	last := n - 8
	for i := 0; i < last; i += 7 {
		if !plainWord(load64(path, i)) {
			return false
		}
	}
	return plainWord(load64(path, last))
}

// plainBytes is plainPath a byte at a time: its look at a short path, and
// the rule its word-at-a-time look is held to (TestLongPlainPaths).
func plainBytes(path string) bool {
	n := len(path)
	if n < 2 || path[0] != '/' || path[n-1] == '/' {
		return false
	}
	for i := 1; i < n; i++ {
		b := path[i]
		switch {
		case b > '/' && b < 0x7f, b == '-':
		case b == '/' && path[i-1] != '/':
		default:
			return false
		}
	}
	return true
}

// plainWord reports whether the eight bytes of x (a path's, little-endian)
// are all plain characters or slashes, with no two slashes side by side.
func plainWord(x uint64) bool {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	// Each sum sets the high bit of the bytes of one kind, and stays
	// within each byte when no byte has its high bit set; when one has,
	// x says so. A plain byte has its high bit set in fromDash and
	// notDot, and clear in x, atDEL and double: each term is read in the
	// sense it comes in, as a complement costs an instruction.
	fromDash := x + (0x80-'-')*ones // '-' and up
	atDEL := x + ones               // DEL and up
	dots := x ^ '.'*ones            // zero at a dot, one at a slash
	notDot := dots + 0x7f*ones
	slash := ^((dots ^ ones) + 0x7f*ones)
	double := slash & (slash >> 8) // a slash before a slash
	return fromDash&notDot&^(x|atDEL|double)&high == high
}

// load64 is the eight bytes of s from i, little-endian, in one load.
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// asciiUnits returns the UTF-16 units of an ASCII path without
// allocating (in a small stack buffer), or nil if the path is not ASCII or
// too long for it.
func asciiUnits(s string) []uint16 {
	var buf [128]uint16
	if len(s) > len(buf) {
		return nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return nil
		}
		buf[i] = uint16(s[i])
	}
	return buf[:len(s)]
}

func utf16Units(s string) []uint16 {
	units := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			units = append(units, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
			continue
		}
		units = append(units, uint16(r))
	}
	return units
}

// validateClientPath applies the check go-zookeeper/zk makes before it sends
// a request (util.go validatePath); a violation never reaches the server and
// fails with zk.ErrInvalidPath. It is laxer than the server: it lets through
// characters outside the Basic Multilingual Plane, which the server then
// rejects.
func validateClientPath(path string, sequential bool) bool {
	return plainPath(path) || validateClientPathRules(path, sequential)
}

// validateClientPathRules is validateClientPath without the fast accept
// of plain paths.
func validateClientPathRules(path string, sequential bool) bool {
	if path == "" || path[0] != '/' {
		return false
	}
	n := len(path)
	if n == 1 {
		return true
	}
	if !sequential && path[n-1] == '/' {
		return false
	}
	// prevWidth is the width of the rune before i, 0 at the first:
	// go-zookeeper looks for the '/' after a '.' at i+prevWidth, so a "."
	// that is the first name and is followed by more ("/./x") gets past
	// it (measured against 3.8.0: create "/./x" reaches the server and
	// fails there with NONODE, "/../x" is refused by the client).
	prevWidth := 0
	for i := 1; i < n; {
		if b := path[i]; b > '/' && b < 0x7f || b == '-' {
			// The common case, a plain ASCII character (not a slash, a dot or
			// a control): nothing to check.
			i++
			prevWidth = 1
			continue
		}
		r, width := rune(path[i]), 1
		if r >= utf8.RuneSelf {
			r, width = utf8.DecodeRuneInString(path[i:])
		}
		switch {
		case r == 0:
			return false
		case r == '/':
			if path[i-1] == '/' {
				return false
			}
		case r == '.':
			// "/." or "/.." as a whole name is relative.
			start := i
			if path[i-1] == '.' {
				start = i - 1
			}
			if path[start-1] == '/' {
				if i+1 == n || path[i+prevWidth] == '/' {
					return false
				}
			}
		case r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xf000 && r <= 0xf8ff, r >= 0xfff0 && r < 0xffff:
			return false
		}
		i += width
		prevWidth = width
	}
	return true
}

// parentOf returns the parent path and the last name of a valid path other
// than the root.
func parentOf(path string) (parent, name string) {
	i := strings.LastIndexByte(path, '/')
	if i == 0 {
		return "/", path[1:]
	}
	return path[:i], path[i+1:]
}

// LastSlash is strings.LastIndexByte(path, '/'), eight bytes at a time:
// the standard library's goes a byte at a time (it has no assembly on
// amd64), and a lock node's last slash is some fifty bytes from its end.
// A create and a delete split their path by it (the paths split after,
// a node's parent's, are short), and scenarios' observer every path a
// write names.
func LastSlash(path string) int {
	const ones, low7 = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f
	i := len(path)
	for ; i >= 8; i -= 8 {
		x := load64(path, i-8) ^ '/'*ones // a zero byte where a slash is
		// The high bit of exactly the zero bytes: adding within the low
		// seven bits of each byte carries into no other.
		if zeros := ^((x&low7 + low7) | x | low7); zeros != 0 {
			return i - 8 + (63-bits.LeadingZeros64(zeros))/8
		}
	}
	for i > 0 {
		i--
		if path[i] == '/' {
			return i
		}
	}
	return -1
}

// nameStart is where the last name of a child of parent starts in the
// child's path: after the parent's path and its slash.
func nameStart(parent string) int {
	if parent == "/" {
		return 1
	}
	return len(parent) + 1
}

// splitAt is parentOf for a path whose last name starts at i (nameStart).
func splitAt(path string, i int) (parent, name string) {
	if i == 1 {
		return "/", path[1:]
	}
	return path[:i-1], path[i:]
}

// SplitPath is the server's own split of a path it has (valid, not the
// root) into its parent's path and its last name, for a driver that
// follows the tree (scenarios' observer).
func SplitPath(path string) (parent, name string) { return parentOf(path) }

// JoinPath is the path of the child name of parent, as the server builds
// it.
func JoinPath(parent, name string) string { return joinPath(parent, name) }

// AppendPath appends JoinPath(parent, name) to b: for a lookup by the
// path built in a buffer, which allocates nothing.
func AppendPath(b []byte, parent, name string) []byte {
	if parent != "/" {
		b = append(b, parent...)
	}
	return append(append(b, '/'), name...)
}

func joinPath(parent, name string) string {
	if parent == "/" {
		return "/" + name
	}
	return parent + "/" + name
}
