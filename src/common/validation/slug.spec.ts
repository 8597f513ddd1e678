import { normaliseSlug, slugFromName } from './slug';

describe('normaliseSlug', () => {
  it.each([
    ['Clínica São Paulo', 'clinica-sao-paulo'],
    ['  Ação -- Ümlaut_ß & Co.  ', 'acao-umlaut-ss-co'],
    ['100% Saúde/Imagem', '100-saude-imagem'],
    ['São José'.normalize('NFD'), 'sao-jose'],
    ['Москва Clinic', 'moskva-clinic'],
    ['ÆØÅ Øresund', 'aeoa-oresund'],
    ['already-a-slug', 'already-a-slug'],
    ['UPPER   case', 'upper-case'],
    ['日本語 Clinic', 'clinic'],
    ['---', ''],
    ['日本語', ''],
    // Compatibility characters (a ligature, a superscript, fullwidth letters) spelled as ASCII.
    ['ﬁle', 'file'],
    ['x²y', 'x2y'],
    ['Ｆｕｌｌ Clínica', 'full-clinica'],
    ['ＡＢＣ', 'abc'],
  ])('%j -> %j', (input, expected) => {
    expect(normaliseSlug(input)).toBe(expected);
  });

  it('is idempotent', () => {
    for (const input of ['Clínica São Paulo', 'a_b c', 'X--Y']) {
      expect(normaliseSlug(normaliseSlug(input))).toBe(normaliseSlug(input));
    }
  });
});

describe('slugFromName', () => {
  it('cuts to 255 characters without leaving a trailing hyphen', () => {
    const name = `${'a'.repeat(254)} ${'b'.repeat(10)}`;
    expect(slugFromName(name)).toBe('a'.repeat(254));
    expect(slugFromName('ß'.repeat(200))).toHaveLength(255);
  });
});
