import { ApiError } from '../errors/api-errors';
import { fieldsWithNul, RejectNulBytesPipe } from './reject-nul-bytes.pipe';

class SomeDto {}

describe('RejectNulBytesPipe', () => {
  const pipe = new RejectNulBytesPipe();

  it('lists every field holding a NUL, nested ones by their dotted path', () => {
    expect(
      fieldsWithNul({ search: 'a\u0000', ok: 'fine', layout: { regions: [{ text: '\u0000' }] }, ['k\u0000']: 1 }),
    ).toEqual(['k\u0000', 'layout.regions.0.text', 'search']);
    expect(fieldsWithNul({ a: ['x', 'y'], b: 1, c: null })).toEqual([]);
  });

  it('answers 422 with the contract shape for a query or a DTO body', () => {
    for (const type of ['query', 'body'] as const) {
      let thrown: unknown;
      try {
        pipe.transform({ search: 'doe\u0000' }, { type, metatype: SomeDto });
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ApiError);
      expect((thrown as ApiError).getStatus()).toBe(422);
      expect((thrown as ApiError).getResponse()).toEqual({
        message: 'The search field must not contain NUL characters.',
        errors: { search: ['The search field must not contain NUL characters.'] },
      });
    }
  });

  it('leaves untyped bodies, path parameters and clean values alone', () => {
    const raw = { ID: 'a\u0000' };
    expect(pipe.transform(raw, { type: 'body', metatype: Object })).toBe(raw);
    expect(pipe.transform('a\u0000', { type: 'param', metatype: String })).toBe('a\u0000');
    const clean = { search: 'doe' };
    expect(pipe.transform(clean, { type: 'query', metatype: SomeDto })).toBe(clean);
  });

  it('walks a very deep value without recursion', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(fieldsWithNul(deep)).toHaveLength(1);
  });
});
