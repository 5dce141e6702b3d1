"""Drives python3-confluent-kafka (librdkafka) for interop/librdkafka_test.go.

Usage: confluent_interop.py produce|consume|group|transactions|metadata, with a JSON request on
stdin and a JSON answer on stdout. Bytes travel as base64; null stays null.
Every wait is bounded by the request's "timeout" (seconds); on any failure
the script prints the reason to stderr and exits 1.

produce:  {"bootstrap", "topic", "config": {...}, "records": [rec...]}
          -> {"records": [{"partition", "offset"}...]} in input order
consume:  {"bootstrap", "topic", "config": {...}, "start": {"<p>": offset},
           "count"} -> {"records": [rec...]} in arrival order
group:    {"bootstrap", "topic", "group", "idle"} -> {"records": [{"partition",
           "offset"}...]}: a member of the group (subscribe, auto commit),
           until no record came for "idle" seconds after its first one
transactions: {"bootstrap", "topic", "transactional_id", "transactions":
           [{"commit": bool, "values": [b64...]}...], "pause_at": [i...],
           "pause_dir"} -> {"outcomes": ["committed" | "aborted"...]}: a
           transactional Producer runs each transaction on partition 0,
           committing or aborting it; before ending transaction i of
           pause_at it creates pause_dir/paused-i and waits for
           pause_dir/resume-i (the test injects a fault meanwhile). A commit
           that requires an abort is aborted
metadata: {"bootstrap", "topic"} -> {"cluster_id", "controller_id",
           "brokers": [{"id", "host", "port"}], "partitions": [{"id",
           "leader", "replicas", "isrs", "error"}]}

rec: {"partition", "offset", "key", "value", "headers": [[k, v]...],
      "timestamp": ms or null, "timestamp_type"}
"""

import base64
import json
import os
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def b64(b):
    return None if b is None else base64.b64encode(b).decode("ascii")


def unb64(s):
    return None if s is None else base64.b64decode(s)


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def produce(req):
    conf = {"bootstrap.servers": req["bootstrap"]}
    conf.update(req.get("config", {}))
    p = Producer(conf)
    results = [None] * len(req["records"])
    errors = []

    def delivered(i):
        def cb(err, msg):
            if err is not None:
                errors.append("record %d: %s" % (i, err))
            else:
                results[i] = {"partition": msg.partition(), "offset": msg.offset()}
        return cb

    for i, r in enumerate(req["records"]):
        kwargs = {
            "partition": r["partition"],
            "key": unb64(r["key"]),
            "value": unb64(r["value"]),
            "on_delivery": delivered(i),
        }
        if r.get("headers"):
            kwargs["headers"] = [(k, unb64(v)) for k, v in r["headers"]]
        if r.get("timestamp"):
            kwargs["timestamp"] = r["timestamp"]
        p.produce(req["topic"], **kwargs)
        p.poll(0)
    left = p.flush(req["timeout"])
    if left:
        fail("%d records not delivered within %ss" % (left, req["timeout"]))
    if errors:
        fail("; ".join(errors))
    return {"records": results}


def poll(c, what):
    """Polls consumer c once: a record, or None for none yet or the end
    of a partition; an error fails the request."""
    msg = c.poll(0.2)
    if msg is None:
        return None
    if msg.error() is not None:
        if msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
            return None
        fail("%s: %s" % (what, msg.error()))
    return msg


def consume(req):
    conf = {
        "bootstrap.servers": req["bootstrap"],
        # confluent-kafka's Consumer needs a group.id even when, as here,
        # partitions are assigned by hand and no group is joined.
        "group.id": "strata-interop-unused",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
    }
    conf.update(req.get("config", {}))
    c = Consumer(conf)
    c.assign([TopicPartition(req["topic"], int(p), off) for p, off in sorted(req["start"].items())])
    out = []
    deadline = time.monotonic() + req["timeout"]
    while len(out) < req["count"]:
        if time.monotonic() > deadline:
            fail("read %d of %d records within %ss" % (len(out), req["count"], req["timeout"]))
        msg = poll(c, "consume")
        if msg is None:
            continue
        ts_type, ts = msg.timestamp()
        out.append({
            "partition": msg.partition(),
            "offset": msg.offset(),
            "key": b64(msg.key()),
            "value": b64(msg.value()),
            "headers": [[k, b64(v)] for k, v in (msg.headers() or [])],
            "timestamp": ts,
            "timestamp_type": ts_type,
        })
    c.close()
    return {"records": out}


