import sharp, { SharpOptions } from 'sharp';
import { registerDecorator, ValidationArguments, ValidationOptions } from 'class-validator';

export const MIB = 1024 * 1024;
/** Decoded size limits (decisions.md §1): logo and signature 2 MiB, template background 5 MiB. */
export const LOGO_MAX_BYTES = 2 * MIB;
export const SIGNATURE_MAX_BYTES = 2 * MIB;
export const BACKGROUND_MAX_BYTES = 5 * MIB;
/**
 * Pixel limits of any image: a few hundred kilobytes of PNG can declare 16383 x 16383 pixels (a
 * gigabyte once decoded by whatever prints or shows it). An A4 page at 600 dpi is 4961 x 7016.
 */
export const IMAGE_MAX_SIDE = 8192;
export const IMAGE_MAX_PIXELS = 40_000_000;

const PREFIX = /^data:image\/(jpeg|png);base64,/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const MAGIC: Record<ImageType, Buffer> = {
  jpeg: Buffer.from([0xff, 0xd8, 0xff]),
  png: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
};

type ImageType = 'jpeg' | 'png';

export type ImageProblem = 'not_data_url' | 'bad_base64' | 'too_large' | 'not_image' | 'too_many_pixels';

/**
 * How images are decoded to be checked. A header can be sound over pixel data that is not (an
 * IDAT stream that does not inflate): the report renderer, which embeds the image in every PDF of
 * the clinic, would fail on it, so the whole image is decoded here (`stats` streams the pixels
 * through without keeping them). `failOn: 'error'` refuses what does not decode and lets through
 * what libjpeg only warns about (a few stray bytes before a marker), which PDF readers print too.
 */
const DECODE_OPTIONS: SharpOptions = { limitInputPixels: IMAGE_MAX_PIXELS, failOn: 'error' };

/**
 * Why `value` is not an acceptable image data URL, or null when it is: the prefix names JPEG or
 * PNG, the rest is canonical base64 that decodes to at most `maxBytes`, the bytes start with that
 * format's signature, the image header parses as that format with real dimensions no larger than
 * IMAGE_MAX_SIDE on a side and IMAGE_MAX_PIXELS in all, and then every pixel decodes. The size is
 * checked on the text first, so an oversized value is refused before it is decoded; the dimensions
 * on the header, so a decompression bomb is refused before any pixel is.
 */
export async function imageDataUrlProblem(value: unknown, maxBytes: number): Promise<ImageProblem | null> {
  if (typeof value !== 'string') return 'not_data_url';
  const prefix = PREFIX.exec(value);
  if (!prefix) return 'not_data_url';
  const type = prefix[1] as ImageType;
  const encoded = value.slice(prefix[0].length);
  if (encoded.length > Math.ceil(maxBytes / 3) * 4) return 'too_large';
  if (encoded.length === 0 || encoded.length % 4 !== 0 || !BASE64.test(encoded)) return 'bad_base64';
  const bytes = Buffer.from(encoded, 'base64');
  if (bytes.length > maxBytes) return 'too_large';
  if (!bytes.subarray(0, MAGIC[type].length).equals(MAGIC[type])) return 'not_image';
  try {
    // Without the decoding's pixel limit, which would refuse too many pixels as a broken image.
    const metadata = await sharp(bytes).metadata();
    if (metadata.format !== type || !metadata.width || !metadata.height) return 'not_image';
    const { width, height } = metadata;
    if (width > IMAGE_MAX_SIDE || height > IMAGE_MAX_SIDE || width * height > IMAGE_MAX_PIXELS) return 'too_many_pixels';
    await sharp(bytes, DECODE_OPTIONS).stats();
  } catch {
    return 'not_image';
  }
  return null;
}

export function imageProblemMessage(problem: ImageProblem, label: string, maxBytes: number): string {
  switch (problem) {
    case 'not_data_url':
      return `The ${label} must be a data URL starting with data:image/jpeg;base64, or data:image/png;base64,.`;
    case 'bad_base64':
      return `The ${label} data URL does not contain valid base64.`;
    case 'too_large':
      return `The ${label} must not be larger than ${maxBytes / MIB} MiB.`;
    case 'not_image':
      return `The ${label} is not a valid image of the declared type (JPEG or PNG).`;
    case 'too_many_pixels':
      return `The ${label} must be at most ${IMAGE_MAX_SIDE} pixels wide and high, and ${IMAGE_MAX_PIXELS / 1_000_000} megapixels in all.`;
  }
}

const PROBLEMS = Symbol('imageDataUrlProblems');
type WithProblems = { [PROBLEMS]?: Record<string, ImageProblem> };

/**
 * Validates an image data URL (see imageDataUrlProblem). `label` names the field in messages;
 * null and undefined are left to @IsOptional / @ValidateIf of the caller.
 */
export function IsImageDataUrl(options: { maxBytes: number; label?: string }, validationOptions?: ValidationOptions) {
  return (object: object, propertyName: string) => {
    const label = options.label ?? propertyName.replace(/_/g, ' ');
    registerDecorator({
      name: 'isImageDataUrl',
      target: object.constructor,
      propertyName,
      options: validationOptions,
      async: true,
      validator: {
        async validate(value: unknown, args: ValidationArguments) {
          const problem = await imageDataUrlProblem(value, options.maxBytes);
          if (problem) {
            // class-validator asks for the message after the promise settles; keep the reason
            // on the instance being validated (a symbol, so whitelisting never sees it).
            const holder = args.object as WithProblems;
            holder[PROBLEMS] = { ...(holder[PROBLEMS] ?? {}), [propertyName]: problem };
          }
          return problem === null;
        },
        defaultMessage(args: ValidationArguments) {
          const problem = (args.object as WithProblems)[PROBLEMS]?.[propertyName] ?? 'not_data_url';
          return imageProblemMessage(problem, label, options.maxBytes);
        },
      },
    });
  };
}
