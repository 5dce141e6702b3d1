package kraft

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/protocol"
	"github.com/strata-log/strata/core/quorum"
)

// controllerAPIs is the controller listener's table: what its ApiVersions
// answers and what it accepts. The quorum's RPCs go up to the versions
// Strata's members speak (quorum.DefaultWireVersions; Fetch from the first
// version with KRaft's fields); the controller serves every version kmsg
// decodes of the requests it takes; DescribeQuorum is answered here.
var controllerAPIs = func() protocol.Table {
	w := quorum.DefaultWireVersions
	rows := []protocol.API{
		{Key: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 4},
		{Key: kmsg.Fetch.Int16(), MinVersion: quorum.MinFetchVersion, MaxVersion: w.Fetch},
		{Key: kmsg.Vote.Int16(), MinVersion: 0, MaxVersion: w.Vote},
		{Key: kmsg.BeginQuorumEpoch.Int16(), MinVersion: 0, MaxVersion: w.BeginQuorumEpoch},
		{Key: kmsg.EndQuorumEpoch.Int16(), MinVersion: 0, MaxVersion: w.EndQuorumEpoch},
		{Key: kmsg.FetchSnapshot.Int16(), MinVersion: 0, MaxVersion: w.FetchSnapshot},
		{Key: kmsg.DescribeQuorum.Int16(), MinVersion: 0, MaxVersion: w.DescribeQuorum},
	}
	for _, req := range []kmsg.Request{
		kmsg.NewPtrBrokerRegistrationRequest(), kmsg.NewPtrBrokerHeartbeatRequest(),
		kmsg.NewPtrCreateTopicsRequest(), kmsg.NewPtrDeleteTopicsRequest(), kmsg.NewPtrCreatePartitionsRequest(),
		kmsg.NewPtrAlterPartitionRequest(), kmsg.NewPtrAllocateProducerIDsRequest(),
		kmsg.NewPtrIncrementalAlterConfigsRequest(), kmsg.NewPtrAlterConfigsRequest(), kmsg.NewPtrElectLeadersRequest(),
		kmsg.NewPtrAlterPartitionAssignmentsRequest(), kmsg.NewPtrListPartitionReassignmentsRequest(),
		kmsg.NewPtrCreateACLsRequest(), kmsg.NewPtrDeleteACLsRequest(),
		kmsg.NewPtrAlterUserSCRAMCredentialsRequest(), kmsg.NewPtrAlterClientQuotasRequest(),
	} {
		rows = append(rows, protocol.API{Key: req.Key(), MinVersion: 0, MaxVersion: req.MaxVersion()})
	}
	return protocol.NewTable(rows...)
}()

// ControllerAPIs returns the controller listener's table (for tests and
// the compatibility docs).
func ControllerAPIs() protocol.Table { return controllerAPIs }
