package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// kafkajsDir holds kafkajs (package.json, package-lock.json; its
// node_modules is installed by `npm ci --prefix interop/testdata/kafkajs`,
// which .ci/run does) and the script the test runs.
const kafkajsDir = "testdata/kafkajs"

// kafkajsResult is what interop/testdata/kafkajs/admin.js prints.
type kafkajsResult struct {
	Controller   int32   `json:"controller"`
	Brokers      []int32 `json:"brokers"`
	Created      bool    `json:"created"`
	CreatedAgain bool    `json:"createdAgain"`
	Refused      struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"refusedConfig"`
	RefusedInternal struct {
		Type string `json:"type"`
	} `json:"refusedInternal"`
	Topics          []string          `json:"topics"`
	Partitions      int               `json:"partitions"`
	Configs         map[string]string `json:"configs"`
	Altered         map[string]string `json:"altered"`
	PartitionsAfter int               `json:"partitionsAfter"`
	Consumed        int               `json:"consumed"`
	Groups          []string          `json:"groups"`
	GroupState      string            `json:"groupState"`
	Members         int               `json:"members"`
	Committed       int64             `json:"committed"`
	GroupsAfter     int               `json:"groupsAfter"`
	TopicsAfter     int               `json:"topicsAfter"`
}

// TestKafkaJSAdmin: kafkajs 2.2.4's admin client, whose createTopics and
// deleteTopics go to Metadata's controller id ("Broker -1 not found in the
// cached metadata" when Strata answered -1; issue 22, finding 11), through
// topics, configs and a consumer group. It skips without node or the
// installed kafkajs, and fails so under CI=true.
func TestKafkaJSAdmin(t *testing.T) {
	nodePath, err := exec.LookPath("node")
	if err != nil {
		skipOrFailMissing(t, "node is not installed (Debian's nodejs package)")
	}
	if _, err := os.Stat(filepath.Join(kafkajsDir, "node_modules", "kafkajs", "package.json")); err != nil {
		skipOrFailMissing(t, "kafkajs is not installed (npm ci --prefix interop/"+kafkajsDir+")")
	}
	n := startNode(t, t.TempDir())
	out := runTool(t, nil, nodePath, filepath.Join(kafkajsDir, "admin.js"), n.Addr(), "kjs")
	var got kafkajsResult
	require.NoError(t, json.Unmarshal(out, &got), "admin.js printed %q", out)

	require.Equal(t, []int32{n.NodeID()}, got.Brokers)
	require.Equal(t, n.NodeID(), got.Controller)
	require.True(t, got.Created)
	require.False(t, got.CreatedAgain, "the topic exists")
	require.Equal(t, "INVALID_CONFIG", got.Refused.Type)
	// kafkajs reports the code's own text, not the broker's message.
	require.Equal(t, "INVALID_REQUEST", got.RefusedInternal.Type)
	require.Equal(t, []string{"kjs-orders"}, got.Topics)
	require.Equal(t, 3, got.Partitions)
	require.Equal(t, map[string]string{"retention.ms": "3600000", "segment.bytes": "1073741824"}, got.Configs)
	require.Equal(t, map[string]string{"retention.ms": "86400000", "segment.bytes": "1048576"}, got.Altered)
	require.Equal(t, 4, got.PartitionsAfter)
	require.Equal(t, 20, got.Consumed)
	require.Equal(t, []string{"consumer"}, got.Groups)
	require.Equal(t, "Stable", got.GroupState)
	require.Equal(t, 1, got.Members)
	require.Equal(t, int64(20), got.Committed, "the committed offsets add up to the records")
	require.Zero(t, got.GroupsAfter)
	require.Zero(t, got.TopicsAfter)
}
