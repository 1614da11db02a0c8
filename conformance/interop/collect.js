// What the MQTT.js scripts share: collecting a client's next messages in
// the shape the Go tests read.
'use strict';

// collect resolves with the first n messages client receives, in order.
function collect(client, n, what) {
  return new Promise((resolve, reject) => {
    const got = [];
    const timer = setTimeout(() => reject(new Error(`${what}: ${got.length} of ${n} messages within 10 s`)), 10000);
    const on = (topic, payload, packet) => {
      const p = packet.properties || {};
      got.push({
        topic,
        payload: payload.toString(),
        retain: packet.retain,
        user: p.userProperties || {},
        correlation: p.correlationData ? p.correlationData.toString() : null,
      });
      if (got.length === n) {
        clearTimeout(timer);
        client.removeListener('message', on);
        resolve(got);
      }
    };
    client.on('message', on);
  });
}

module.exports = { collect };
