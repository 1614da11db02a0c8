// MQTT.js over WebSocket, for conformance/transports_test.go.
//
//   node ws.js <url> <topic> [origin] [cafile]
//
// Connects to url (ws:// or wss://, trusting cafile), optionally sending an
// Origin header as a browser would, subscribes to topic, publishes to it at
// QoS 1 and waits for the message to come back. Prints one JSON object:
// {"ok":true,"payload":...,"protocol":...} or {"ok":false,"error":...}; the Go
// test holds the assertions.
'use strict';

const fs = require('fs');
const mqtt = require('mqtt');

const [url, topic, origin, cafile] = process.argv.slice(2);
if (!url || !topic) {
  console.error('usage: node ws.js <url> <topic> [origin] [cafile]');
  process.exit(2);
}

async function run() {
  const wsOptions = {};
  if (origin) wsOptions.headers = { Origin: origin };
  const opts = { clientId: 'js-ws-' + process.pid, reconnectPeriod: 0, connectTimeout: 10000, protocolVersion: 5, wsOptions };
  if (cafile) opts.ca = fs.readFileSync(cafile);
  const client = mqtt.connect(url, opts);
  await new Promise((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
    client.once('close', () => reject(new Error('closed before CONNACK')));
  });
  const got = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no message within 10 s')), 10000);
    client.once('message', (t, payload, packet) => {
      clearTimeout(timer);
      resolve({ payload: payload.toString(), qos: packet.qos });
    });
  });
  await client.subscribeAsync(topic, { qos: 1 });
  await client.publishAsync(topic, 'over ' + url.split(':')[0], { qos: 1 });
  const m = await got;
  await client.endAsync();
  return { ok: true, payload: m.payload, qos: m.qos };
}

setTimeout(() => { console.log(JSON.stringify({ ok: false, error: 'no outcome within 20 s' })); process.exit(0); }, 20000).unref();
run().then(
  (r) => { console.log(JSON.stringify(r)); process.exit(0); },
  (e) => { console.log(JSON.stringify({ ok: false, error: String(e && e.message || e) })); process.exit(0); },
);
