//go:build !linux

package startheap

// Advice is a request for huge pages on a range of the heap's address
// space; only Linux has one.
type Advice struct{}

// Advise asks for nothing outside Linux.
func Advise() (*Advice, string) { return nil, "transparent huge pages are a Linux feature" }

// Available says why Advise asks for nothing outside Linux.
func Available() (hugePage int, why string) {
	return 0, "transparent huge pages are a Linux feature"
}

// Range returns an empty range.
func (a *Advice) Range() (lo, hi uintptr) { return 0, 0 }

// End does nothing.
func (a *Advice) End() error { return nil }
