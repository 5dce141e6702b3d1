package top

// Frames of `strata top`: building one from two snapshots and rendering
// it as text, both pure, so a frame is tested from canned snapshots.

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/metrics"
	"github.com/strata-log/strata/internal/cli"
)

// topFrame is what one frame shows.
type topFrame struct {
	At time.Time
	// Window is the time since the previous snapshot; 0 for the first.
	Window time.Duration
	// Err blanks the frame: the cluster answered no Metadata.
	Err          string
	ClusterID    string
	ControllerID int32
	Brokers      int
	Quorum       *cli.QuorumDescription
	QuorumErr    string
	Members      []quorumRow
	Nodes        []brokerRow
	// Topics are the busiest topics; TopicsTotal counts them all and
	// TopicsMax is how many may be shown.
	Topics      []topicRow
	TopicsTotal int
	TopicsMax   int
	Notes       []string
}

// quorumRow is one quorum member: DescribeQuorum's view, and the epoch
// and high watermark the member itself reports (its metrics).
type quorumRow struct {
	ID            int32
	Role          string
	LogEndOffset  int64
	Lag           int64
	Epoch         metricValue
	HighWatermark metricValue
}

// brokerRow is one node's row.
type brokerRow struct {
	ID   int32
	Addr string
	// Role is the raft state the node reports, else its role in
	// DescribeQuorum, "" when neither is known.
	Role   string
	Fenced bool
	// Gauges.
	Partitions, Leaders, UnderReplicated, Offline, Connections metricValue
	// Rates per second over the node's window.
	Requests, BytesIn, BytesOut, MessagesIn metricValue
	ProduceP99, FetchP99                    quantileValue
}

// topicRow is one topic's row: Metadata's counts and the rates summed
// over the nodes with a window.
type topicRow struct {
	Name                          string
	Partitions                    int
	UnderReplicated, Leaderless   int
	BytesIn, BytesOut, MessagesIn metricValue
}

// metricValue is a number, or unknown ("-").
type metricValue struct {
	V     float64
	Known bool
}

func known(v float64) metricValue { return metricValue{V: v, Known: true} }

// quantileSource says what a quantileValue is computed from.
type quantileSource uint8

const (
	quantileUnknown    quantileSource = iota // no metrics of the node
	quantileIdle                             // no request of the API in its window
	quantileWindow                           // the requests since the previous scrape
	quantileSinceStart                       // every request since the node started
)

// quantileValue is a latency percentile in milliseconds.
type quantileValue struct {
	Ms     float64
	Source quantileSource
}

// scrapeWindow is a node's two consecutive expositions.
type scrapeWindow struct {
	earlier, later *NodeMetrics
	elapsed        time.Duration
}

// windowOf is the window of node n, when the previous snapshot scraped it
// too, from the same URL, earlier.
func windowOf(prev *topSnapshot, n *nodeScrape) *scrapeWindow {
	p := prev.node(n.ID)
	if n.Metrics == nil || p == nil || p.Metrics == nil || p.URL != n.URL || !n.At.After(p.At) {
		return nil
	}
	return &scrapeWindow{earlier: p.Metrics, later: n.Metrics, elapsed: n.At.Sub(p.At)}
}

