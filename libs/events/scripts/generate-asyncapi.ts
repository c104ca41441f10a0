// Writes libs/events/asyncapi.json from the event catalogue and the proto descriptors (`npm run generate`;
// `npm run generate:check` fails in CI when the committed document differs).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { asyncApiDocument } from '../src/asyncapi';
import { protoComments } from './proto-comments';

const out = path.join(__dirname, '..', 'asyncapi.json');
writeFileSync(out, `${JSON.stringify(asyncApiDocument(protoComments()), null, 2)}\n`);
