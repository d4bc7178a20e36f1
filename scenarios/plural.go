package scenarios

import "strconv"

// Plural writes a count with its noun, singular for one: "1 client",
// "2 clients". Nouns whose plural is not noun+"s" are not passed here.
//
// It builds the text on the stack and allocates it once: strconv.Itoa
// allocated a count of 100 or more on its own first, and the checks
// write a run's operations and writes with it at every run.
func Plural(n int, noun string) string {
	var buf [64]byte
	return string(appendPlural(buf[:0], n, noun))
}

// appendPlural appends Plural(n, noun) to b.
func appendPlural(b []byte, n int, noun string) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, ' ')
	b = append(b, noun...)
	if n != 1 {
		b = append(b, 's')
	}
	return b
}
