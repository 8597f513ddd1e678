import { insensitiveRegex, parseQidoStudyQuery, QIDO_DEFAULT_LIMIT, QidoQueryError } from './qido-query';

describe('insensitiveRegex', () => {
  // PostgreSQL's regular expressions agree with JavaScript's on what this produces (classes,
  // anchors, `.`, `.*` and escaped punctuation).
  const matches = (value: string, text: string) => new RegExp(insensitiveRegex(value), 'u').test(text);

  it('ignores case and accents on both sides', () => {
    for (const text of ['JOÃO', 'joao', 'João', 'JOAO']) expect(matches('joão', text)).toBe(true);
    expect(matches('JOAO', 'joão')).toBe(true);
    expect(matches('sao*', 'São Paulo')).toBe(true);
  });

  it('is exact without wildcards, and takes * and ? as QIDO does', () => {
    expect(matches('joao', 'JOÃO^SILVA')).toBe(false);
    expect(matches('joao*', 'JOÃO^SILVA')).toBe(true);
    expect(matches('*silva', 'JOÃO^SILVA')).toBe(true);
    expect(matches('j?ao^silva', 'JOÃO^SILVA')).toBe(true);
    expect(matches('j?ao', 'JOAAO')).toBe(false);
  });

  it('takes every other character literally', () => {
    expect(matches("o'brien (jr.)", "O'BRIEN (JR.)")).toBe(true);
    expect(matches('a.c', 'abc')).toBe(false);
    expect(matches('[a]', 'a')).toBe(false);
    expect(matches('ø', 'Ø')).toBe(true);
  });

  it('folds every Latin letter as the studies search does (search_fold)', () => {
    for (const value of ['Nguyễn*', 'nguyen*', 'NGUYEN^VAN', 'nguy?n^v?n']) expect(matches(value, 'NGUYỄN^VĂN')).toBe(true);
    for (const value of ['lukasz*', 'Łukasz^*', '*ŁÓDŹ*', '*lodz']) expect(matches(value, 'ŁUKASZ^ŁÓDŹ')).toBe(true);
    expect(matches('dang*', 'ĐẶNG^THỊ')).toBe(true);
    expect(matches('nguyen*', 'NGUYE\u0302\u0303N^VAN')).toBe(true);
    expect(matches('nguyan*', 'NGUYỄN^VĂN')).toBe(false);
    expect(matches('lucasz*', 'ŁUKASZ^ŁÓDŹ')).toBe(false);
  });

  it('matches a letter folding to two letters by either spelling', () => {
    expect(matches('strasse', 'STRAẞE')).toBe(true);
    expect(matches('straße', 'Strasse')).toBe(true);
    expect(matches('*aesir', 'Æsir')).toBe(true);
    expect(matches('æ?', 'aex')).toBe(true);
    expect(matches('ae', 'æx')).toBe(false);
  });

  it('stays bounded for the longest value', () => {
    expect(insensitiveRegex('æ'.repeat(255)).length).toBeLessThan(50_000);
    expect(insensitiveRegex('*a?'.repeat(85)).length).toBeLessThan(50_000);
  });
});

describe('parseQidoStudyQuery', () => {
  it('reads keywords and tags in both spellings, and ignores keys the index does not hold', () => {
    const query = parseQidoStudyQuery({ '0010,0010': 'doe*', '00100020': 'P1', StudyTime: '1200', includefield: ['a', 'b'] });
    expect(query.patientName).toEqual({ regex: insensitiveRegex('doe*'), indexedRun: 'doe' });
    expect(query.patientId).toEqual({ exact: 'P1' });
    expect(query.limit).toBe(QIDO_DEFAULT_LIMIT);
    expect(query.offset).toBe(0);
  });

  it('names the longest literal run of a name for the search index only when it has 3+ letters or digits', () => {
    expect(parseQidoStudyQuery({ PatientName: '*jo?o*silva*' }).patientName?.indexedRun).toBe('silva');
    expect(parseQidoStudyQuery({ PatientName: 'JOÃO*' }).patientName?.indexedRun).toBe('JOÃO');
    expect(parseQidoStudyQuery({ PatientName: '*ab*c?d*' }).patientName?.indexedRun).toBeUndefined();
    expect(parseQidoStudyQuery({ PatientName: '*' }).patientName).toBeUndefined();
  });

  it('turns wildcards of ids into LIKE patterns with the rest escaped', () => {
    expect(parseQidoStudyQuery({ AccessionNumber: 'A_1%*?' }).accessionNumber).toEqual({ pattern: 'A\\_1\\%%_' });
  });

  it('reads date ranges with open ends', () => {
    expect(parseQidoStudyQuery({ StudyDate: '20240101-' }).studyDate).toEqual({ from: '2024-01-01' });
    expect(parseQidoStudyQuery({ StudyDate: '-20240101' }).studyDate).toEqual({ to: '2024-01-01' });
    expect(parseQidoStudyQuery({ StudyDate: '20240229' }).studyDate).toEqual({ from: '2024-02-29', to: '2024-02-29' });
    expect(() => parseQidoStudyQuery({ StudyDate: '20230229' })).toThrow(QidoQueryError);
  });

  it('refuses a key given twice under two names', () => {
    expect(() => parseQidoStudyQuery({ PatientID: 'a', '0010,0020': 'b' })).toThrow(
      'The 0010,0020 parameter is given more than once.',
    );
  });

  it('is not fooled by keys named after Object properties', () => {
    expect(parseQidoStudyQuery({ constructor: 'x', __proto__: 'y', toString: 'z' })).toEqual({
      limit: QIDO_DEFAULT_LIMIT,
      offset: 0,
    });
  });
});