// buildFrame is the frame of cur, with rates and percentiles over the
// time since prev (nil for the first frame), and at most topics topic
// rows.
func buildFrame(prev, cur *topSnapshot, topics int) *topFrame {
	f := &topFrame{At: cur.At, Err: cur.Err, TopicsMax: topics}
	if cur.Err != "" {
		return f
	}
	if prev != nil {
		f.Window = cur.At.Sub(prev.At)
	}
	f.ClusterID, f.ControllerID, f.Brokers = cur.ClusterID, cur.ControllerID, len(cur.Brokers)
	f.Quorum, f.QuorumErr = cur.Quorum, cur.QuorumErr
	f.Notes = slices.Clone(cur.Notes)
	var windows []*scrapeWindow // of the nodes that have one, in id order
	var activeControllers []string
	for i := range cur.Nodes {
		n := &cur.Nodes[i]
		w := windowOf(prev, n)
		if w != nil {
			windows = append(windows, w)
		}
		f.Nodes = append(f.Nodes, brokerRowOf(n, w, cur.Quorum))
		if n.Err != "" {
			f.Notes = append(f.Notes, fmt.Sprintf("node %d: %s", n.ID, n.Err))
		}
		if v, _ := n.Metrics.Gauge(metrics.ControllerActive); v == 1 {
			activeControllers = append(activeControllers, strconv.Itoa(int(n.ID)))
		}
	}
	if len(activeControllers) > 1 {
		f.Notes = append(f.Notes, fmt.Sprintf("nodes %s each report an active controller", strings.Join(activeControllers, ", ")))
	}
	f.Members = quorumRows(cur)
	f.Topics, f.TopicsTotal = topicRows(cur, windows, topics), len(cur.Topics)
	return f
}

func brokerRowOf(n *nodeScrape, w *scrapeWindow, q *cli.QuorumDescription) brokerRow {
	row := brokerRow{ID: n.ID, Addr: n.Addr, Role: n.Metrics.raftStateOr(quorumRole(q, n.ID))}
	gauge := func(d *metrics.Def) metricValue {
		v, ok := n.Metrics.Gauge(d)
		return metricValue{V: v, Known: ok}
	}
	row.Partitions, row.Leaders = gauge(metrics.PartitionCount), gauge(metrics.LeaderCount)
	row.UnderReplicated, row.Offline = gauge(metrics.UnderReplicatedPartitions), gauge(metrics.OfflinePartitions)
	row.Connections = gauge(metrics.Connections)
	row.Fenced = gauge(metrics.BrokerFenced) == known(1)
	if w != nil {
		row.Requests = known(counterRate(w.earlier.requests, w.later.requests, w.elapsed))
		var in, out, msgs float64
		for topic, later := range w.later.topics {
			earlier := w.earlier.topics[topic]
			in += counterRate(earlier.bytesIn, later.bytesIn, w.elapsed)
			out += counterRate(earlier.bytesOut, later.bytesOut, w.elapsed)
			msgs += counterRate(earlier.messagesIn, later.messagesIn, w.elapsed)
		}
		row.BytesIn, row.BytesOut, row.MessagesIn = known(in), known(out), known(msgs)
	}
	row.ProduceP99, row.FetchP99 = latencyP99(n.Metrics, w, produceAPI), latencyP99(n.Metrics, w, fetchAPI)
	return row
}

func (m *NodeMetrics) raftStateOr(fallback string) string {
	if m == nil || m.raftState == "" {
		return fallback
	}
	return m.raftState
}

// quorumRole is node id's role in q, "" when it is no member.
func quorumRole(q *cli.QuorumDescription, id int32) string {
	switch {
	case q == nil:
		return ""
	case q.LeaderID == id:
		return "leader"
	case slices.ContainsFunc(q.CurrentVoters, func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState) bool { return r.ReplicaID == id }):
		return "follower"
	case slices.ContainsFunc(q.Observers, func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState) bool { return r.ReplicaID == id }):
		return "observer"
	}
	return ""
}

// latencyP99 is the p99 of api's total time on a node: over its window
// when it has one, else since it started.
func latencyP99(m *NodeMetrics, w *scrapeWindow, api string) quantileValue {
	if m == nil {
		return quantileValue{}
	}
	h, ok := m.latency[api]
	if !ok {
		return quantileValue{}
	}
	source := quantileSinceStart
	if w != nil {
		if d, ok := h.since(w.earlier.latency[api]); ok {
			h, source = d, quantileWindow
		}
	}
	ms, ok := h.quantile(topQuantile)
	if !ok {
		return quantileValue{Source: quantileIdle}
	}
	return quantileValue{Ms: ms, Source: source}
}

