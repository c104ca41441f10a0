import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, errorFields, withLogContext } from './index';

describe('log lines', () => {
  it('keep of an error only its type, message, code and stack', () => {
    const error = Object.assign(new Error('duplicate key'), {
      code: '23505',
      detail: 'Key (user_name)=(ada@example.com) already exists.',
      parameters: ['secret-hash'],
    });
    const fields = errorFields(error);
    expect(fields).toMatchObject({ type: 'Error', message: 'duplicate key', code: '23505' });
    expect(JSON.stringify(fields)).not.toMatch(/ada@example.com|secret-hash/);
  });

  it('carry the request id of the context they are written in', () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(chunk.toString()), done()) });
    const logger = createLogger('test', 'info', sink);
    withLogContext({ requestId: 'req_abc' }, () => logger.info('hello'));
    expect(JSON.parse(lines[0]!)).toMatchObject({ request_id: 'req_abc', msg: 'hello' });
  });
});
