import { Prng } from './prng';

/** Bytes of small real images, to build data URLs that tell the truth or lie about their type. */
export const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);
export const JPEG_HEADER = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01]);
export const GIF_1X1 = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF');
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(1)</script></svg>');
const HTML = Buffer.from('<html><script>fetch("/api/me")</script></html>');

export const SQL = [
  "' OR '1'='1",
  "'; DROP TABLE studies; --",
  '" OR ""="',
  '1) UNION SELECT password, email FROM users --',
  "' AND pg_sleep(5) --",
  '$1',
  "\\'; SELECT 1; --",
  "%' OR 1=1 --",
];
export const LIKE = ['%', '_', '\\', '%%', '\\%', '_%_', '%_\\', 'a%b_c\\d', '[a-z]*', '.*', '%00%'];
export const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0000'.repeat(64),
  '\ud800',
  '\udfff\ud800',
  '\uffff\ufffe',
  '\u202e\u0644\u0627',
  '👩‍⚕️🩻',
  'Zalgo̷̢͚̗̩̹͇̬͍͛̏̽̋',
  '<script>alert(1)</script>',
  '{{7*7}}${7*7}',
  '../../../../etc/passwd',
  '..\\..\\..\\windows\\win.ini',
  '%2e%2e%2f%2e%2e%2f',
  'null',
  'undefined',
  'NaN',
  '-1',
  '1e309',
  '0x7fffffff',
  'true',
  '[object Object]',
  '__proto__',
  'constructor',
  '\r\nSet-Cookie: x=1',
  'CRM 1234/sp',
  '123456/SP',
];

export function nastyString(rng: Prng): string {
  return rng.weighted<() => string>([
    [4, () => rng.pick(NASTY_STRINGS)],
    [3, () => rng.pick(SQL)],
    [3, () => rng.pick(LIKE)],
    [1, () => 'x'.repeat(rng.pick([255, 256, 1000, 70_000]))],
    [1, () => rng.pick(NASTY_STRINGS) + rng.pick(SQL) + rng.pick(LIKE)],
    [1, () => rng.uuid()],
    [1, () => rng.uuid().toUpperCase()],
    [1, () => `${rng.uuid()}\u0000`],
  ])();
}

/** A value of a random JSON type, sometimes deeply nested or huge. */
export function wrongValue(rng: Prng, depth = 0): unknown {
  return rng.weighted<() => unknown>([
    [3, () => nastyString(rng)],
    [2, () => rng.pick([0, -1, 1.5, 2 ** 53 + 1, -(2 ** 31), 1e308, 2])],
    [2, () => rng.pick([true, false, null])],
    [1, () => []],
    [1, () => ({})],
    [depth < 2 ? 1 : 0, () => [wrongValue(rng, depth + 1), wrongValue(rng, depth + 1)]],
    [depth < 2 ? 1 : 0, () => ({ [rng.pick(['$ne', '$gt', '__proto__', 'constructor', 'a'])]: wrongValue(rng, depth + 1) })],
    [0.3, () => nestedArrays(rng.pick([50, 500, 1000]))],
    [0.3, () => nestedObjects(rng.pick([50, 500, 1000]))],
    [0.5, () => lyingDataUrl(rng)],
  ])();
}

export function nestedArrays(depth: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function nestedObjects(depth: number): unknown {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

/** Data URLs for logo, signature and template background: truthful, lying, broken or huge. */
export function lyingDataUrl(rng: Prng): string {
  const b64 = (bytes: Buffer) => bytes.toString('base64');
  return rng.weighted<() => string>([
    [2, () => `data:image/png;base64,${b64(PNG_1X1)}`],
    [2, () => `data:image/png;base64,${b64(JPEG_HEADER)}`],
    [2, () => `data:image/jpeg;base64,${b64(PNG_1X1)}`],
    [1, () => `data:image/jpeg;base64,${b64(JPEG_HEADER)}`],
    [1, () => `data:image/gif;base64,${b64(GIF_1X1)}`],
    [1, () => `data:image/png;base64,${b64(GIF_1X1)}`],
    [1, () => `data:image/png;base64,${b64(PDF)}`],
    [1, () => `data:image/svg+xml;base64,${b64(SVG)}`],
    [1, () => `data:image/png;base64,${b64(SVG)}`],
    [1, () => `data:text/html;base64,${b64(HTML)}`],
    [1, () => `data:image/png;base64,${b64(PNG_1X1).slice(0, 10)}`],
    [1, () => `data:image/png;base64,!!!not*base64###`],
    [1, () => `data:image/png;base64,`],
    [1, () => `data:image/png,${PNG_1X1.toString('latin1')}`],
    [1, () => `data:image/PNG;BASE64,${b64(PNG_1X1)}`],
    [1, () => ` data:image/png;base64,${b64(PNG_1X1)}`],
    [1, () => `data:image/png;charset=utf-8;base64,${b64(PNG_1X1)}`],
    [1, () => `javascript:alert(1)//data:image/png;base64,${b64(PNG_1X1)}`],
    [0.3, () => `data:image/png;base64,${b64(Buffer.concat([PNG_1X1, Buffer.alloc(3 * 1024 * 1024)]))}`],
    [0.3, () => `data:image/jpeg;base64,${b64(Buffer.concat([JPEG_HEADER, Buffer.alloc(6 * 1024 * 1024)]))}`],
  ])();
}

/** Bodies that are not valid JSON documents, as raw bytes. */
export function malformedJson(rng: Prng): Buffer {
  return rng.weighted<() => Buffer>([
    [
      2,
      () =>
        Buffer.from(
          rng.pick(['{', '{"a":', '{"a":1,}', "{'a':1}", '[1,2', 'nul', 'tru', '{"a":1}}', '"', '{"__proto__":{"x":1}']),
        ),
    ],
    [1, () => Buffer.from([0xff, 0xfe, 0xfd, 0x00, 0xc3, 0x28])],
    [
      1,
      () =>
        Buffer.concat([
          Buffer.from('{"email":"'),
          Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0xe2, 0x28, 0xa1]),
          Buffer.from('","password":"x"}'),
        ]),
    ],
    [1, () => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')])],
    [1, () => Buffer.from('{"a":"\u0000\u0001\u0002"}')],
    [1, () => Buffer.from('\u0000')],
    [1, () => Buffer.from('['.repeat(rng.pick([1000, 100_000])))],
    [1, () => Buffer.from(`${'['.repeat(20_000)}${']'.repeat(20_000)}`)],
    [1, () => Buffer.from(`{"name":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`)],
    [1, () => Buffer.from('{"a":' + '1'.repeat(5000) + '}')],
    [1, () => Buffer.from('{"a":1e99999}')],
    [1, () => Buffer.from('   ')],
    [1, () => Buffer.from(`{"ID": "${'A'.repeat(100)}", "ID": 5}`)],
  ])();
}
