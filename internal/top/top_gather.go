package top

// Gathering for `strata top`: the only I/O of a frame. A topSnapshot is
// what one pass saw: Metadata and DescribeQuorum through the brokers, and
// each node's exposition from the endpoint --metrics names or its broker's
// metrics.listener config gives.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/strata-log/strata/internal/cli"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metricsEndpoint is one --metrics entry.
type metricsEndpoint struct {
	// node is the id given as "id=", or -1: the endpoint goes to a broker
	// by order.
	node int32
	url  string
}

// parseMetricsFlag parses --metrics: comma-separated entries, each
// "[id=]host:port" or "[id=]http(s)://host[:port][/path]".
func parseMetricsFlag(s string) ([]metricsEndpoint, error) {
	var out []metricsEndpoint
	seen := map[int32]bool{}
	for _, entry := range cli.SplitAddrs(s) {
		e := metricsEndpoint{node: -1}
		raw := entry
		if id, rest, ok := strings.Cut(entry, "="); ok && !strings.ContainsAny(id, ":/") {
			n, err := strconv.ParseInt(id, 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("bad node id %q in --metrics entry %q", id, entry)
			}
			if seen[int32(n)] {
				return nil, fmt.Errorf("node %d is given twice in --metrics", n)
			}
			seen[int32(n)] = true
			e.node, raw = int32(n), rest
		}
		u, err := parseMetricsURL(raw)
		if err != nil {
			return nil, fmt.Errorf("bad --metrics entry %q: %w", entry, err)
		}
		if u.Hostname() == "" {
			return nil, fmt.Errorf("bad --metrics entry %q: no host", entry)
		}
		e.url = u.String()
		out = append(out, e)
	}
	return out, nil
}

// parseMetricsURL reads "host:port" (http, /metrics) or an http or https
// URL (its path, /metrics when empty). The host may be empty.
func parseMetricsURL(s string) (*url.URL, error) {
	raw := s
	if !strings.Contains(s, "://") {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("want host:port or http(s)://host:port/path: %w", err)
		}
		raw = "http://" + s
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("no host:port")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = metricsPath
	}
	return u, nil
}

// metricsListenerURL is the URL to scrape for a broker whose
// metrics.listener is listener: a listener bound to every interface (an
// empty host, 0.0.0.0 or ::) is reached at brokerHost, the host the
// broker advertises to clients.
func metricsListenerURL(listener, brokerHost string) (string, error) {
	u, err := parseMetricsURL(listener)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", metricsListenerConfig, listener, err)
	}
	switch u.Hostname() {
	case "", "0.0.0.0", "::":
		if port := u.Port(); port != "" {
			u.Host = net.JoinHostPort(brokerHost, port)
		} else {
			u.Host = brokerHost
			if strings.Contains(brokerHost, ":") {
				u.Host = "[" + brokerHost + "]"
			}
		}
	}
	return u.String(), nil
}

// assignEndpoints maps the --metrics endpoints to nodes: those given with
// an id to that node, the others to the brokers without one, in id order.
// It returns the notes for endpoints left over.
func assignEndpoints(explicit []metricsEndpoint, brokers []int32) (map[int32]string, []string) {
	urls := map[int32]string{}
	for _, e := range explicit {
		if e.node >= 0 {
			urls[e.node] = e.url
		}
	}
	free := slices.DeleteFunc(slices.Clone(brokers), func(id int32) bool { _, taken := urls[id]; return taken })
	slices.Sort(free)
	var notes []string
	for _, e := range explicit {
		if e.node >= 0 {
			continue
		}
		if len(free) == 0 {
			notes = append(notes, fmt.Sprintf("--metrics %s: more endpoints than brokers; give it as ID=%s to say whose it is", e.url, e.url))
			continue
		}
		urls[free[0]] = e.url
		free = free[1:]
	}
	return urls, notes
}

// --- Gathering ---

// topSnapshot is what one scrape of the cluster saw.
type topSnapshot struct {
	At time.Time
	// Err is why the snapshot is empty: the cluster answered no Metadata.
	Err          string
	ClusterID    string
	ControllerID int32
	// Brokers are Metadata's brokers, by id.
	Brokers []kadm.BrokerDetail
	// Topics are Metadata's topics (without internal ones), by name.
	Topics []topicMeta
	// Quorum is the leader's DescribeQuorum answer; nil with QuorumErr
	// saying why.
	Quorum    *cli.QuorumDescription
	QuorumErr string
	// Nodes are the brokers and quorum members, by id, with their scrape.
	Nodes []nodeScrape
	// Notes are what else could not be gathered, a line each.
	Notes []string
}

// topicMeta is one topic as Metadata describes it.
type topicMeta struct {
	Name       string
	Partitions int
	// UnderReplicated counts partitions whose ISR is smaller than their
	// replica set; Leaderless those without a leader.
	UnderReplicated int
	Leaderless      int
}

