import { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { randomInt } from 'crypto';
import { request as httpRequest } from 'http';

export interface RequestOptions {
  token?: string;
  body?: unknown;
  /** A raw payload with its own content type (for malformed bodies). */
  raw?: string | Buffer;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  cookies?: Record<string, string>;
  /** Client address; defaults to a random one so per-IP rate limits do not couple tests. */
  ip?: string;
}

export interface TestResponse {
  status: number;
  body: any;
  headers: LightMyRequestResponse['headers'];
  raw: Buffer;
  cookies: Array<{ name: string; value: string; [key: string]: unknown }>;
}

export const randomIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

export class HttpClient {
  constructor(private readonly app: NestFastifyApplication) {}

  async request(method: InjectOptions['method'], url: string, options: RequestOptions = {}): Promise<TestResponse> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let payload: InjectOptions['payload'];
    if (options.raw !== undefined) payload = options.raw;
    else if (options.body !== undefined) {
      payload = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await this.app.inject({
      method,
      url,
      headers,
      payload,
      query: options.query,
      cookies: options.cookies,
      remoteAddress: options.ip ?? randomIp(),
    });
    const contentType = String(response.headers['content-type'] ?? '');
    let body: unknown = response.body;
    if (contentType.includes('json') && response.body) {
      try {
        body = JSON.parse(response.body);
      } catch {
        body = response.body;
      }
    }
    return {
      status: response.statusCode,
      body,
      headers: response.headers,
      raw: response.rawPayload,
      cookies: response.cookies as TestResponse['cookies'],
    };
  }

  get(url: string, options?: RequestOptions) {
    return this.request('GET', url, options);
  }
  post(url: string, options?: RequestOptions) {
    return this.request('POST', url, options);
  }
  patch(url: string, options?: RequestOptions) {
    return this.request('PATCH', url, options);
  }
  delete(url: string, options?: RequestOptions) {
    return this.request('DELETE', url, options);
  }
}

/**
 * A request over a real socket to a listening app: for what only a socket reaches (routes answered
 * on Node's request event, see RawRoutes). Header values are sent as the bytes of their UTF-8 form,
 * as a proxy forwards them.
 */
export function socketRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<TestResponse> {
  const wireHeaders = Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, Buffer.from(value, 'utf8').toString('latin1')]),
  );
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${baseUrl}${path}`, { method, headers: wireHeaders, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const raw = Buffer.concat(chunks);
        const text = raw.toString('utf8');
        let body: unknown = text;
        if (String(response.headers['content-type'] ?? '').includes('json') && text) {
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
        }
        resolve({
          status: response.statusCode ?? 0,
          body,
          headers: response.headers as TestResponse['headers'],
          raw,
          cookies: [],
        });
      });
    });
    request.on('error', reject);
    request.end();
  });
}
