package sim

import (
	"cmp"
	"slices"
)

// Watch is one registered one-shot watch, for inspection (the four-letter
// words wchs, wchc and wchp).
type Watch struct {
	Path  string
	Conn  ConnID
	Child bool // a child watch (getChildren); otherwise a data or exist watch
}

// Watches lists the registered watches, by path, then kind, then
// connection. It changes nothing.
func (s *Server) Watches() []Watch {
	var list []Watch
	for path, conns := range s.dataWatches {
		for _, c := range conns {
			list = append(list, Watch{Path: path, Conn: c})
		}
	}
	for path, conns := range s.childWatches {
		for _, c := range conns {
			list = append(list, Watch{Path: path, Conn: c, Child: true})
		}
	}
	slices.SortFunc(list, func(a, b Watch) int {
		if c := cmp.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		if a.Child != b.Child {
			if a.Child {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Conn, b.Conn)
	})
	return list
}
