// MQTT.js as a durable consumer of an append channel, for
// conformance/append_test.go.
//
//   node append.js <host:port> <prefix> <channel>
//
// The channel's filter holds <prefix>/#. A publisher writes three records; a
// consumer with a session that outlives its connection replays them from the
// floor, acknowledges them and leaves with a DISCONNECT; two more are
// published while it is away; it reconnects with clean: false and, without
// subscribing again, is served those two; then it seeks to 0 with a Response
// Topic and Correlation Data and is served the whole channel again after the
// reply. Prints one JSON object saying what MQTT.js observed; the Go test
// holds the assertions.
'use strict';

const mqtt = require('mqtt');
const { collect } = require('./collect');

const [addr, prefix, channel] = process.argv.slice(2);
if (!addr || !prefix || !channel) {
  console.error('usage: node append.js <host:port> <prefix> <channel>');
  process.exit(2);
}

// connect resolves with the client and its CONNACK once connected; early,
// when set, is how many messages to collect from the moment the client
// exists (a resumed session is served right behind its CONNACK, before an
// await after the connect could listen).
function connect(id, opts, early) {
  const client = mqtt.connect('mqtt://' + addr, {
    clientId: id,
    protocolVersion: 5,
    reconnectPeriod: 0,
    connectTimeout: 10000,
    ...opts,
  });
  const messages = early ? collect(client, early, 'served after the CONNACK') : null;
  return new Promise((resolve, reject) => {
    client.once('connect', (connack) => resolve({ client, connack, messages }));
    client.once('error', reject);
  });
}

async function run() {
  const out = {};
  const id = `${prefix}-consumer`.replace(/\//g, '-');
  const durable = { properties: { sessionExpiryInterval: 3600 } };
  const { client: pub } = await connect(`${prefix}-pub`.replace(/\//g, '-'), {});
  for (const p of ['r1', 'r2', 'r3']) {
    await pub.publishAsync(`${prefix}/x`, p, { qos: 1 });
  }

  let { client: consumer, connack } = await connect(id, { clean: true, ...durable });
  const replay = collect(consumer, 3, 'replay from the floor');
  await consumer.subscribeAsync(`${prefix}/#`, { qos: 1 });
  out.replay = await replay;
  // A round trip after the last delivery: its PUBACK has been sent before
  // this SUBACK comes back, so the DISCONNECT follows every acknowledgement.
  await consumer.subscribeAsync(`${prefix}/flush`, { qos: 0 });
  await consumer.endAsync();

  for (const p of ['a1', 'a2']) {
    await pub.publishAsync(`${prefix}/x`, p, { qos: 1 });
  }
  let resumed;
  ({ client: consumer, connack, messages: resumed } = await connect(id, { clean: false, ...durable }, 2));
  out.sessionPresent = connack.sessionPresent;
  out.resumed = await resumed;

  const replyTopic = `reply/${prefix}`;
  const afterSeek = collect(consumer, 6, 'seek reply and replay');
  await consumer.publishAsync(`$saguin/consumer/${channel}/seek`, '0', {
    qos: 1,
    properties: { responseTopic: replyTopic, correlationData: Buffer.from('seek-1') },
  });
  out.seek = await afterSeek;

  await Promise.all([pub.endAsync(), consumer.endAsync()]);
  return out;
}

run().then(
  (out) => console.log(JSON.stringify(out)),
  (err) => {
    console.log(JSON.stringify({ error: String(err && err.stack ? err.stack : err) }));
    process.exit(1);
  },
);
