// MQTT.js reading a latest channel, for conformance/latest_test.go.
//
//   node latest.js <host:port> <prefix>
//
// The channel's filter holds <prefix>/#. A publisher sets <prefix>/a and
// <prefix>/b, then deletes <prefix>/b; a reader subscribing with
// saguin-deletions gets the current state (a's value and b's tombstone); the
// publisher then deletes <prefix>/a while the reader listens; a third client
// reads <prefix>/c with a point read, carrying Correlation Data. Prints one JSON object
// saying what MQTT.js observed; the Go test holds the assertions.
'use strict';

const mqtt = require('mqtt');
const { collect } = require('./collect');

const [addr, prefix] = process.argv.slice(2);
if (!addr || !prefix) {
  console.error('usage: node latest.js <host:port> <prefix>');
  process.exit(2);
}

function connect(id) {
  return mqtt.connectAsync('mqtt://' + addr, {
    clientId: id,
    protocolVersion: 5,
    reconnectPeriod: 0,
    connectTimeout: 10000,
  });
}

async function run() {
  const out = {};
  const pub = await connect(`${prefix}-pub`.replace(/\//g, '-'));
  await pub.publishAsync(`${prefix}/a`, 'open', { qos: 1 });
  await pub.publishAsync(`${prefix}/b`, '21.5', { qos: 1 });
  await pub.publishAsync(`${prefix}/b`, '', { qos: 1 });

  const reader = await connect(`${prefix}-reader`.replace(/\//g, '-'));
  const state = collect(reader, 2, 'state pass');
  await reader.subscribeAsync(`${prefix}/#`, {
    qos: 1,
    properties: { userProperties: { 'saguin-deletions': '' } },
  });
  out.state = await state;

  const change = collect(reader, 1, 'live deletion');
  await pub.publishAsync(`${prefix}/a`, '', { qos: 1 });
  out.deletion = (await change)[0];

  await pub.publishAsync(`${prefix}/c`, 'closed', { qos: 1 });
  const asker = await connect(`${prefix}-asker`.replace(/\//g, '-'));
  // Not subscribed to its Response Topic: the reply is written to the
  // asking connection, never published.
  const replyTopic = `reply/${prefix}`;
  const reply = collect(asker, 1, 'point read reply');
  await asker.publishAsync('$saguin/kv/get', `${prefix}/c`, {
    qos: 1,
    properties: { responseTopic: replyTopic, correlationData: Buffer.from('req-7') },
  });
  out.pointRead = (await reply)[0];

  await Promise.all([pub.endAsync(), reader.endAsync(), asker.endAsync()]);
  return out;
}

run().then(
  (out) => console.log(JSON.stringify(out)),
  (err) => {
    console.log(JSON.stringify({ error: String(err && err.stack ? err.stack : err) }));
    process.exit(1);
  },
);
