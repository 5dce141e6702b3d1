//go:build strata_plant

package plant

// planted is the bug a test planted (tests only: the package is built
// with strata_plant for the planted-bug tests alone).
var planted Bug

// Is reports whether bug b is planted.
func Is(b Bug) bool { return b != None && planted == b }

// Set plants b (None for no bug) and returns a function that restores the
// previous one.
func Set(b Bug) (restore func()) {
	prev := planted
	planted = b
	return func() { planted = prev }
}
