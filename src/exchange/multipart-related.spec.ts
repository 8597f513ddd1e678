import { multipartBoundary, MultipartError, readMultipart } from './multipart-related';

async function collect(body: Buffer, boundary: string, chunkSize: number) {
  const parts: Array<{ headers: Record<string, string>; data: Buffer }> = [];
  let current: Buffer[] = [];
  async function* chunks() {
    for (let at = 0; at < body.length; at += chunkSize) yield body.subarray(at, at + chunkSize);
  }
  await readMultipart(chunks(), boundary, {
    start: async (headers) => {
      parts.push({ headers, data: Buffer.alloc(0) });
      current = [];
    },
    data: async (chunk) => void current.push(Buffer.from(chunk)),
    end: async () => void (parts[parts.length - 1].data = Buffer.concat(current)),
  });
  return parts;
}

describe('readMultipart', () => {
  const payloads = [Buffer.from('first\r\n--notit'), Buffer.alloc(70_000, 7), Buffer.alloc(0)];
  const body = Buffer.concat([
    Buffer.from('preamble\r\n'),
    ...payloads.flatMap((payload) => [
      Buffer.from('--XyZ\r\nContent-Type: application/dicom\r\n\r\n'),
      payload,
      Buffer.from('\r\n'),
    ]),
    Buffer.from('--XyZ--\r\nepilogue'),
  ]);

  it.each([1, 3, 17, 4096, 1 << 20])('gives every part whole, whatever the chunk size (%i)', async (size) => {
    const parts = await collect(body, 'XyZ', size);
    expect(parts.map((p) => p.data)).toEqual(payloads);
    expect(parts[0].headers).toEqual({ 'content-type': 'application/dicom' });
  });

  it('refuses a body without its closing delimiter, or that is not multipart', async () => {
    await expect(collect(body.subarray(0, 200), 'XyZ', 64)).rejects.toBeInstanceOf(MultipartError);
    await expect(collect(Buffer.from('{"a":1}'), 'XyZ', 64)).rejects.toBeInstanceOf(MultipartError);
  });

  it('refuses part headers over 16 KiB, whether their end comes in the same chunk or later', async () => {
    const headers = (size: number) =>
      Buffer.concat([
        Buffer.from(`--XyZ\r\nContent-Type: application/dicom\r\nX-Pad: ${'a'.repeat(size)}\r\n\r\n`),
        Buffer.from('data\r\n--XyZ--\r\n'),
      ]);
    for (const chunk of [64, 1 << 20]) {
      await expect(collect(headers(200_000), 'XyZ', chunk)).rejects.toThrow('part headers too large');
      await expect(collect(headers(16_000), 'XyZ', chunk)).resolves.toHaveLength(1);
    }
  });

  it('reads the boundary of multipart/related only', () => {
    expect(multipartBoundary('multipart/related; type="application/dicom"; boundary=abc')).toBe('abc');
    expect(multipartBoundary('multipart/related; boundary="a b"; type=application/dicom')).toBe('a b');
    expect(multipartBoundary('multipart/form-data; boundary=abc')).toBeNull();
    expect(multipartBoundary('multipart/related')).toBeNull();
    expect(multipartBoundary(undefined)).toBeNull();
  });
});
