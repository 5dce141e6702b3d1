package kraft

// MaxForwardedInflight exposes the bound to the external tests.
const MaxForwardedInflight = maxForwardedInflight
