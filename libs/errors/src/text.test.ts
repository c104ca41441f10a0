import { describe, expect, it } from 'vitest';
import { charLength, textProblem, truncateChars, wellFormed } from './text';

describe('the text rule', () => {
  it.each([
    ['plain', undefined],
    ['tab\tnewline\ncr\r', undefined],
    ['emoji 😀 and accents é', undefined],
    ['nul\u0000inside', 'must not contain NUL characters'],
    ['bell\u0007', 'must not contain control character U+0007'],
    ['cut emoji \ud83d', 'must be valid Unicode (UTF-8)'],
    ['\ude00 low alone', 'must be valid Unicode (UTF-8)'],
  ])('%j → %s', (value, problem) => {
    expect(textProblem(value)).toBe(problem);
  });

  it('counts characters, not UTF-16 units', () => {
    expect(charLength('😀😀')).toBe(2);
    expect('😀😀'.length).toBe(4);
  });

  it('truncates without cutting a surrogate pair', () => {
    expect(truncateChars('a😀b', 2)).toBe('a😀');
    expect(textProblem(truncateChars('😀😀😀', 1))).toBeUndefined();
  });

  it('makes any string encodable', () => {
    expect(wellFormed('x\ud83d')).toBe('x\ufffd');
  });
});