// quorumRows are the leader, the other voters, then the observers, as
// printReplication orders them.
func quorumRows(s *topSnapshot) []quorumRow {
	q := s.Quorum
	if q == nil {
		return nil
	}
	var rows []quorumRow
	for _, r := range q.Replicas() {
		row := quorumRow{ID: r.ReplicaID, Role: strings.ToLower(r.Role), LogEndOffset: r.LogEndOffset, Lag: r.Lag}
		if n := s.node(r.ReplicaID); n != nil {
			epoch, ok := n.Metrics.Gauge(metrics.RaftEpoch)
			row.Epoch = metricValue{V: epoch, Known: ok}
			hw, ok := n.Metrics.Gauge(metrics.RaftHighWatermark)
			row.HighWatermark = metricValue{V: hw, Known: ok}
		}
		rows = append(rows, row)
	}
	return rows
}

// topicRows are the max busiest topics by bytes in per second (topics
// without a known rate last), then by name.
func topicRows(s *topSnapshot, windows []*scrapeWindow, maxRows int) []topicRow {
	rows := make([]topicRow, 0, len(s.Topics))
	for _, t := range s.Topics {
		row := topicRow{Name: t.Name, Partitions: t.Partitions, UnderReplicated: t.UnderReplicated, Leaderless: t.Leaderless}
		for _, w := range windows {
			earlier, later := w.earlier.topics[t.Name], w.later.topics[t.Name]
			row.BytesIn = known(row.BytesIn.V + counterRate(earlier.bytesIn, later.bytesIn, w.elapsed))
			row.BytesOut = known(row.BytesOut.V + counterRate(earlier.bytesOut, later.bytesOut, w.elapsed))
			row.MessagesIn = known(row.MessagesIn.V + counterRate(earlier.messagesIn, later.messagesIn, w.elapsed))
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b topicRow) int {
		return cmp.Or(
			cmp.Compare(boolRank(!a.BytesIn.Known), boolRank(!b.BytesIn.Known)),
			cmp.Compare(b.BytesIn.V, a.BytesIn.V),
			strings.Compare(a.Name, b.Name))
	})
	return rows[:min(len(rows), maxRows)]
}

// --- Rendering ---

// topSections are a frame's sections, in order. Each reads the frame
// alone: a new section (consumer lag per group, once Strata has groups)
// is one more function here and the fields it reads.
var topSections = []func(w io.Writer, f *topFrame){
	renderClusterSection,
	renderQuorumSection,
	renderBrokerSection,
	renderTopicSection,
	renderNotesSection,
}

// renderFrame writes f as text, its sections separated by blank lines.
func renderFrame(w io.Writer, f *topFrame) {
	fmt.Fprintf(w, "strata top  %s  ", f.At.Format(time.DateTime))
	switch {
	case f.Err != "":
		fmt.Fprintf(w, "no answer from the cluster: %s\n", f.Err)
		return
	case f.Window > 0:
		fmt.Fprintf(w, "rates and p99 over the last %.1fs\n", f.Window.Seconds())
	default:
		fmt.Fprint(w, "first scrape: rates from the next frame, p99 since each node started\n")
	}
	for _, section := range topSections {
		section(w, f)
	}
}

func renderClusterSection(w io.Writer, f *topFrame) {
	fmt.Fprintf(w, "cluster %s  controller %s  brokers %d  topics %d\n",
		cmp.Or(f.ClusterID, "-"), nodeID(f.ControllerID), f.Brokers, f.TopicsTotal)
}

func renderQuorumSection(w io.Writer, f *topFrame) {
	q := f.Quorum
	if q == nil {
		fmt.Fprintf(w, "\nquorum unavailable: %s\n", f.QuorumErr)
		return
	}
	fmt.Fprintf(w, "\nquorum  leader %s  epoch %d  high watermark %d\n", nodeID(q.LeaderID), q.LeaderEpoch, q.HighWatermark)
	tw := cli.NewTable(w, "NODE\tROLE\tLOG-END\tLAG\tEPOCH\tHW")
	for _, r := range f.Members {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\n", r.ID, r.Role, r.LogEndOffset, r.Lag, formatCount(r.Epoch), formatCount(r.HighWatermark))
	}
	_ = tw.Flush()
}

