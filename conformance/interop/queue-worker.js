// An MQTT.js queue worker, for conformance/queue_mqttjs_test.go and as the
// worker docs/queue.md describes:
//
//   node queue-worker.js <host:port> <client id> <queue>
//
// It takes jobs from $saguin/queue/<queue>, hands the first back with
// `return` and acknowledges the next with `ack`, each on the Response Topic
// the offer named with its Correlation Data echoed, then prints one JSON
// object saying what it was granted and offered; the Go test holds the
// assertions.
'use strict';

const mqtt = require('mqtt');

const [addr, id, queue] = process.argv.slice(2);
if (!addr || !id || !queue) {
  console.error('usage: node queue-worker.js <host:port> <client id> <queue>');
  process.exit(2);
}

async function main() {
  const out = { offers: [] };
  const client = await mqtt.connectAsync('mqtt://' + addr, {
    clientId: id, protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 10000,
  });
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no second offer within 20 s')), 20000);
    client.on('message', (topic, payload, packet) => {
      const p = packet.properties || {};
      const user = p.userProperties || {};
      const answer = out.offers.length === 0 ? 'return' : 'ack';
      out.offers.push({
        topic, payload: payload.toString(), qos: packet.qos, attempt: user['saguin-attempt'],
        responseTopic: p.responseTopic, correlationData: p.correlationData ? p.correlationData.toString('base64') : '',
        answer,
      });
      client.publishAsync(p.responseTopic, answer, { qos: 1, properties: { correlationData: p.correlationData } })
        .then((ack) => {
          out.offers[out.offers.length - 1].pubackReason = ack && ack.reasonCode !== undefined ? ack.reasonCode : 0;
          if (answer === 'ack') {
            clearTimeout(timer);
            resolve();
          }
        }, reject);
    });
  });
  const granted = await client.subscribeAsync('$saguin/queue/' + queue, { qos: 1 });
  out.granted = granted.map((g) => g.qos);
  await done;
  await client.endAsync();
  return out;
}

main().then(
  (out) => { console.log(JSON.stringify(out)); },
  (err) => { console.log(JSON.stringify({ error: String(err && err.message || err) })); process.exitCode = 1; },
);
