package broker

// Helpers of the package's own tests that its external tests
// (package broker_test) use too.
var (
	// Versions lists the versions of key the broker serves.
	Versions = versions
	// ConfigByName is a DescribeConfigs resource's config name.
	ConfigByName = configByName
)