def group(req):
    c = Consumer({
        "bootstrap.servers": req["bootstrap"],
        "group.id": req["group"],
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 100,
        "session.timeout.ms": 6000,
    })
    c.subscribe([req["topic"]])
    out = []
    deadline = time.monotonic() + req["timeout"]
    last = None
    while True:
        now = time.monotonic()
        if now > deadline:
            fail("group member still reading after %ss" % req["timeout"])
        if last is not None and now - last > req["idle"]:
            break
        msg = poll(c, "group consume")
        if msg is None:
            continue
        last = time.monotonic()
        out.append({"partition": msg.partition(), "offset": msg.offset()})
    c.close()  # commits the stored offsets
    return {"records": out}


def transactions(req):
    p = Producer({
        "bootstrap.servers": req["bootstrap"],
        "transactional.id": req["transactional_id"],
        "transaction.timeout.ms": 30000,
    })
    pause_at = set(req.get("pause_at", []))
    outcomes = []
    try:
        p.init_transactions(req["timeout"])
        for i, txn in enumerate(req["transactions"]):
            p.begin_transaction()
            for v in txn["values"]:
                p.produce(req["topic"], value=unb64(v), partition=0)
            left = p.flush(req["timeout"])
            if left:
                fail("transaction %d: %d records not delivered within %ss" % (i, left, req["timeout"]))
            if i in pause_at:
                pause(req["pause_dir"], i, req["timeout"])
            outcomes.append(end_transaction(p, txn["commit"], req["timeout"]))
    except KafkaException as e:
        fail("transactions: %s" % e)
    return {"outcomes": outcomes}


def pause(directory, i, timeout):
    """Tells the test that transaction i's records are delivered (the file
    paused-i) and waits for it to inject its fault (the file resume-i)."""
    open("%s/paused-%d" % (directory, i), "w").close()
    deadline = time.monotonic() + timeout
    while not os.path.exists("%s/resume-%d" % (directory, i)):
        if time.monotonic() > deadline:
            fail("transaction %d: not resumed within %ss" % (i, timeout))
        time.sleep(0.05)


def end_transaction(p, commit, timeout):
    """Commits or aborts the open transaction and returns its outcome. A
    retriable error retries the same call (librdkafka's documented use); an
    error that requires an abort aborts; a fatal one raises."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if commit:
                p.commit_transaction(timeout)
                return "committed"
            p.abort_transaction(timeout)
            return "aborted"
        except KafkaException as e:
            err = e.args[0]
            if err.fatal() or time.monotonic() > deadline:
                raise
            if err.txn_requires_abort():
                commit = False
            elif not err.retriable():
                raise
            sys.stderr.write("end of transaction: %s; %s\n" % (err, "retrying" if commit else "aborting"))


def metadata(req):
    p = Producer({"bootstrap.servers": req["bootstrap"]})
    try:
        md = p.list_topics(req["topic"], timeout=req["timeout"])
    except KafkaException as e:
        fail("list_topics: %s" % e)
    t = md.topics[req["topic"]]
    if t.error is not None:
        fail("topic %s: %s" % (req["topic"], t.error))
    return {
        "cluster_id": md.cluster_id,
        "controller_id": md.controller_id,
        "brokers": sorted(
            ({"id": b.id, "host": b.host, "port": b.port} for b in md.brokers.values()),
            key=lambda b: b["id"]),
        "partitions": sorted(
            ({"id": q.id, "leader": q.leader, "replicas": list(q.replicas), "isrs": list(q.isrs),
              "error": None if q.error is None else str(q.error)} for q in t.partitions.values()),
            key=lambda q: q["id"]),
    }


def main():
    modes = {"produce": produce, "consume": consume, "group": group, "transactions": transactions, "metadata": metadata}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        fail("usage: confluent_interop.py produce|consume|group|transactions|metadata < request.json")
    req = json.load(sys.stdin)
    json.dump(modes[sys.argv[1]](req), sys.stdout)


if __name__ == "__main__":
    main()
