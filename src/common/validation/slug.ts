import slugify from 'slugify';

/** Longest slug the schema stores. */
export const SLUG_MAX_LENGTH = 255;

/**
 * The contract's slug: transliterated to ASCII, lowercased, every run of other characters one
 * hyphen, no hyphen at either end ("Clínica São Paulo" -> "clinica-sao-paulo").
 * Separators are collapsed before slugify runs so that `_`, `&`, `%` and the like split words
 * instead of being glued to them (slugify's strict mode would drop them silently).
 * Letters slugify cannot transliterate (e.g. CJK) are dropped; the result may then be empty.
 */
export function normaliseSlug(input: string): string {
  const spaced = input.normalize('NFC').replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ');
  return slugify(spaced, { lower: true, strict: true, trim: true, replacement: '-' })
    .replace(/-+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** A slug derived from a name: cut to the stored length without leaving a trailing hyphen. */
export function slugFromName(name: string): string {
  return normaliseSlug(name).slice(0, SLUG_MAX_LENGTH).replace(/-+$/, '');
}
