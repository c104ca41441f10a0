import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
(async () => {
  const nc = await connect({ servers: 'nats://127.0.0.1:4222' });
  const jsm = await jetstreamManager(nc);
  const names: string[] = []; for await (const n of jsm.streams.names()) names.push(n);
  console.log('streams', names);
  await nc.close();
})();
