import { crc32, deflateSync } from 'zlib';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A PNG chunk with its length and a correct CRC (so only what a test breaks is broken). */
export function pngChunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/**
 * A 4 x 4 RGBA PNG (which pdfkit decodes to split its alpha channel) with a sound header and CRCs,
 * sound or with its pixel data broken as `broken` says: the IDAT zlib header overwritten (pdfkit:
 * `incorrect header check`), the stream cut short, or a scanline with filter type 7 (there are five).
 */
export function rgbaPng(broken?: 'zlib_header' | 'truncated' | 'bad_filter'): Buffer {
  const rows = Buffer.alloc(4 * (1 + 4 * 4), 0x80);
  for (let row = 0; row < 4; row++) rows[row * 17] = broken === 'bad_filter' && row === 2 ? 7 : 0;
  let idat = deflateSync(rows);
  if (broken === 'zlib_header') idat = Buffer.concat([Buffer.from([0x00, 0x00]), idat.subarray(2)]);
  if (broken === 'truncated') idat = idat.subarray(0, idat.length - 6);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(4, 0);
  header.writeUInt32BE(4, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA
  return Buffer.concat([PNG_SIGNATURE, pngChunk('IHDR', header), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}
