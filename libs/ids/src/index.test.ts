import { describe, expect, it } from 'vitest';
import { looksLikeId, newId } from './index';

describe('ids', () => {
  it('are prefixed by kind and sort by creation time', async () => {
    const first = newId('project');
    await new Promise((r) => setTimeout(r, 2));
    const second = newId('project');
    expect(first).toMatch(/^prj_/);
    expect(first < second).toBe(true);
  });

  it('are recognised by kind', () => {
    expect(looksLikeId('project', newId('project'))).toBe(true);
    expect(looksLikeId('project', newId('budget'))).toBe(false);
    expect(looksLikeId('project', 'prj_nope')).toBe(false);
  });
});
