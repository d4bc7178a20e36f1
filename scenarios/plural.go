package scenarios

import "strconv"

// Plural writes a count with its noun, singular for one: "1 client",
// "2 clients". Nouns whose plural is not noun+"s" are not passed here.
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
