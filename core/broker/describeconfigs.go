package broker

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-log/strata/core/meta"
	"github.com/strata-log/strata/core/replica"
)

// maxDescribeConfigsResources bounds the resources one DescribeConfigs
// answers, in resources. Every topic resource answers every key of the
// config table, so a request of 100,000 tiny names would otherwise build
// a response of hundreds of megabytes; kadm describes all topics in one
// request, so the bound sits far above the topics of any cluster Strata
// runs today. Resources past it get INVALID_REQUEST.
const maxDescribeConfigsResources = 10_000

// configEntry is one described config key, before it is shaped to the
// request's version.
type configEntry struct {
	name      string
	value     *string
	source    kmsg.ConfigSource
	readOnly  bool
	sensitive bool
	typ       kmsg.ConfigType
	doc       string
	// synonyms are the key's values from every source that sets it, the
	// effective one first (Kafka's order).
	synonyms []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym
}

// handleDescribeConfigs answers DescribeConfigs for topics (every row of
// the table of topic configs, core/config, resolved by
// replica.ResolveTopicConfigs, the same function that configures the
// partitions), for this broker (its
// static keys and the image's dynamic values) and for the cluster-wide
// default broker resource (empty name: the image's dynamic defaults).
func handleDescribeConfigs(b *Broker, r *request) {
	req := r.body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.image()
	if img == nil {
		img = meta.Empty()
	}
	resp.Resources = make([]kmsg.DescribeConfigsResponseResource, 0, len(req.Resources))
	for i, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var entries []configEntry
		var err error
		if i >= maxDescribeConfigsResources {
			err = fmt.Errorf("%w: a DescribeConfigs request may name at most %d resources", errInvalidRequest, maxDescribeConfigsResources)
		} else if e := b.configResourceAuth(r, kmsg.ACLOperationDescribeConfigs, res.ResourceType, res.ResourceName); e != nil {
			err = e
		} else {
			entries, err = b.describeResource(img, res.ResourceType, res.ResourceName)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = b.code(err), errorMessage(err)
			rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		} else {
			rr.Configs = shapeConfigs(req, res.ConfigNames, entries)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	r.respond(resp)
}

// describeResource describes one resource, or says why it cannot.
func (b *Broker) describeResource(img *meta.Image, typ kmsg.ConfigResourceType, name string) ([]configEntry, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return b.describeTopicConfigs(img, name)
	case kmsg.ConfigResourceTypeBroker:
		switch name {
		case "":
			return b.describeClusterDefaults(img), nil
		case strconv.Itoa(int(b.cfg.NodeID)):
			return b.describeBrokerConfigs(img), nil
		}
		return nil, fmt.Errorf("%w: unexpected broker id, expected %d or the empty string, but received %s",
			errInvalidRequest, b.cfg.NodeID, quoteName(name))
	case kmsg.ConfigResourceTypeBrokerLogger:
		return nil, fmt.Errorf("%w: broker loggers are not described by Strata", errInvalidRequest)
	}
	return nil, fmt.Errorf("%w: unsupported config resource type %d", errInvalidRequest, int8(typ))
}

// describeTopicConfigs describes every topic config key of a topic.
func (b *Broker) describeTopicConfigs(img *meta.Image, topic string) ([]configEntry, error) {
	if !meta.ValidTopicName(topic) {
		return nil, fmt.Errorf("%w: %s", errInvalidTopic, quoteName(topic))
	}
	if _, ok := img.TopicByName(topic); !ok {
		return nil, fmt.Errorf("%w: topic %s does not exist", replica.ErrUnknownTopicOrPartition, quoteName(topic))
	}
	var values []replica.TopicConfigValue
	if b.cfg.Partitions != nil {
		values = b.cfg.Partitions.ResolveTopicConfigs(img, topic)
	} else {
		values = replica.Config{NodeID: b.cfg.NodeID}.ResolveTopicConfigs(img, topic)
	}
	entries := make([]configEntry, len(values))
	for i, v := range values {
		value := v.Effective.Value
		e := configEntry{name: v.Def.Name, value: &value, source: v.Effective.Source, typ: v.Def.Type, doc: v.Def.Doc}
		// The effective value first, then the rest in order (a value the
		// partitions skip stays listed where it is set).
		e.synonyms = append(e.synonyms, synonym(v.Effective.Name, &value, v.Effective.Source))
		for _, s := range v.Synonyms {
			if s != v.Effective {
				sv := s.Value
				e.synonyms = append(e.synonyms, synonym(s.Name, &sv, s.Source))
			}
		}
		entries[i] = e
	}
	return entries, nil
}

