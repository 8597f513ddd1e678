/**
 * The archive's search folding (search_fold in schema.sql: lower(unaccent(text)), with PostgreSQL's
 * unaccent.rules), for the letters a patient's name or a description is written in: the Latin ranges
 * U+00C0–U+024F and U+1E00–U+1EFF. The worklist's regular expressions spell each folded letter with
 * every letter folding to it, so the worklist finds the names the studies search finds.
 * test/e2e/dicom-web.e2e-spec.ts checks this folding against PostgreSQL's for every letter of the ranges.
 */

export const LATIN_RANGES: Array<[number, number]> = [
  [0xc0, 0x24f],
  [0x1e00, 0x1eff],
];

/** The combining marks unaccent deletes wherever they stand, as the range of a regular expression's class. */
export const DELETED_MARKS = '\\u0300-\\u0362';
const DELETED_MARK = new RegExp(`[${DELETED_MARKS}]`, 'gu');

/**
 * The letters unaccent.rules folds other than to an ASCII letter under marks (strokes, hooks,
 * ligatures), by what they fold to. Every other letter of the ranges folds so, or to its lower case.
 */
const SPECIAL: Record<string, string> = {
  "'n": 'ŉ',
  a: 'Ⱥẚ',
  ae: 'Ææ',
  b: 'ƀƁƂƃɃ',
  c: 'ƇƈȻȼ',
  d: 'ÐðĐđƉƊƋƌȡ',
  db: 'ȸ',
  dz: 'ǄǅǆǱǲǳ',
  e: 'ƐɆɇ',
  f: 'Ƒƒ',
  g: 'ƓǤǥ',
  h: 'Ħħ',
  hv: 'ƕ',
  i: 'ıƖƗ',
  ij: 'Ĳĳ',
  j: 'ȷɈɉ',
  k: 'Ƙƙ',
  l: 'ĿŀŁłƚȴȽ',
  lj: 'Ǉǈǉ',
  ll: 'Ỻỻ',
  n: 'ŊŋƝƞȵ',
  nj: 'Ǌǋǌ',
  o: 'Øø',
  oe: 'Œœ',
  oi: 'Ƣƣ',
  p: 'Ƥƥ',
  q: 'ĸ',
  qp: 'ȹ',
  r: 'Ɍɍ',
  s: 'ſȿẜẝ',
  ss: 'ßẞ',
  t: 'ŦŧƫƬƭƮȶȾ',
  th: 'Þþ',
  u: 'Ʉ',
  v: 'ƲỼỽ',
  y: 'ƳƴɎɏỾỿ',
  z: 'ƵƶȤȥɀ',
};

/** What each ASCII or Latin-range letter folds to. */
const FOLDS = ((): Map<string, string> => {
  const folds = new Map<string, string>();
  for (const [folded, letters] of Object.entries(SPECIAL)) for (const letter of letters) folds.set(letter, folded);
  for (const [from, to] of [[0x41, 0x5a], [0x61, 0x7a], ...LATIN_RANGES]) {
    for (let code = from; code <= to; code++) {
      const letter = String.fromCharCode(code);
      if (folds.has(letter) || !/\p{L}/u.test(letter)) continue;
      const base = letter.normalize('NFD').replace(DELETED_MARK, '');
      folds.set(letter, /^[A-Za-z]$/.test(base) ? base.toLowerCase() : letter.toLowerCase());
    }
  }
  return folds;
})();

/** What search_fold makes of one ASCII or Latin-range letter (one or two letters); undefined for any other character. */
export function foldLatinLetter(char: string): string | undefined {
  return FOLDS.get(char);
}

/**
 * Every spelling of each folded letter (or pair, as "ae" of "æ"): "a" -> "AaÀÁÂ…ạẢả…".
 */
export const SPELLINGS = ((): Map<string, string> => {
  const spellings = new Map<string, string>();
  for (const [letter, folded] of FOLDS) spellings.set(folded, (spellings.get(folded) ?? '') + letter);
  return spellings;
})();

/** The text folded letter by letter as search_fold folds it in the Latin ranges; other characters lower-cased. */
export function foldLatin(text: string): string {
  let folded = '';
  for (const char of text.replace(DELETED_MARK, '')) folded += FOLDS.get(char) ?? char.toLowerCase();
  return folded;
}
