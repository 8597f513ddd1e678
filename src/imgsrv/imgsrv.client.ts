import { Inject, Injectable } from '@nestjs/common';
import axios, { AxiosInstance } from 'axios';
import { Readable } from 'stream';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';

export const RENDERED_TIMEOUT_MS = 20_000;

export interface RenderedImage {
  contentType: string;
  stream: Readable;
}

/**
 * The only code that speaks the image server's (Orthanc's) REST API. Basic auth from
 * IMGSRV_USERNAME / IMGSRV_PASSWORD.
 */
@Injectable()
export class ImgsrvClient {
  readonly http: AxiosInstance;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.http = axios.create({
      baseURL: config.IMGSRV_URL.replace(/\/+$/, ''),
      auth: config.IMGSRV_USERNAME
        ? { username: config.IMGSRV_USERNAME, password: config.IMGSRV_PASSWORD }
        : undefined,
      timeout: 30_000,
      maxRedirects: 0,
    });
  }

  /** A JPEG rendering of an instance, streamed (not buffered); rejects on any non-2xx answer. */
  async renderedJpeg(imgsrvInstanceId: string, params: Record<string, string | number> = {}): Promise<RenderedImage> {
    const response = await this.http.get<Readable>(`/instances/${encodeURIComponent(imgsrvInstanceId)}/rendered`, {
      params,
      headers: { Accept: 'image/jpeg' },
      responseType: 'stream',
      timeout: RENDERED_TIMEOUT_MS,
    });
    return { contentType: String(response.headers['content-type'] ?? 'image/jpeg'), stream: response.data };
  }
}
