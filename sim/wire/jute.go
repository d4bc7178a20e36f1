package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Jute is ZooKeeper's serialization (org.apache.jute.BinaryOutputArchive):
// big-endian ints and longs, a boolean as one byte, a buffer or string as a
// 4-byte length and its bytes (length -1 for null), a vector as a 4-byte
// count and its elements (-1 for null), a record as its fields in order.

// statBytes is the encoded size of a Stat: six longs (czxid, mzxid,
// ctime, mtime, ephemeralOwner, pzxid) and five ints.
const statBytes = 6*8 + 5*4

// encoder appends jute values to a byte slice.
type encoder struct{ b []byte }

func (e *encoder) int32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *encoder) int64(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// buffer writes b; nil is jute's null buffer (length -1), which a Java
// client reads as null and go-zookeeper as a nil slice.
func (e *encoder) buffer(b []byte) {
	if b == nil {
		e.int32(-1)
		return
	}
	e.int32(int32(len(b)))
	e.b = append(e.b, b...)
}

func (e *encoder) string(s string) {
	e.int32(int32(len(s)))
	e.b = append(e.b, s...)
}

// strings writes a vector of strings; nil is written as an empty vector,
// as every server reply builds its lists non-null.
func (e *encoder) strings(list []string) {
	e.int32(int32(len(list)))
	for _, s := range list {
		e.string(s)
	}
}

func (e *encoder) stat(s *zk.Stat) {
	e.int64(s.Czxid)
	e.int64(s.Mzxid)
	e.int64(s.Ctime)
	e.int64(s.Mtime)
	e.int32(s.Version)
	e.int32(s.Cversion)
	e.int32(s.Aversion)
	e.int64(s.EphemeralOwner)
	e.int32(s.DataLength)
	e.int32(s.NumChildren)
	e.int64(s.Pzxid)
}

func (e *encoder) acls(list []zk.ACL) {
	if list == nil {
		e.int32(-1)
		return
	}
	e.int32(int32(len(list)))
	for _, a := range list {
		e.int32(a.Perms)
		e.string(a.Scheme)
		e.string(a.ID)
	}
}

// errShort is a record that ends before its last field.
var errShort = errors.New("record ends early")

// decoder reads jute values from a frame. The first error sticks: every
// later read returns a zero value, and err says what was wrong and where.
// Every length is checked against what is left of the frame before
// anything is allocated, so a hostile length costs nothing.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(field string, err error) {
	if d.err == nil {
		d.err = fmt.Errorf("%s at byte %d: %w", field, d.off, err)
	}
}

func (d *decoder) left() int { return len(d.b) - d.off }

func (d *decoder) int32(field string) int32 {
	if d.err != nil {
		return 0
	}
	if d.left() < 4 {
		d.fail(field, errShort)
		return 0
	}
	v := int32(binary.BigEndian.Uint32(d.b[d.off:]))
	d.off += 4
	return v
}

func (d *decoder) int64(field string) int64 {
	if d.err != nil {
		return 0
	}
	if d.left() < 8 {
		d.fail(field, errShort)
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.b[d.off:]))
	d.off += 8
	return v
}

func (d *decoder) bool(field string) bool {
	if d.err != nil {
		return false
	}
	if d.left() < 1 {
		d.fail(field, errShort)
		return false
	}
	v := d.b[d.off] != 0
	d.off++
	return v
}

// length reads a buffer's, string's or vector's length: -1 is null, any
// other negative value or one past the frame's end is an error. A vector's
// elements take at least elemBytesMin bytes each.
func (d *decoder) length(field string, elemBytesMin int) (n int, null bool) {
	v := d.int32(field)
	if d.err != nil {
		return 0, false
	}
	switch {
	case v == -1:
		return 0, true
	case v < 0:
		d.fail(field, fmt.Errorf("negative length %d", v))
		return 0, false
	case int64(v)*int64(elemBytesMin) > int64(d.left()):
		d.fail(field, fmt.Errorf("length %d past the end of the frame (%d bytes left)", v, d.left()))
		return 0, false
	}
	return int(v), false
}

// buffer reads a buffer; null is nil, an empty one a non-nil empty slice.
func (d *decoder) buffer(field string) []byte {
	n, null := d.length(field, 1)
	if d.err != nil || null {
		return nil
	}
	b := make([]byte, n)
	copy(b, d.b[d.off:])
	d.off += n
	return b
}

// string reads a ustring; null reads as "", as the Java server's
// deserializer hands a null path to the same checks as an empty one.
func (d *decoder) string(field string) string {
	n, null := d.length(field, 1)
	if d.err != nil || null {
		return ""
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s
}

// nullableString reads a ustring and whether it was null.
func (d *decoder) nullableString(field string) (string, bool) {
	n, null := d.length(field, 1)
	if d.err != nil || null {
		return "", null
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s, false
}

func (d *decoder) strings(field string) []string {
	n, null := d.length(field, 4)
	if d.err != nil || null {
		return nil
	}
	list := make([]string, 0, n)
	for range n {
		list = append(list, d.string(field))
	}
	if d.err != nil {
		return nil
	}
	return list
}

func (d *decoder) stat(field string) zk.Stat {
	var s zk.Stat
	if d.left() < statBytes && d.err == nil {
		d.fail(field, errShort)
	}
	s.Czxid = d.int64(field)
	s.Mzxid = d.int64(field)
	s.Ctime = d.int64(field)
	s.Mtime = d.int64(field)
	s.Version = d.int32(field)
	s.Cversion = d.int32(field)
	s.Aversion = d.int32(field)
	s.EphemeralOwner = d.int64(field)
	s.DataLength = d.int32(field)
	s.NumChildren = d.int32(field)
	s.Pzxid = d.int64(field)
	return s
}

// aclBytesMin is the smallest encoded ACL: perms and two empty strings.
const aclBytesMin = 12

func (d *decoder) acls(field string) []zk.ACL {
	n, null := d.length(field, aclBytesMin)
	if d.err != nil || null {
		return nil
	}
	list := make([]zk.ACL, 0, n)
	for range n {
		var a zk.ACL
		a.Perms = d.int32(field)
		a.Scheme = d.string(field)
		a.ID = d.string(field)
		list = append(list, a)
	}
	if d.err != nil {
		return nil
	}
	return list
}

// end reports an error if bytes are left over: ZooKeeper ignores trailing
// bytes of a request, and so do we, but a record decoded in full from a
// reply must use it all.
func (d *decoder) end(what string) error {
	if d.err != nil {
		return fmt.Errorf("%s: %w", what, d.err)
	}
	if d.left() != 0 {
		return fmt.Errorf("%s: %d bytes left over at byte %d", what, d.left(), d.off)
	}
	return nil
}
