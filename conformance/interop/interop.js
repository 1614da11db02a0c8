// MQTT.js against a broker, for conformance/mqtt_interop_test.go.
//
//   node interop.js <host:port> <prefix>
//
// Runs the same three exchanges on MQTT 5 and on 3.1.1 (protocolVersion 4)
// and prints one JSON object saying what this client library observed; the Go
// test holds the assertions, so a failure is reported in one place.
'use strict';

const mqtt = require('mqtt');

const [addr, prefix] = process.argv.slice(2);
if (!addr || !prefix) {
  console.error('usage: node interop.js <host:port> <prefix>');
  process.exit(2);
}

function connect(id, opts) {
  return mqtt.connectAsync('mqtt://' + addr, {
    clientId: id,
    reconnectPeriod: 0,
    connectTimeout: 10000,
    ...opts,
  });
}

// next resolves with the first message the client receives.
function next(client, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(what + ': no message within 10 s')), 10000);
    client.once('message', (topic, payload, packet) => {
      clearTimeout(timer);
      resolve({ topic, payload: payload.toString(), packet });
    });
  });
}

async function run(version) {
  const v5 = version === 5;
  const base = `${prefix}/v${version}`;
  const out = {};
  const props = v5 ? { properties: { sessionExpiryInterval: 60 } } : {};

  // 1. A retained value, with its properties on MQTT 5, reaches a later subscriber.
  const pub = await connect(`js-pub-${version}`, { protocolVersion: version });
  await pub.publishAsync(`${base}/retained`, 'state', {
    qos: 1,
    retain: true,
    properties: v5 ? { contentType: 'text/plain', userProperties: { site: 'depot' } } : undefined,
  });
  const sub = await connect(`js-sub-${version}`, { protocolVersion: version });
  const retained = next(sub, 'retained value on subscribe');
  const granted = await sub.subscribeAsync(`${base}/retained`, { qos: 1 });
  const r = await retained;
  out.retained = {
    granted: granted.map((g) => g.qos),
    payload: r.payload,
    retain: r.packet.retain,
    qos: r.packet.qos,
    contentType: r.packet.properties && r.packet.properties.contentType,
    userProperties: r.packet.properties && r.packet.properties.userProperties,
  };
  await sub.endAsync();

  // 2. A QoS 2 publish arrives once at a QoS 2 subscriber.
  const sub2 = await connect(`js-sub2-${version}`, { protocolVersion: version });
  await sub2.subscribeAsync(`${base}/q2`, { qos: 2 });
  const got = [];
  sub2.on('message', (topic, payload, packet) => got.push({ payload: payload.toString(), qos: packet.qos }));
  await pub.publishAsync(`${base}/q2`, 'exactly', { qos: 2 });
  const deadline = Date.now() + 10000;
  while (got.length === 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  // A round trip through the broker after the first delivery: anything more
  // it would send is queued ahead of this SUBACK.
  await sub2.subscribeAsync(`${base}/flush`, { qos: 0 });
  out.qos2 = got;
  await sub2.endAsync();

  // 3. A session kept while away is sent what it was owed.
  const id = `js-durable-${version}`;
  // MQTT 5 begins the session with Clean Start 1 and an expiry; 3.1.1 can only
  // ask for a kept session with cleanSession 0.
  const d1 = await connect(id, { protocolVersion: version, clean: v5, ...props });
  await d1.subscribeAsync(`${base}/owed`, { qos: 1 });
  await d1.endAsync();
  await pub.publishAsync(`${base}/owed`, 'while-away', { qos: 1 });
  const d2 = mqtt.connect('mqtt://' + addr, {
    clientId: id,
    protocolVersion: version,
    clean: false,
    reconnectPeriod: 0,
    ...props,
  });
  const connack = new Promise((resolve) => d2.once('connect', resolve));
  const owed = next(d2, 'message owed to the resumed session');
  const ack = await connack;
  const o = await owed;
  out.session = { sessionPresent: ack.sessionPresent, payload: o.payload, qos: o.packet.qos };
  await d2.endAsync();
  await pub.endAsync();
  return out;
}

(async () => {
  const result = {};
  for (const version of [5, 4]) {
    try {
      result['v' + version] = await run(version);
    } catch (err) {
      result['v' + version] = { error: String(err && err.message ? err.message : err) };
    }
  }
  console.log(JSON.stringify(result));
  process.exit(0);
})();
