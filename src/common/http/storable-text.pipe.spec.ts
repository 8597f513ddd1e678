import { ApiError } from '../errors/api-errors';
import { BODY_NOT_OBJECT, RejectUnstorableTextPipe, unstorableTextFields } from './storable-text.pipe';

const fieldsWithNul = (value: unknown) => unstorableTextFields(value).map(([field]) => field);

class SomeDto {}

describe('RejectUnstorableTextPipe', () => {
  const pipe = new RejectUnstorableTextPipe();

  it('lists every field holding a NUL, nested ones by their dotted path', () => {
    expect(fieldsWithNul({ search: 'a\u0000', ok: 'fine', layout: { regions: [{ text: '\u0000' }] }, ['k\u0000']: 1 })).toEqual(
      ['k\u0000', 'layout.regions.0.text', 'search'],
    );
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

  it('refuses lone surrogates anywhere (values and keys), keeping well-formed astral text', () => {
    expect(unstorableTextFields({ email: '\ud800', name: 'ok \u{1F600}', tags: ['\udc00x'], ['k\ud800']: 1 })).toEqual([
      ['email', 'surrogate'],
      ['k\ud800', 'surrogate'],
      ['tags.0', 'surrogate'],
    ]);
    expect(unstorableTextFields({ name: '\ud83d\ude00 and \u00e9' })).toEqual([]);
    let thrown: unknown;
    try {
      pipe.transform({ email: 'a\ud800@x.test' }, { type: 'body', metatype: SomeDto });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as ApiError).getStatus()).toBe(422);
    expect((thrown as ApiError).getResponse()).toEqual({
      message: 'The email field must be well-formed Unicode text (it holds a lone surrogate).',
      errors: { email: ['The email field must be well-formed Unicode text (it holds a lone surrogate).'] },
    });
  });

  it.each([null, [], [{ name: 'x' }], 1, 'text', true])('refuses a DTO body that is not an object: %p', (body) => {
    let thrown: unknown;
    try {
      pipe.transform(body, { type: 'body', metatype: SomeDto });
    } catch (error) {
      thrown = error;
    }
    expect((thrown as ApiError).getStatus()).toBe(422);
    expect((thrown as ApiError).getResponse()).toEqual({ message: BODY_NOT_OBJECT, errors: { body: [BODY_NOT_OBJECT] } });
  });

  it('leaves untyped bodies, path parameters and clean values alone', () => {
    const raw = { ID: 'a\u0000' };
    expect(pipe.transform(raw, { type: 'body', metatype: Object })).toBe(raw);
    expect(pipe.transform('a\u0000', { type: 'param', metatype: String })).toBe('a\u0000');
    expect(pipe.transform(undefined, { type: 'body', metatype: SomeDto })).toBeUndefined();
    expect(pipe.transform(null, { type: 'body', metatype: Object })).toBeNull();
    const clean = { search: 'doe' };
    expect(pipe.transform(clean, { type: 'query', metatype: SomeDto })).toBe(clean);
  });

  it('walks a very deep value without recursion', () => {
    let deep: unknown = 'x\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(fieldsWithNul(deep)).toHaveLength(1);
  });
});
