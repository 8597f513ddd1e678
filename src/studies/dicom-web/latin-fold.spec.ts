import { foldLatin, foldLatinLetter, SPELLINGS } from './latin-fold';

describe('foldLatin', () => {
  it('folds case and accents as search_fold does, across the Latin ranges', () => {
    expect(foldLatin('NGUYỄN^Văn')).toBe('nguyen^van');
    expect(foldLatin('ŁUKASZ Żółć')).toBe('lukasz zolc');
    expect(foldLatin('Đặng Øster')).toBe('dang oster');
    expect(foldLatin('STRAẞE Æsir Œuvre')).toBe('strasse aesir oeuvre');
  });

  it('deletes the marks unaccent deletes, also when a letter is written decomposed', () => {
    expect(foldLatin('NGUYE\u0302\u0303N')).toBe('nguyen');
  });

  it('keeps a letter unaccent keeps (lower case), and other characters but their case', () => {
    // unaccent.rules maps neither Ǿ nor ǣ, though NFD puts Ø and æ under their marks.
    expect(foldLatin('Ǿǣ')).toBe('ǿǣ');
    expect(foldLatin('ΩΜΕΓΑ 1-2')).toBe('ωμεγα 1-2');
  });
});

describe('SPELLINGS', () => {
  it('lists every letter under what it folds to', () => {
    expect(SPELLINGS.get('l')).toEqual(expect.stringContaining('Łł'));
    expect(SPELLINGS.get('d')).toEqual(expect.stringContaining('Đđ'));
    expect(SPELLINGS.get('ss')).toBe('ßẞ');
    for (const [folded, letters] of SPELLINGS) for (const letter of letters) expect(foldLatinLetter(letter)).toBe(folded);
  });
});
