import { extractStudyId, RAW_BODY, secretMatches } from './webhook-request';

const ID = '6b9e19d9-62094390-5f9ddb01-4a191ae7-9766b715';

describe('secretMatches', () => {
  it('accepts exactly the configured secret', () => {
    expect(secretMatches('s3cret-s3cret-s3cret', 's3cret-s3cret-s3cret')).toBe(true);
  });

  it('refuses a wrong, shorter, longer, differently cased or missing secret', () => {
    const expected = 's3cret-s3cret-s3cret';
    for (const presented of [
      's3cret-s3cret-s3creT',
      's3cret',
      `${expected}x`,
      expected.toUpperCase(),
      '',
      undefined,
      null,
      42,
      ['x'],
    ]) {
      expect(secretMatches(presented, expected)).toBe(false);
    }
  });

  it('never accepts anything when no secret is configured', () => {
    expect(secretMatches('', '')).toBe(false);
    expect(secretMatches('anything', '')).toBe(false);
  });
});

describe('extractStudyId', () => {
  it('reads ID from a parsed JSON object, trimmed', () => {
    expect(extractStudyId({ ID: ID })).toBe(ID);
    expect(extractStudyId({ ID: `  ${ID} `, Path: '/studies/x' })).toBe(ID);
  });

  it('reads ID from a JSON text (text/plain) and from a real form field', () => {
    expect(extractStudyId(JSON.stringify({ ID }))).toBe(ID);
    expect(extractStudyId(Buffer.from(JSON.stringify({ ID })))).toBe(ID);
    expect(extractStudyId({ ID, other: 'x' })).toBe(ID);
  });

  it('recovers ID from a form body whose key is the JSON text (Orthanc without Content-Type)', () => {
    expect(extractStudyId({ [`{"ID":"${ID}"}`]: '' })).toBe(ID);
    // An "=" inside the JSON splits it into key and value.
    expect(extractStudyId({ '{"Note":"a': `b","ID":"${ID}"}` })).toBe(ID);
    expect(extractStudyId({ junk: 'x', [`{"ID":"${ID}"}`]: ['', ''] })).toBe(ID);
  });

  it('recovers ID from malformed JSON only through the keys of its form reading', () => {
    expect(extractStudyId({ [RAW_BODY]: `ID=${ID}` })).toBe(ID);
    expect(extractStudyId({ [RAW_BODY]: `{"ID": "${ID}"` })).toBeNull();
    expect(extractStudyId({ [RAW_BODY]: '{not json' })).toBeNull();
  });

  it('finds nothing in bodies without a usable ID', () => {
    for (const body of [
      undefined,
      null,
      {},
      [],
      [{ ID }],
      '',
      'plain words',
      42,
      { id: ID },
      { ID: '' },
      { ID: '   ' },
      { ID: 123 },
      { ID: null },
      { ID: { nested: ID } },
      { ID: '../../system' },
      { ID: 'a/b' },
      { ID: 'x'.repeat(65) },
      { '{"ID":42}': '' },
    ]) {
      expect(extractStudyId(body)).toBeNull();
    }
  });
});
