import sharp from 'sharp';
import { mapWithConcurrency } from './concurrency';
import { makeThumbnail } from './thumbnails';

async function jpeg(width: number, height: number, grey = 200): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: { r: grey, g: grey, b: grey } } })
    .jpeg()
    .toBuffer();
}

describe('makeThumbnail', () => {
  it('letterboxes a wide image into a 300x300 JPEG with black bars', async () => {
    const thumbnail = await makeThumbnail(await jpeg(600, 200));
    const meta = await sharp(thumbnail).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 300, 300]);
    const { data, info } = await sharp(thumbnail).greyscale().raw().toBuffer({ resolveWithObject: true });
    const at = (x: number, y: number) => data[y * info.width + x];
    expect(at(150, 10)).toBeLessThan(20); // bar above
    expect(at(150, 290)).toBeLessThan(20); // bar below
    expect(at(150, 150)).toBeGreaterThan(180); // the image itself
  });

  it('scales small images up to 300x300 and keeps a tall one letterboxed left and right', async () => {
    const thumbnail = await makeThumbnail(await jpeg(16, 32));
    const { data, info } = await sharp(thumbnail).greyscale().raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height]).toEqual([300, 300]);
    expect(data[150 * 300 + 5]).toBeLessThan(20);
    expect(data[150 * 300 + 150]).toBeGreaterThan(180);
  });

  it('rejects bytes that are not an image', async () => {
    await expect(makeThumbnail(Buffer.from('not an image'))).rejects.toThrow();
  });
});

describe('mapWithConcurrency', () => {
  it('keeps order and never runs more than the limit at once', async () => {
    let running = 0;
    let peak = 0;
    const result = await mapWithConcurrency([5, 1, 4, 2, 3, 0], 2, async (n) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((resolve) => setTimeout(resolve, n * 3));
      running--;
      return n * 10;
    });
    expect(result).toEqual([50, 10, 40, 20, 30, 0]);
    expect(peak).toBe(2);
    expect(await mapWithConcurrency([], 3, async () => 1)).toEqual([]);
  });
});