func renderBrokerSection(w io.Writer, f *topFrame) {
	fmt.Fprintln(w)
	tw := cli.NewTable(w, "NODE\tADDRESS\tROLE\tPARTITIONS\tLEADERS\tURP\tOFFLINE\tCONNS\tREQ/S\tIN/S\tOUT/S\tMSG-IN/S\tPRODUCE-P99-MS\tFETCH-P99-MS")
	sinceStart, idle := false, false
	for _, r := range f.Nodes {
		role := cmp.Or(r.Role, "-")
		if r.Fenced {
			role += ",fenced"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, cmp.Or(r.Addr, "-"), role,
			formatCount(r.Partitions), formatCount(r.Leaders), formatCount(r.UnderReplicated), formatCount(r.Offline),
			formatCount(r.Connections), formatRate(r.Requests), formatBytesRate(r.BytesIn), formatBytesRate(r.BytesOut),
			formatRate(r.MessagesIn), formatQuantile(r.ProduceP99), formatQuantile(r.FetchP99))
		for _, q := range []quantileValue{r.ProduceP99, r.FetchP99} {
			sinceStart = sinceStart || q.Source == quantileSinceStart
			idle = idle || q.Source == quantileIdle
		}
	}
	_ = tw.Flush()
	if sinceStart {
		fmt.Fprintln(w, "* p99 since the node started (no earlier scrape of it to subtract)")
	}
	if idle {
		fmt.Fprintln(w, "idle: no such request in the window")
	}
}

func renderTopicSection(w io.Writer, f *topFrame) {
	if f.TopicsMax == 0 {
		return
	}
	fmt.Fprintf(w, "\ntopics  %d of %d, by bytes in\n", len(f.Topics), f.TopicsTotal)
	if len(f.Topics) == 0 {
		return
	}
	tw := cli.NewTable(w, "TOPIC\tPARTITIONS\tURP\tLEADERLESS\tIN/S\tOUT/S\tMSG-IN/S")
	for _, t := range f.Topics {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\n", t.Name, t.Partitions, t.UnderReplicated, t.Leaderless,
			formatBytesRate(t.BytesIn), formatBytesRate(t.BytesOut), formatRate(t.MessagesIn))
	}
	_ = tw.Flush()
}

func renderNotesSection(w io.Writer, f *topFrame) {
	if len(f.Notes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nnotes")
	for _, n := range f.Notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
}

func nodeID(id int32) string {
	if id < 0 {
		return "none"
	}
	return strconv.Itoa(int(id))
}

func formatCount(v metricValue) string {
	if !v.Known {
		return "-"
	}
	return strconv.FormatFloat(v.V, 'f', 0, 64)
}

func formatRate(v metricValue) string {
	if !v.Known {
		return "-"
	}
	return strconv.FormatFloat(v.V, 'f', 1, 64)
}

// formatBytesRate is bytes per second in binary units: 512B, 1.5KiB,
// 12.0MiB.
func formatBytesRate(v metricValue) string {
	if !v.Known {
		return "-"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	x, u := v.V, 0
	for x >= 1024 && u < len(units)-1 {
		x, u = x/1024, u+1
	}
	if u == 0 {
		return strconv.FormatFloat(x, 'f', 0, 64) + units[u]
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + units[u]
}

// formatQuantile is milliseconds with two decimals below 10, one below
// 100, none above; "*" marks a value since the node started.
func formatQuantile(q quantileValue) string {
	var s string
	switch q.Source {
	case quantileUnknown:
		return "-"
	case quantileIdle:
		return "idle"
	}
	switch {
	case q.Ms < 10:
		s = strconv.FormatFloat(q.Ms, 'f', 2, 64)
	case q.Ms < 100:
		s = strconv.FormatFloat(q.Ms, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(q.Ms, 'f', 0, 64)
	}
	if q.Source == quantileSinceStart {
		s += "*"
	}
	return s
}
