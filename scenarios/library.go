package scenarios

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed testdata/*.scenario
var libraryFS embed.FS

// LibraryEntry is one scenario of the library that ships with zklab.
type LibraryEntry struct {
	Name    string // the file name without .scenario
	File    string // its path in the repository
	Summary string // the first sentence of its leading comment
	Text    string
}

// Library returns the scenario library, by name. Files whose name starts
// with "finding-" are open findings, not part of it.
func Library() []LibraryEntry {
	names, _ := fs.Glob(libraryFS, "testdata/*.scenario")
	slices.Sort(names)
	var out []LibraryEntry
	for _, n := range names {
		base := strings.TrimSuffix(path.Base(n), ".scenario")
		if strings.HasPrefix(base, "finding-") {
			continue
		}
		b, _ := libraryFS.ReadFile(n)
		out = append(out, LibraryEntry{Name: base, File: "scenarios/" + n, Summary: summaryOf(string(b)), Text: string(b)})
	}
	return out
}

// LookupLibrary parses the library scenario of that name.
func LookupLibrary(name string) (*Scenario, LibraryEntry, error) {
	for _, e := range Library() {
		if e.Name == name {
			sc, err := Parse(e.File, e.Text)
			return sc, e, err
		}
	}
	return nil, LibraryEntry{}, fmt.Errorf("no scenario %q in the library", name)
}

// summaryOf is the first sentence of a scenario's leading comment.
func summaryOf(text string) string {
	var words []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "#") {
			break
		}
		words = append(words, strings.TrimSpace(strings.TrimPrefix(line, "#")))
	}
	s := strings.Join(words, " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	return s
}
