// kafkajs against a secured Strata node, for interop/secure_kafkajs_test.go.
// Usage: node secure.js < request.json, where the request is
//   {"broker", "topic", "group", "ssl": {"ca", "cert", "key"} (PEM file
//    paths; cert and key optional), "sasl": {"mechanism", "username",
//    "password"} or null, "values": [...]}
// The client produces the values to partition 0 of topic, then a consumer in
// group reads them back from the beginning and commits. It prints one JSON
// object: {"error": null, "values", "committed"}, or {"error": <the kafkajs
// error's type (a broker error code name) or name>, "message"} when the
// broker refuses. Any other failure exits non-zero.
'use strict';
const fs = require('fs');
const { Kafka, logLevel } = require('kafkajs');

async function main() {
  const req = JSON.parse(fs.readFileSync(0, 'utf8'));
  const ssl = { ca: [fs.readFileSync(req.ssl.ca, 'utf8')] };
  if (req.ssl.cert) {
    ssl.cert = fs.readFileSync(req.ssl.cert, 'utf8');
    ssl.key = fs.readFileSync(req.ssl.key, 'utf8');
  }
  const kafka = new Kafka({
    clientId: 'strata-interop-kafkajs-secure',
    brokers: [req.broker],
    ssl,
    sasl: req.sasl || undefined,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 5000,
    retry: { retries: 2, initialRetryTime: 100 },
  });
  const producer = kafka.producer();
  try {
    await producer.connect();
    await producer.send({ topic: req.topic, acks: -1, messages: req.values.map((value) => ({ value, partition: 0 })) });
  } catch (e) {
    return refusal(e);
  } finally {
    await producer.disconnect();
  }

  const consumer = kafka.consumer({ groupId: req.group, maxWaitTimeInMs: 200 });
  const values = [];
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: req.topic, fromBeginning: true });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`read ${values.length} of ${req.values.length} records in 20 s`)), 20000);
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          values.push(message.value.toString());
          if (values.length === req.values.length) {
            clearTimeout(timer);
            await consumer.commitOffsets([{ topic: req.topic, partition: 0, offset: String(Number(message.offset) + 1) }]);
            resolve();
          }
        },
      }).catch(reject);
    });
  } catch (e) {
    return refusal(e);
  } finally {
    await consumer.disconnect();
  }
  const admin = kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchOffsets({ groupId: req.group, topics: [req.topic] });
  await admin.disconnect();
  return { error: null, values, committed: Number(offsets[0].partitions[0].offset) };
}

// refusal is the answer for a refused client: kafkajs wraps a broker's error
// code in a KafkaJSProtocolError whose type is the code's name, sometimes
// inside a KafkaJSNumberOfRetriesExceeded or KafkaJSNonRetriableError.
function refusal(e) {
  let err = e;
  while (err.cause && !err.type) err = err.cause;
  if (!err.type && !/SASL|Authentication/i.test(err.name) && !/SASL/.test(err.message)) throw e;
  return { error: err.type || err.name, message: String(err.message) };
}

main().then(
  (out) => { process.stdout.write(JSON.stringify(out)); },
  (e) => { console.error(e); process.exit(1); },
);
