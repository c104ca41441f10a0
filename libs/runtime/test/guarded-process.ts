// A tiny process for guards.test.ts: installs the guard, then throws out of an event and rejects a
// promise nobody awaits; it must still answer HTTP afterwards and serve the counter.
import http from 'node:http';
import { createLogger } from '@costgov/log';
import { metrics } from '@costgov/telemetry';
import { installProcessGuards } from '../src/guards';

installProcessGuards(createLogger('guarded', 'info'));

setTimeout(() => {
  throw new TypeError('thrown from a timer');
}, 0);
void Promise.reject(new Error('rejected and never awaited'));
setTimeout(() => {
  throw 'not an Error';
}, 10);

const server = http.createServer((_req, res) => {
  void metrics.registry
    .getSingleMetricAsString('process_uncaught_errors_total')
    .then((text) => res.end(text));
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  setTimeout(
    () => process.stdout.write(`LISTENING ${typeof address === 'object' && address ? address.port : 0}\n`),
    50,
  );
});
