import sharp from 'sharp';
import { imageDataUrlProblem, imageProblemMessage, MIB } from './image-data-url';

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

  it('phrases each problem with the field label and the limit', () => {
    expect(imageProblemMessage('too_large', 'logo', 2 * MIB)).toBe('The logo must not be larger than 2 MiB.');
    expect(imageProblemMessage('bad_base64', 'signature', MIB)).toBe('The signature data URL does not contain valid base64.');
  });
});