// nodeScrape is one node's exposition, or why there is none.
type nodeScrape struct {
	ID int32
	// Addr is the broker's client listener, "" for a node that is no
	// broker in Metadata (a controller, a fenced broker).
	Addr string
	// URL is the endpoint scraped, "" when none is known.
	URL string
	// At is when the exposition arrived.
	At      time.Time
	Metrics *NodeMetrics
	// Err is why Metrics is nil.
	Err string
}

// node is the scrape of node id, or nil.
func (s *topSnapshot) node(id int32) *nodeScrape {
	if s == nil {
		return nil
	}
	i := slices.IndexFunc(s.Nodes, func(n nodeScrape) bool { return n.ID == id })
	if i < 0 {
		return nil
	}
	return &s.Nodes[i]
}

// topGatherer gathers snapshots of one cluster.
type topGatherer struct {
	cl  *kgo.Client
	adm *kadm.Client
	web *http.Client
	// bootstrap is --bootstrap-server, for messages.
	bootstrap string
	timeout   time.Duration
	// explicit are the --metrics endpoints; nil means discover them.
	explicit []metricsEndpoint
	// discovered are the endpoints found with DescribeConfigs, by broker
	// id, kept while the broker's address stays the same. A broker
	// without the config is asked again on the next frame.
	discovered map[int32]discoveredEndpoint
}

type discoveredEndpoint struct{ brokerAddr, url string }

func newTopGatherer(cl *kgo.Client, bootstrap string, explicit []metricsEndpoint, timeout time.Duration) *topGatherer {
	return &topGatherer{
		cl:         cl,
		bootstrap:  bootstrap,
		adm:        kadm.NewClient(cl),
		web:        &http.Client{Timeout: topScrapeTimeout},
		timeout:    timeout,
		explicit:   explicit,
		discovered: map[int32]discoveredEndpoint{},
	}
}

// gather takes one snapshot, bounded by g.timeout. It fails only when no
// Metadata answers.
func (g *topGatherer) gather(ctx context.Context) (*topSnapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	md, err := g.adm.Metadata(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no Metadata answer from %s within %v: %w", g.bootstrap, g.timeout, err)
		}
		return nil, fmt.Errorf("metadata from %s: %w", g.bootstrap, err)
	}
	s := &topSnapshot{At: time.Now(), ClusterID: md.Cluster, ControllerID: md.Controller}
	s.Brokers = slices.SortedFunc(slices.Values(md.Brokers), func(a, b kadm.BrokerDetail) int { return cmp.Compare(a.NodeID, b.NodeID) })
	for _, td := range md.Topics.Sorted() {
		switch {
		case td.IsInternal:
		case td.Err != nil:
			s.Notes = append(s.Notes, fmt.Sprintf("topic %s: %s", td.Topic, cli.KafkaError(td.Err, "")))
		default:
			s.Topics = append(s.Topics, topicMetaOf(td))
		}
	}
	s.Quorum, s.QuorumErr = g.describeQuorum(ctx, s.Brokers, md.Controller)
	nodes, notes := g.endpoints(ctx, s)
	s.Nodes, s.Notes = nodes, append(s.Notes, notes...)
	g.scrapeAll(ctx, s.Nodes)
	return s, nil
}

func topicMetaOf(td kadm.TopicDetail) topicMeta {
	t := topicMeta{Name: td.Topic, Partitions: len(td.Partitions)}
	for _, p := range td.Partitions {
		if len(p.ISR) < len(p.Replicas) {
			t.UnderReplicated++
		}
		if p.Leader < 0 {
			t.Leaderless++
		}
	}
	return t
}

func brokerAddr(b kadm.BrokerDetail) string {
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
}

