package redact

// manyForms is how many forms make a one-pass scan pay: below it,
// strings.Contains (vectorised) per form is faster; above, its cost grows
// with the number of secrets and the scan's does not.
const manyForms = 4

// scanner finds whether any of several forms occurs in a text in one pass
// (Rabin–Karp): a rolling hash of the last w bytes is looked up in a bit
// filter of the forms' first w bytes, and only a hit is compared.
type scanner struct {
	w      int    // bytes hashed: the shortest form's length, at most 32
	pow    uint64 // hashBase^(w-1)
	filter [filterBits / 64]uint64
	heads  map[uint64][][]byte // hash of a form's first w bytes → the forms
}

const (
	hashBase   = 1099511628211 // FNV's 64-bit prime
	filterBits = 1 << 18
)

func newScanner(forms [][]byte) *scanner {
	w := 32
	for _, f := range forms {
		w = min(w, len(f))
	}
	s := &scanner{w: w, pow: 1, heads: map[uint64][][]byte{}}
	for range w - 1 {
		s.pow *= hashBase
	}
	for _, f := range forms {
		h := hashOf(f[:w])
		s.filter[(h>>46)/64] |= 1 << ((h >> 46) % 64)
		s.heads[h] = append(s.heads[h], f)
	}
	return s
}

func hashOf[T string | []byte](b T) uint64 {
	var h uint64
	for i := 0; i < len(b); i++ {
		h = h*hashBase + uint64(b[i])
	}
	return h
}

// occurs reports whether any form occurs in t; len(t) >= s.w.
func occurs[T string | []byte](s *scanner, t T) bool {
	h := hashOf(t[:s.w])
	for i := 0; ; i++ {
		if s.filter[(h>>46)/64]&(1<<((h>>46)%64)) != 0 {
			for _, f := range s.heads[h] {
				if len(t)-i >= len(f) && string(t[i:i+len(f)]) == string(f) {
					return true
				}
			}
		}
		if i+s.w >= len(t) {
			return false
		}
		h = (h-uint64(t[i])*s.pow)*hashBase + uint64(t[i+s.w])
	}
}
