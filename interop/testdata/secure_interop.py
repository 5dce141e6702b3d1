"""Drives a Python Kafka client against a secured node for interop/secure_python_test.go.

Usage: secure_interop.py confluent|kafka-python, with a JSON request on stdin and
a JSON answer on stdout:

  {"bootstrap", "topic", "group", "config": {...}, "values": [b64...], "timeout",
   "max_block": seconds a kafka-python call may wait for metadata (default timeout)}
  -> {"error": null, "offsets": [...], "values": [b64...], "committed": n}
     or {"error": "<the client's name for it>", "message": "...", "log": [...],
         "consume_error": "<kafka-python: the consumer's, after a producer's error>"}

The client produces the values to partition 0 of topic, then a consumer in
group reads them back from the beginning (partition assigned by hand) and
commits synchronously. config holds the client's own security settings
(librdkafka's dotted names for confluent, kafka-python's keyword arguments).
A refusal by the broker is an answer, not a failure: "error" names it as the
client reports it (a librdkafka error code name such as
TOPIC_AUTHORIZATION_FAILED or _AUTHENTICATION; a kafka-python exception class
name), and "log" holds the client's error-level log lines. The script exits 1
only when it cannot run.
"""

import base64
import json
import logging
import sys
import time


def b64(b):
    return None if b is None else base64.b64encode(b).decode("ascii")


def unb64(s):
    return None if s is None else base64.b64decode(s)


def confluent(req):
    import confluent_kafka
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    client_errors = []

    def on_error(err):
        client_errors.append(err)

    conf = {"bootstrap.servers": req["bootstrap"], "error_cb": on_error}
    conf.update(req["config"])
    p = Producer(conf)
    offsets = [None] * len(req["values"])
    delivery_errors = []

    def delivered(i):
        def cb(err, msg):
            if err is not None:
                delivery_errors.append(err)
            else:
                offsets[i] = msg.offset()
        return cb

    for i, v in enumerate(req["values"]):
        p.produce(req["topic"], value=unb64(v), partition=0, on_delivery=delivered(i))
    deadline = time.monotonic() + req["timeout"]
    while len(p) > 0 and time.monotonic() < deadline:
        p.poll(0.1)
        auth = [e for e in client_errors if e.code() == confluent_kafka.KafkaError._AUTHENTICATION]
        if auth:
            # librdkafka retries the authentication for ever; its first
            # failure is the answer.
            p.purge()
            p.poll(0)
            return {"error": auth[0].name(), "message": auth[0].str()}
    if delivery_errors:
        return {"error": delivery_errors[0].name(), "message": delivery_errors[0].str()}
    if len(p) > 0:
        return {"error": "timeout", "message": "%d records not delivered; client errors: %s" % (len(p), client_errors)}

    cconf = {"bootstrap.servers": req["bootstrap"], "group.id": req["group"], "enable.auto.commit": False,
             "error_cb": on_error}
    cconf.update(req["config"])
    c = Consumer(cconf)
    c.assign([TopicPartition(req["topic"], 0, confluent_kafka.OFFSET_BEGINNING)])
    values = []
    while len(values) < len(req["values"]):
        if time.monotonic() > deadline:
            return {"error": "timeout", "message": "read %d of %d records; client errors: %s" % (
                len(values), len(req["values"]), client_errors)}
        msg = c.poll(0.2)
        if msg is None:
            continue
        if msg.error() is not None:
            if msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                continue
            return {"error": msg.error().name(), "message": msg.error().str()}
        values.append(b64(msg.value()))
    try:
        committed = c.commit(asynchronous=False)
    except KafkaException as e:
        return {"error": e.args[0].name(), "message": e.args[0].str()}
    c.close()
    return {"error": None, "offsets": offsets, "values": values, "committed": committed[0].offset}


class Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def kafka_python(req):
    import kafka
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import KafkaError

    lines = Lines()
    logging.getLogger("kafka").addHandler(lines)
    logging.getLogger("kafka").setLevel(logging.ERROR)
    timeout = req["timeout"]
    offsets = []
    try:
        p = KafkaProducer(bootstrap_servers=req["bootstrap"], acks="all",
                          max_block_ms=req.get("max_block", timeout) * 1000, **req["config"])
        for v in req["values"]:
            md = p.send(req["topic"], value=unb64(v), partition=0).get(timeout)
            offsets.append(md.offset)
        p.close(timeout)
    except KafkaError as e:
        # The consumer's answer too: kafka-python's producer and consumer
        # meet a refusal in different requests.
        return {"error": type(e).__name__, "message": str(e), "log": lines.lines,
                "consume_error": kafka_python_consume(req, req["group"], KafkaConsumer, TopicPartition, KafkaError)[1]}
    values, err = kafka_python_consume(req, req["group"], KafkaConsumer, TopicPartition, KafkaError)
    if err is not None:
        return {"error": err, "log": lines.lines}
    values["offsets"] = offsets
    values["error"] = None
    values["version"] = kafka.__version__
    return values


def kafka_python_consume(req, group, KafkaConsumer, TopicPartition, KafkaError):
    """Reads the values back, in group (committing) if not None: ({"values",
    "committed"}, None), or (None, the exception's class name)."""
    try:
        c = KafkaConsumer(bootstrap_servers=req["bootstrap"], group_id=group, enable_auto_commit=False,
                          request_timeout_ms=req["timeout"] * 1000 + 1000, **req["config"])
        tp = TopicPartition(req["topic"], 0)
        c.assign([tp])
        c.seek(tp, 0)  # the topic's start
        values = []
        deadline = time.monotonic() + req.get("max_block", req["timeout"])
        while len(values) < len(req["values"]):
            if time.monotonic() > deadline:
                return None, "timeout"
            for msgs in c.poll(200).values():
                values.extend(b64(m.value) for m in msgs)
        committed = None
        if group is not None:
            c.commit()
            committed = c.committed(tp)
        c.close()
    except KafkaError as e:
        return None, type(e).__name__
    return {"values": values, "committed": committed}, None


def main():
    clients = {"confluent": confluent, "kafka-python": kafka_python}
    if len(sys.argv) != 2 or sys.argv[1] not in clients:
        print("usage: secure_interop.py confluent|kafka-python < request.json", file=sys.stderr)
        sys.exit(1)
    req = json.load(sys.stdin)
    json.dump(clients[sys.argv[1]](req), sys.stdout)


if __name__ == "__main__":
    main()
