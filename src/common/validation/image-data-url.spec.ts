import sharp from 'sharp';
import { PNG_SIGNATURE, pngChunk as chunk, rgbaPng } from '../../../test/support/png';
import { imageDataUrlProblem, imageProblemMessage, IMAGE_MAX_PIXELS, IMAGE_MAX_SIDE, MIB } from './image-data-url';

/** A PNG whose header declares `width` x `height` (its pixel data is a few bytes: it does not decode). */
function pngDeclaring(width: number, height: number, padTo = 0): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const parts = [PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', Buffer.alloc(16))];
  const size = parts.reduce((sum, part) => sum + part.length, 0) + 12;
  if (padTo > size + 12) parts.push(chunk('tEXt', Buffer.alloc(padTo - size - 12, 0x61)));
  parts.push(chunk('IEND', Buffer.alloc(0)));
  return Buffer.concat(parts);
}

describe('imageDataUrlProblem', () => {
  let png: Buffer;
  let jpeg: Buffer;

  beforeAll(async () => {
    const image = sharp({ create: { width: 3, height: 2, channels: 3, background: '#123456' } });
    png = await image.clone().png().toBuffer();
    jpeg = await image.clone().jpeg().toBuffer();
  });

  const url = (type: string, bytes: Buffer) => `data:image/${type};base64,${bytes.toString('base64')}`;

  it('accepts a real PNG and a real JPEG of the declared type', async () => {
    expect(await imageDataUrlProblem(url('png', png), MIB)).toBeNull();
    expect(await imageDataUrlProblem(url('jpeg', jpeg), MIB)).toBeNull();
  });

  it('refuses an image whose header declares absurd dimensions (a 255 KB PNG of 16383 x 16383)', async () => {
    const absurd = pngDeclaring(16383, 16383, 255 * 1024);
    expect(absurd.length).toBeGreaterThan(250 * 1024);
    expect(await imageDataUrlProblem(url('png', absurd), 2 * MIB)).toBe('too_many_pixels');
    expect(await imageDataUrlProblem(url('png', pngDeclaring(IMAGE_MAX_SIDE + 1, 10)), MIB)).toBe('too_many_pixels');
    expect(await imageDataUrlProblem(url('png', pngDeclaring(10, IMAGE_MAX_SIDE + 1)), MIB)).toBe('too_many_pixels');
    // Both sides allowed, the product not: 8192 x 8192 is 67 megapixels.
    expect(IMAGE_MAX_SIDE * IMAGE_MAX_SIDE).toBeGreaterThan(IMAGE_MAX_PIXELS);
    expect(await imageDataUrlProblem(url('png', pngDeclaring(IMAGE_MAX_SIDE, IMAGE_MAX_SIDE)), MIB)).toBe('too_many_pixels');
    // Dimensions within the limits pass the header check; these bogus pixels then fail to decode.
    expect(await imageDataUrlProblem(url('png', pngDeclaring(IMAGE_MAX_SIDE, 4000)), MIB)).toBe('not_image');
    const widest = await sharp({ create: { width: IMAGE_MAX_SIDE, height: 2, channels: 3, background: '#123456' } })
      .png()
      .toBuffer();
    expect(await imageDataUrlProblem(url('png', widest), MIB)).toBeNull();
    expect(imageProblemMessage('too_many_pixels', 'logo', 2 * MIB)).toBe(
      'The logo must be at most 8192 pixels wide and high, and 40 megapixels in all.',
    );
  });

  it('accepts an image of exactly the limit and refuses one byte more', async () => {
    const padded = Buffer.concat([png, Buffer.alloc(1000)]);
    expect(await imageDataUrlProblem(url('png', padded), padded.length)).toBeNull();
    expect(await imageDataUrlProblem(url('png', padded), padded.length - 1)).toBe('too_large');
  });

  it('refuses an oversized value before decoding it', async () => {
    const text = `data:image/png;base64,${'A'.repeat(8 * MIB)}`;
    expect(await imageDataUrlProblem(text, MIB)).toBe('too_large');
  });

  it.each([
    ['a non-string', 42],
    ['null', null],
    ['a plain string', 'hello'],
    ['a gif prefix', 'data:image/gif;base64,R0lGODlh'],
    ['an svg prefix', 'data:image/svg+xml;base64,PHN2Zz4='],
    ['a prefix without base64', 'data:image/png,abc'],
    ['an uppercase prefix', 'DATA:image/png;base64,AAAA'],
  ])('reports not_data_url for %s', async (_label, value) => {
    expect(await imageDataUrlProblem(value, MIB)).toBe('not_data_url');
  });

  it.each([
    ['empty data', 'data:image/png;base64,'],
    ['a bad alphabet', 'data:image/png;base64,ab$d'],
    ['a bad length', 'data:image/png;base64,abcde'],
    ['whitespace', 'data:image/png;base64,iVBO Rw0K'],
    ['padding in the middle', 'data:image/png;base64,ab==abcd'],
  ])('reports bad_base64 for %s', async (_label, value) => {
    expect(await imageDataUrlProblem(value, MIB)).toBe('bad_base64');
  });

  it('reports not_image for a type mismatch, a wrong signature and a broken header', async () => {
    expect(await imageDataUrlProblem(url('png', jpeg), MIB)).toBe('not_image');
    expect(await imageDataUrlProblem(url('jpeg', png), MIB)).toBe('not_image');
    expect(await imageDataUrlProblem(url('png', Buffer.from('GIF89a-not-a-png')), MIB)).toBe('not_image');
    expect(await imageDataUrlProblem(url('png', png.subarray(0, 12)), MIB)).toBe('not_image');
    expect(await imageDataUrlProblem(url('jpeg', Buffer.from([0xff, 0xd8, 0xff, 0, 1, 2, 3, 4])), MIB)).toBe('not_image');
  });

  it.each([['zlib_header'], ['truncated'], ['bad_filter']] as const)(
    'reports not_image for a PNG whose header is sound and whose pixel data does not decode (%s)',
    async (how) => {
      const broken = rgbaPng(how);
      // The header alone says a 4 x 4 PNG: only decoding the pixels tells.
      expect(await sharp(broken).metadata()).toMatchObject({ format: 'png', width: 4, height: 4 });
      expect(await imageDataUrlProblem(url('png', broken), MIB)).toBe('not_image');
    },
  );

  it('reports not_image for a JPEG cut short in its scan data', async () => {
    const photo = await sharp({
      create: { width: 64, height: 64, channels: 3, background: '#000000', noise: { type: 'gaussian', mean: 128, sigma: 40 } },
    })
      .jpeg()
      .toBuffer();
    const cut = photo.subarray(0, Math.floor(photo.length * 0.7));
    expect(await sharp(cut).metadata()).toMatchObject({ format: 'jpeg', width: 64, height: 64 });
    expect(await imageDataUrlProblem(url('jpeg', cut), MIB)).toBe('not_image');
  });

  it('accepts a JPEG that libjpeg decodes with a warning only (stray bytes before a marker)', async () => {
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    expect(sof).toBeGreaterThan(2);
    const stray = Buffer.concat([jpeg.subarray(0, sof), Buffer.from('stray'), jpeg.subarray(sof)]);
    expect(await imageDataUrlProblem(url('jpeg', stray), MIB)).toBeNull();
  });

  it('phrases each problem with the field label and the limit', () => {
    expect(imageProblemMessage('too_large', 'logo', 2 * MIB)).toBe('The logo must not be larger than 2 MiB.');
    expect(imageProblemMessage('bad_base64', 'signature', MIB)).toBe('The signature data URL does not contain valid base64.');
  });
});
