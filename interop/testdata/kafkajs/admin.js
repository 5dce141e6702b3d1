// kafkajs's admin client against a Strata node, for interop/kafkajs_test.go.
// Usage: node admin.js HOST:PORT PREFIX. Prints one JSON object of what it
// saw on stdout; any unexpected failure exits non-zero with the error on
// stderr. kafkajs's admin.createTopics and deleteTopics go to Metadata's
// controller id ("Broker -1 not found in the cached metadata" when it was -1).
'use strict';
const { Kafka, logLevel, ConfigResourceTypes } = require('kafkajs');

const [broker, prefix] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: 'strata-interop-kafkajs',
  brokers: [broker],
  logLevel: logLevel.ERROR,
  retry: { retries: 8, initialRetryTime: 100 },
});

async function refused(what, f) {
  try {
    await f();
  } catch (e) {
    const first = (e.errors && e.errors[0]) || e;
    return { what, type: first.type || e.type || e.name, message: String(first.message) };
  }
  throw new Error(`${what} was accepted`);
}

async function main() {
  const out = {};
  const topic = `${prefix}-orders`;
  const group = `${prefix}-group`;
  const admin = kafka.admin();
  await admin.connect();

  const cluster = await admin.describeCluster();
  out.controller = cluster.controller;
  out.brokers = cluster.brokers.map((b) => b.nodeId);

  out.created = await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions: 3, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
  });
  out.createdAgain = await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }] });
  out.refusedConfig = await refused('segment.bytes=14', () =>
    admin.createTopics({ topics: [{ topic: `${prefix}-tiny`, numPartitions: 1, replicationFactor: 1, configEntries: [{ name: 'segment.bytes', value: '14' }] }] }));
  out.refusedInternal = await refused('__transaction_state', () =>
    admin.createTopics({ topics: [{ topic: '__transaction_state', numPartitions: 1, replicationFactor: 1 }] }));
  out.topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix)).sort();
  const md = await admin.fetchTopicMetadata({ topics: [topic] });
  out.partitions = md.topics[0].partitions.length;

  const describe = async () => {
    const r = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'segment.bytes'] }],
    });
    const m = {};
    for (const e of r.resources[0].configEntries) m[e.configName] = e.configValue;
    return m;
  };
  out.configs = await describe();
  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '86400000' }, { name: 'segment.bytes', value: '1048576' }] }],
  });
  out.altered = await describe();
  await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] });
  out.partitionsAfter = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length;

  // A consumer group: consume what a producer wrote, commit, then list,
  // describe, fetch the offsets, leave and delete the group.
  const producer = kafka.producer();
  await producer.connect();
  const values = Array.from({ length: 20 }, (_, i) => ({ value: `v${i}`, partition: i % 4 }));
  await producer.send({ topic, messages: values });
  await producer.disconnect();
  const consumer = kafka.consumer({ groupId: group, sessionTimeout: 10000, heartbeatInterval: 500, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  const seen = [];
  let resolveAll;
  const all = new Promise((r) => { resolveAll = r; });
  await consumer.run({
    autoCommit: true,
    autoCommitInterval: 100,
    eachMessage: async ({ message }) => {
      seen.push(message.value.toString());
      if (seen.length === values.length) resolveAll();
    },
  });
  await Promise.race([all, new Promise((_, rej) => setTimeout(() => rej(new Error(`consumed ${seen.length} of ${values.length}`)), 20000))]);
  out.consumed = seen.length;
  out.groups = (await admin.listGroups()).groups.filter((g) => g.groupId === group).map((g) => g.protocolType);
  const described = await admin.describeGroups([group]);
  out.groupState = described.groups[0].state;
  out.members = described.groups[0].members.length;
  await consumer.disconnect(); // commits what it consumed, then leaves
  const offsets = await admin.fetchOffsets({ groupId: group, topics: [topic] });
  out.committed = offsets[0].partitions.map((p) => Number(p.offset)).reduce((a, b) => a + b, 0);
  await admin.deleteGroups([group]);
  out.groupsAfter = (await admin.listGroups()).groups.filter((g) => g.groupId === group).length;

  await admin.deleteTopics({ topics: [topic] });
  out.topicsAfter = (await admin.listTopics()).filter((t) => t === topic).length;
  await admin.disconnect();
  process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0)); // kafkajs's timers would hold the process
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