// describeBrokerConfigs describes this broker's keys: each static key,
// overridden by the image's dynamic values for this broker and then the
// cluster-wide defaults, plus dynamic keys that are not static ones.
// Broker configs cannot be altered yet (the controller takes topic
// resources only), so every key is read-only.
func (b *Broker) describeBrokerConfigs(img *meta.Image) []configEntry {
	self := meta.ConfigResource{Type: meta.ConfigResourceBroker, Name: strconv.Itoa(int(b.cfg.NodeID))}
	static := slices.SortedFunc(slices.Values(b.cfg.StaticConfigs), func(x, y StaticConfig) int { return cmp.Compare(x.Name, y.Name) })
	static = slices.CompactFunc(static, func(x, y StaticConfig) bool { return x.Name == y.Name })
	var names []string
	for _, s := range static {
		names = append(names, s.Name)
	}
	for _, r := range []meta.ConfigResource{self, meta.ClusterConfigResource} {
		for _, e := range img.Configs(r) {
			names = append(names, e.Key)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	entries := make([]configEntry, 0, len(names))
	for _, name := range names {
		e := configEntry{name: name, readOnly: true, typ: kmsg.ConfigTypeString, source: kmsg.ConfigSourceDefaultConfig}
		var sc *StaticConfig
		if i, ok := slices.BinarySearchFunc(static, name, func(s StaticConfig, n string) int { return cmp.Compare(s.Name, n) }); ok {
			sc = &static[i]
			e.typ, e.doc, e.sensitive = sc.Type, sc.Doc, sc.Sensitive
		}
		add := func(value string, source kmsg.ConfigSource) {
			v := value
			if e.value == nil {
				e.value, e.source = &v, source
			}
			e.synonyms = append(e.synonyms, synonym(name, &v, source))
		}
		if v, ok := img.ConfigValue(self, name); ok {
			add(v, kmsg.ConfigSourceDynamicBrokerConfig)
		}
		if v, ok := img.ConfigValue(meta.ClusterConfigResource, name); ok {
			add(v, kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		}
		if sc != nil && sc.Set && sc.Value != "" {
			add(sc.Value, kmsg.ConfigSourceStaticBrokerConfig)
		}
		if sc != nil && sc.Default != "" {
			add(sc.Default, kmsg.ConfigSourceDefaultConfig)
		}
		if e.sensitive {
			e.value = nil
			for i := range e.synonyms {
				e.synonyms[i].Value = nil
			}
		}
		entries = append(entries, e)
	}
	return entries
}

// describeClusterDefaults describes the cluster-wide default broker
// resource: only the keys set dynamically for the whole cluster, as
// Kafka answers it.
func (b *Broker) describeClusterDefaults(img *meta.Image) []configEntry {
	cfgs := img.Configs(meta.ClusterConfigResource)
	entries := make([]configEntry, 0, len(cfgs))
	for _, c := range cfgs {
		v := c.Value
		e := configEntry{name: c.Key, value: &v, source: kmsg.ConfigSourceDynamicDefaultBrokerConfig, readOnly: true, typ: kmsg.ConfigTypeString}
		if i := slices.IndexFunc(b.cfg.StaticConfigs, func(s StaticConfig) bool { return s.Name == c.Key }); i >= 0 {
			e.typ, e.doc = b.cfg.StaticConfigs[i].Type, b.cfg.StaticConfigs[i].Doc
		}
		e.synonyms = append(e.synonyms, synonym(c.Key, &v, e.source))
		entries = append(entries, e)
	}
	return entries
}

func synonym(name string, value *string, source kmsg.ConfigSource) kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
	s.Name, s.Value, s.Source = name, value, source
	return s
}

// shapeConfigs filters entries by the requested names (none: all, as
// Kafka treats null and empty) and shapes them to the request: synonyms
// only when asked for, documentation only from version 3 when asked for.
func shapeConfigs(req *kmsg.DescribeConfigsRequest, names []string, entries []configEntry) []kmsg.DescribeConfigsResponseResourceConfig {
	var wanted map[string]bool // only looked up
	if len(names) > 0 {
		wanted = make(map[string]bool, len(names))
		for _, n := range names {
			wanted[n] = true
		}
	}
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(entries))
	for _, e := range entries {
		if wanted != nil && !wanted[e.name] {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.ReadOnly, c.IsSensitive = e.name, e.value, e.readOnly, e.sensitive
		c.Source = e.source
		c.IsDefault = e.source == kmsg.ConfigSourceDefaultConfig // v0 only
		c.ConfigType = e.typ                                     // v3+
		if req.IncludeSynonyms {
			c.ConfigSynonyms = e.synonyms
		}
		if req.IncludeDocumentation && e.doc != "" {
			doc := e.doc
			c.Documentation = &doc
		}
		out = append(out, c)
	}
	return out
}
