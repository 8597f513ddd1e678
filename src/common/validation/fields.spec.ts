import { validateSync } from 'class-validator';
import { characterCount, StringRules } from './fields';

describe('characterCount', () => {
  it.each([
    ['', 0],
    ['abc', 3],
    ['é', 1],
    ['\u{1F600}', 1],
    ['a\u{1F600}b\u{1F600}', 4],
    // A lone surrogate (refused before validation) counts once, as an unpaired unit.
    ['\ud83d', 1],
    ['\ude00\ud83d', 2],
  ])('%j has %i characters', (value, count) => {
    expect(characterCount(value)).toBe(count);
  });
});

describe('StringRules min and max', () => {
  class Body {
    @StringRules('name', { min: 2, max: 3 })
    name: string;
  }
  const errors = (name: string) =>
    validateSync(Object.assign(new Body(), { name })).flatMap((error) => Object.values(error.constraints ?? {}));

  it('counts characters (code points), not UTF-16 units, as PostgreSQL does', () => {
    expect(errors('\u{1F600}\u{1F600}\u{1F600}')).toEqual([]);
    expect(errors('\u{1F600}\u{1F600}\u{1F600}\u{1F600}')).toEqual(['The name field must not be greater than 3 characters.']);
    expect(errors('\u{1F600}')).toEqual(['The name field must be at least 2 characters.']);
    expect(errors('ab')).toEqual([]);
  });
});
