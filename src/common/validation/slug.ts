import slugify from 'slugify';
import { Errors } from '../errors/api-errors';

/** Longest slug the schema stores. */
export const SLUG_MAX_LENGTH = 255;

/**
 * The contract's slug: transliterated to ASCII, lowercased, every run of other characters one
 * hyphen, no hyphen at either end ("Clínica São Paulo" -> "clinica-sao-paulo").
 * Separators are collapsed before slugify runs so that `_`, `&`, `%` and the like split words
 * instead of being glued to them (slugify's strict mode would drop them silently).
 * NFKC first, so that compatibility characters become the letters and digits they stand for
 * ("ﬁ" -> "fi", "²" -> "2", fullwidth "Ａ" -> "A") instead of being dropped as untransliterable.
 * Letters slugify cannot transliterate (e.g. CJK) are dropped; the result may then be empty.
 */
export function normaliseSlug(input: string): string {
  const spaced = input.normalize('NFKC').replace(/[^\p{L}\p{M}\p{N}]+/gu, ' ');
  return slugify(spaced, { lower: true, strict: true, trim: true, replacement: '-' })
    .replace(/-+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** A slug derived from a name: cut to the stored length without leaving a trailing hyphen. */
export function slugFromName(name: string): string {
  return normaliseSlug(name).slice(0, SLUG_MAX_LENGTH).replace(/-+$/, '');
}

/** The contract's 422 message when another tenant or unit holds the slug. */
export const SLUG_TAKEN = 'The slug has already been taken.';

/** A slug the request gave explicitly, normalised; the contract's 422 when nothing usable is left. */
export function explicitSlug(explicit: string): string {
  const slug = normaliseSlug(explicit);
  if (!slug) throw Errors.fieldInvalid('slug', 'The slug must contain at least one letter or digit.');
  if (slug.length > SLUG_MAX_LENGTH) {
    throw Errors.fieldInvalid('slug', `The slug field must not be greater than ${SLUG_MAX_LENGTH} characters.`);
  }
  return slug;
}
