package sim

// Internals the external tests (package sim_test, which drive the disk
// through simtest) read.
const (
	PageBytes   = pageBytes
	SectorBytes = sectorBytes
)
