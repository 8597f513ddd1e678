import sharp from 'sharp';

export const THUMBNAIL_SIZE = 300;

/**
 * A THUMBNAIL_SIZE square JPEG of any image sharp can read: scaled to fit, aspect ratio kept, the
 * rest filled with black (the usual background of a medical image).
 */
export async function makeThumbnail(image: Buffer): Promise<Buffer> {
  return sharp(image, { failOn: 'error' })
    .rotate()
    .resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: 'contain', background: { r: 0, g: 0, b: 0, alpha: 1 } })
    .flatten({ background: { r: 0, g: 0, b: 0 } })
    .jpeg({ quality: 85, mozjpeg: false })
    .toBuffer();
}