// cli.DescribeQuorum asks the controller's broker, then the others, for
// DescribeQuorum (a broker forwards it to the quorum leader), and returns
// the first answer, or the first failure.
func (g *topGatherer) describeQuorum(ctx context.Context, brokers []kadm.BrokerDetail, controller int32) (*cli.QuorumDescription, string) {
	order := slices.Clone(brokers)
	slices.SortStableFunc(order, func(a, b kadm.BrokerDetail) int {
		return cmp.Compare(boolRank(a.NodeID != controller), boolRank(b.NodeID != controller))
	})
	var first error
	for _, b := range order {
		d, _, err := cli.DescribeQuorumWith(ctx, g.cl.Broker(int(b.NodeID)), false, brokerAddr(b))
		if err == nil {
			return d, ""
		}
		first = cmp.Or(first, fmt.Errorf("broker %d: %w", b.NodeID, err))
		if ctx.Err() != nil {
			break
		}
	}
	if first == nil {
		return nil, "no broker to ask"
	}
	return nil, first.Error()
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// endpoints lists every node the frame shows (Metadata's brokers, the
// quorum's members, the nodes named in --metrics), by id, each with the
// URL to scrape or why there is none, and notes on --metrics entries no
// node takes.
func (g *topGatherer) endpoints(ctx context.Context, s *topSnapshot) ([]nodeScrape, []string) {
	var brokerIDs []int32
	byID := map[int32]*nodeScrape{}
	add := func(id int32) *nodeScrape {
		if n, ok := byID[id]; ok {
			return n
		}
		n := &nodeScrape{ID: id}
		byID[id] = n
		return n
	}
	for _, b := range s.Brokers {
		add(b.NodeID).Addr = brokerAddr(b)
		brokerIDs = append(brokerIDs, b.NodeID)
	}
	if q := s.Quorum; q != nil {
		for _, r := range slices.Concat(q.CurrentVoters, q.Observers) {
			add(r.ReplicaID)
		}
	}
	var notes []string
	if g.explicit != nil {
		var urls map[int32]string
		urls, notes = assignEndpoints(g.explicit, brokerIDs)
		for id, u := range urls {
			add(id).URL = u
		}
		for _, n := range byID {
			if n.URL == "" {
				n.Err = "no endpoint for it in --metrics"
			}
		}
	} else {
		for _, b := range s.Brokers {
			n := byID[b.NodeID]
			n.URL, n.Err = g.discover(ctx, b)
		}
		for _, n := range byID {
			if n.Addr == "" {
				n.Err = "not a broker in Metadata, so its " + metricsListenerConfig + " cannot be asked for; pass --metrics ID=URL"
			}
		}
	}
	out := make([]nodeScrape, 0, len(byID))
	for _, n := range byID {
		out = append(out, *n)
	}
	slices.SortFunc(out, func(a, b nodeScrape) int { return cmp.Compare(a.ID, b.ID) })
	return out, notes
}

// discover is the metrics URL of broker b, from its metrics.listener
// config (DescribeConfigs sent to b itself), or why there is none.
func (g *topGatherer) discover(ctx context.Context, b kadm.BrokerDetail) (string, string) {
	addr := brokerAddr(b)
	if d, ok := g.discovered[b.NodeID]; ok && d.brokerAddr == addr {
		return d.url, ""
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(b.NodeID))
	res.ConfigNames = []string{metricsListenerConfig}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, g.cl.Broker(int(b.NodeID)))
	if err != nil {
		return "", fmt.Sprintf("DescribeConfigs for its %s: %v", metricsListenerConfig, err)
	}
	if len(resp.Resources) != 1 {
		return "", fmt.Sprintf("DescribeConfigs answered %d resources, want 1", len(resp.Resources))
	}
	r := resp.Resources[0]
	if r.ErrorCode != 0 {
		return "", fmt.Sprintf("DescribeConfigs for its %s: %s", metricsListenerConfig, cli.KafkaError(kerr.ErrorForCode(r.ErrorCode), derefString(r.ErrorMessage)))
	}
	for _, c := range r.Configs {
		if c.Name != metricsListenerConfig || c.Value == nil || *c.Value == "" {
			continue
		}
		u, err := metricsListenerURL(*c.Value, b.Host)
		if err != nil {
			return "", err.Error()
		}
		g.discovered[b.NodeID] = discoveredEndpoint{brokerAddr: addr, url: u}
		return u, ""
	}
	return "", "the broker has no " + metricsListenerConfig + " config (set it, or pass --metrics)"
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// scrapeAll scrapes every node with a URL, concurrently.
func (g *topGatherer) scrapeAll(ctx context.Context, nodes []nodeScrape) {
	var wg sync.WaitGroup
	for i := range nodes {
		if nodes[i].URL == "" {
			continue
		}
		wg.Go(func() {
			n := &nodes[i]
			m, at, err := g.scrape(ctx, n.URL)
			if err != nil {
				n.Err = fmt.Sprintf("%s: %v", n.URL, err)
				return
			}
			n.Metrics, n.At = m, at
		})
	}
	wg.Wait()
}

// scrape reads one node's exposition and when it arrived.
func (g *topGatherer) scrape(ctx context.Context, u string) (*NodeMetrics, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, time.Time{}, err
	}
	req.Header.Set("Accept", expositionAccept)
	resp, err := g.web.Do(req)
	if ue := (*url.Error)(nil); errors.As(err, &ue) {
		err = ue.Err // the URL is in the note already
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	defer resp.Body.Close()
	at := time.Now()
	if resp.StatusCode != http.StatusOK {
		return nil, time.Time{}, fmt.Errorf("answered %s", resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxExpositionBytes+1))
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(body) > maxExpositionBytes {
		return nil, time.Time{}, fmt.Errorf("exposition larger than %d MiB", maxExpositionBytes>>20)
	}
	m, err := ParseExposition(bytes.NewReader(body))
	return m, at, err
}
