import { Inject, Injectable } from '@nestjs/common';
import axios, { AxiosInstance, AxiosRequestConfig, isAxiosError } from 'axios';
import { Readable } from 'stream';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import {
  DicomJsonDataset,
  OrthancChanges,
  OrthancInstance,
  OrthancInstanceMetadata,
  OrthancSeries,
  OrthancStudy,
} from './imgsrv.types';
import { imageTagsFromSimplified, renderRefusal } from './decode-safety';

export const RENDERED_TIMEOUT_MS = 20_000;

export interface RenderedImage {
  contentType: string;
  stream: Readable;
}

/** Retries of one call to the image server (the job queue adds slower retries on top). */
export interface RetryPolicy {
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 3, baseDelayMs: 300, maxDelayMs: 3000 };

/** Statuses worth another try: the server or a proxy in front of it is briefly unwell. */
const TRANSIENT_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

/** A failed call to the image server; `status` is undefined when no HTTP answer came at all. */
export class ImgsrvError extends Error {
  constructor(
    message: string,
    readonly path: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ImgsrvError';
  }

  /** Network errors, timeouts and 5xx: worth retrying. A 4xx answer will not change by retrying. */
  get transient(): boolean {
    return this.status === undefined || TRANSIENT_STATUSES.has(this.status);
  }
}

function toImgsrvError(error: unknown, path: string): ImgsrvError {
  if (error instanceof ImgsrvError) return error;
  if (isAxiosError(error)) {
    const status = error.response?.status;
    const reason = status !== undefined ? `HTTP ${status}` : (error.code ?? error.message);
    return new ImgsrvError(`image server GET ${path}: ${reason}`, path, status);
  }
  return new ImgsrvError(`image server GET ${path}: ${(error as Error)?.message ?? error}`, path);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Exponential backoff with +-25 % jitter, so many jobs retrying together do not stampede. */
export function backoffDelay(policy: RetryPolicy, attempt: number): number {
  const base = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.round(base * (0.75 + Math.random() * 0.5));
}

const id = (value: string) => encodeURIComponent(value);

/**
 * The only code that speaks the image server's (Orthanc's) REST API. Basic auth from
 * IMGSRV_USERNAME / IMGSRV_PASSWORD. Reads retry network errors and 5xx with exponential backoff;
 * a 4xx answer is final.
 */
@Injectable()
export class ImgsrvClient {
  readonly http: AxiosInstance;
  /** Mutable so tests can shorten it. */
  retryPolicy: RetryPolicy = { ...DEFAULT_RETRY_POLICY };
  /** The whole of a rendering call (renderedJpeg, renderedBuffer), body included. Mutable so tests can shorten it. */
  renderedTimeoutMs = RENDERED_TIMEOUT_MS;
  private dicomWebKnown?: { value: boolean; until: number };

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.http = axios.create({
      baseURL: config.IMGSRV_URL.replace(/\/+$/, ''),
      auth: config.IMGSRV_USERNAME ? { username: config.IMGSRV_USERNAME, password: config.IMGSRV_PASSWORD } : undefined,
      timeout: 30_000,
      maxRedirects: 0,
    });
  }

  /**
   * A JPEG rendering of an instance, streamed (not buffered); rejects on any non-2xx answer. The
   * whole call, body included, is bounded by renderedTimeoutMs (or by `deadline`, a bound shared with
   * the calls before it): axios's `timeout` alone stops counting once the headers of a streamed
   * answer arrive, so a body that stalls would hang.
   */
  async renderedJpeg(
    imgsrvInstanceId: string,
    params: Record<string, string | number> = {},
    deadline?: AbortSignal,
  ): Promise<RenderedImage> {
    const response = await this.http.get<Readable>(`/instances/${encodeURIComponent(imgsrvInstanceId)}/rendered`, {
      params,
      headers: { Accept: 'image/jpeg' },
      responseType: 'stream',
      timeout: this.renderedTimeoutMs,
      signal: deadline ?? AbortSignal.timeout(this.renderedTimeoutMs),
    });
    return { contentType: String(response.headers['content-type'] ?? 'image/jpeg'), stream: response.data };
  }

  /**
   * A JPEG rendering of an instance in memory (thumbnails). Orthanc answers 415 when there is no
   * image. Bounded as a whole, retries included, by renderedTimeoutMs (or by `deadline`, as
   * renderedJpeg): axios's `timeout` is the socket's idle time, which a body arriving a few bytes at
   * a time never reaches.
   */
  async renderedBuffer(
    imgsrvInstanceId: string,
    params: Record<string, string | number> = {},
    deadline?: AbortSignal,
  ): Promise<Buffer> {
    const data = await this.get<ArrayBuffer>(`/instances/${id(imgsrvInstanceId)}/rendered`, {
      params,
      headers: { Accept: 'image/jpeg' },
      responseType: 'arraybuffer',
      timeout: this.renderedTimeoutMs,
      signal: deadline ?? AbortSignal.timeout(this.renderedTimeoutMs),
    });
    return Buffer.from(data);
  }

  /** `GET /studies/{id}`, or null when the image server does not hold that study (any more). */
  async getStudy(imgsrvStudyId: string): Promise<OrthancStudy | null> {
    return this.orNull(() => this.get<OrthancStudy>(`/studies/${id(imgsrvStudyId)}`));
  }

  async getSeries(imgsrvSeriesId: string): Promise<OrthancSeries | null> {
    return this.orNull(() => this.get<OrthancSeries>(`/series/${id(imgsrvSeriesId)}`));
  }

  /** Every series of a study as full objects, in one call. */
  async listStudySeries(imgsrvStudyId: string): Promise<OrthancSeries[]> {
    return this.get<OrthancSeries[]>(`/studies/${id(imgsrvStudyId)}/series`, { params: { expand: 'true' } });
  }

  /** Every instance of a study as full objects, in one call (not one call per instance). */
  async listStudyInstances(imgsrvStudyId: string): Promise<OrthancInstance[]> {
    return this.get<OrthancInstance[]>(`/studies/${id(imgsrvStudyId)}/instances`, { params: { expand: 'true' } });
  }

  /** Reception metadata of an instance (RemoteAET, RemoteIP, Origin...). */
  async getInstanceMetadata(imgsrvInstanceId: string): Promise<OrthancInstanceMetadata | null> {
    return this.orNull(() =>
      this.get<OrthancInstanceMetadata>(`/instances/${id(imgsrvInstanceId)}/metadata`, { params: { expand: 'true' } }),
    );
  }

  /** All tags of one instance by name (the slow path when DICOMweb is not available). */
  async getSimplifiedTags(imgsrvInstanceId: string, signal?: AbortSignal): Promise<Record<string, unknown> | null> {
    return this.orNull(() =>
      this.get<Record<string, unknown>>(`/instances/${id(imgsrvInstanceId)}/simplified-tags`, { signal }),
    );
  }

  /** Whether the DICOMweb plugin answers; remembered for a minute. */
  async hasDicomWeb(signal?: AbortSignal): Promise<boolean> {
    const now = Date.now();
    if (this.dicomWebKnown && this.dicomWebKnown.until > now) return this.dicomWebKnown.value;
    let value: boolean;
    try {
      const plugins = await this.get<unknown>('/plugins', { signal });
      value = Array.isArray(plugins) && plugins.includes('dicom-web');
    } catch (error) {
      if ((error as ImgsrvError).transient) throw error;
      value = false;
    }
    this.dicomWebKnown = { value, until: now + 60_000 };
    return value;
  }

  /**
   * QIDO-RS: the instances of one series with the requested extra tags (`includefield`), all of
   * them or one page (`offset`, `limit`: pages follow Orthanc's storage order of the series).
   */
  async qidoSeriesInstances(
    studyInstanceUid: string,
    seriesInstanceUid: string,
    includeFields: string[],
    page?: { offset: number; limit: number },
  ): Promise<DicomJsonDataset[]> {
    const data = await this.get<DicomJsonDataset[] | ''>(
      `/dicom-web/studies/${id(studyInstanceUid)}/series/${id(seriesInstanceUid)}/instances`,
      { params: { includefield: includeFields.join(','), ...page }, headers: { Accept: 'application/dicom+json' } },
    );
    // An empty match may come back as 204 / empty body.
    return Array.isArray(data) ? data : [];
  }

  /**
   * Why this instance's pixels must not be decoded by the image server, or null (decode-safety.ts).
   * Its attributes come from WADO-RS metadata, which gives each element the VR the file gives it;
   * without DICOMweb (or the instance's UIDs), from its simplified tags, values only; without either,
   * the instance is refused. `signal` bounds the calls (and stops their retries).
   */
  async decodeRefusal(
    instance: { imgsrvInstanceId?: string; studyInstanceUid: string; seriesInstanceUid: string; sopInstanceUid: string },
    signal?: AbortSignal,
  ): Promise<string | null> {
    const { studyInstanceUid, seriesInstanceUid, sopInstanceUid } = instance;
    if (studyInstanceUid && seriesInstanceUid && sopInstanceUid && (await this.hasDicomWeb(signal))) {
      const metadata = await this.get<DicomJsonDataset[] | ''>(
        `/dicom-web/studies/${id(studyInstanceUid)}/series/${id(seriesInstanceUid)}/instances/${id(sopInstanceUid)}/metadata`,
        { headers: { Accept: 'application/dicom+json' }, signal },
      );
      if (Array.isArray(metadata) && metadata.length > 0) return renderRefusal(metadata[0]);
    }
    if (!instance.imgsrvInstanceId) return 'its attributes could not be read';
    return renderRefusal(imageTagsFromSimplified(await this.getSimplifiedTags(instance.imgsrvInstanceId, signal)));
  }

  /**
   * A thumbnail's source: decodeRefusal's check, then renderedBuffer, both within one
   * renderedTimeoutMs (as the API's renderings, StudyImagesService); the check's reason instead of a
   * rendering when it refuses the instance.
   */
  async checkedRenderedBuffer(
    instance: { imgsrvInstanceId: string; studyInstanceUid: string; seriesInstanceUid: string; sopInstanceUid: string },
    params: Record<string, string | number> = {},
  ): Promise<{ image: Buffer } | { refusal: string }> {
    const deadline = AbortSignal.timeout(this.renderedTimeoutMs);
    const refusal = await this.decodeRefusal(instance, deadline);
    return refusal ? { refusal } : { image: await this.renderedBuffer(instance.imgsrvInstanceId, params, deadline) };
  }

  /** One page of the change feed, after sequence number `since`. */
  async getChanges(since: number, limit: number): Promise<OrthancChanges> {
    return this.get<OrthancChanges>('/changes', { params: { since, limit } });
  }

  /** The sequence number of the newest change (0 on an empty server). */
  async lastChangeSeq(): Promise<number> {
    const answer = await this.get<OrthancChanges>('/changes', { params: { last: '' } });
    return Number(answer?.Last) || 0;
  }

  /** One page of the studies the image server holds, as full objects, in its storage order. */
  async listStudies(since: number, limit: number): Promise<OrthancStudy[]> {
    return this.get<OrthancStudy[]>('/studies', { params: { expand: 'true', since, limit } });
  }

  async countStudies(): Promise<number> {
    const stats = await this.get<{ CountStudies?: number }>('/statistics');
    return Number(stats?.CountStudies) || 0;
  }

  /**
   * `POST /tools/create-dicom`: a new instance under `parent` (an Orthanc study or series id: the
   * patient and study tags are copied from it), e.g. an Encapsulated PDF with `content` as a data
   * URL, with the series and instance UIDs given in `tags`. Not retried here: the caller's job is,
   * and sends the same UIDs again, so a retry stores the same instance (Orthanc keys instances by
   * their UIDs).
   */
  async createDicom(
    parent: string,
    tags: Record<string, string>,
    content: string,
  ): Promise<{ ID: string; ParentSeries?: string }> {
    const path = '/tools/create-dicom';
    try {
      const response = await this.http.post<{ ID: string; ParentSeries?: string }>(
        path,
        // Force: with a Parent, Orthanc refuses given UIDs (they count as inherited) unless forced.
        { Parent: parent, Tags: tags, Content: content, Force: true },
        { maxBodyLength: Infinity, maxContentLength: 1024 * 1024 },
      );
      return response.data;
    } catch (error) {
      throw toImgsrvError(error, path);
    }
  }

  /**
   * The study as a ZIP of its DICOM files, streamed as Orthanc writes it (never buffered). `signal`
   * aborts the upstream request (the client went away). No retry: bytes may already have gone out.
   * The timeout is the socket's idle time, not the transfer's.
   */
  async studyArchive(imgsrvStudyId: string, signal: AbortSignal): Promise<Readable> {
    const path = `/studies/${id(imgsrvStudyId)}/archive`;
    // The answer must start within the usual timeout; once it has, the transfer takes what it takes.
    const started = new AbortController();
    const timer = setTimeout(() => started.abort(), this.http.defaults.timeout);
    try {
      const response = await this.http.get<Readable>(path, {
        responseType: 'stream',
        signal: AbortSignal.any([signal, started.signal]),
        // The ZIP is already compressed: no gzip on top of it (HttpCompressionEnabled).
        headers: { 'Accept-Encoding': 'identity' },
        timeout: 0,
      });
      return response.data;
    } catch (error) {
      throw toImgsrvError(error, path);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The MD5 of an instance's stored file, or null when the image server does not hold the
   * instance (an instance's id is derived from its patient, study, series and SOP UIDs).
   */
  async instanceFileMd5(imgsrvInstanceId: string): Promise<string | null> {
    return this.orNull(() =>
      this.get<string>(`/instances/${id(imgsrvInstanceId)}/attachments/dicom/md5`, { responseType: 'text' }),
    );
  }

  /**
   * The image server's resources carrying this DICOM UID (a SOPInstanceUID: instances; a
   * StudyInstanceUID: studies, one per PatientID), as `/tools/lookup` answers: a read, sent as POST.
   */
  async lookup(uid: string): Promise<Array<{ ID: string; Type: string }>> {
    const path = '/tools/lookup';
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await this.http.post<Array<{ ID: string; Type: string }>>(path, uid, {
          headers: { 'Content-Type': 'text/plain' },
        });
        return Array.isArray(response.data) ? response.data : [];
      } catch (error) {
        const failure = toImgsrvError(error, path);
        if (!failure.transient || attempt >= this.retryPolicy.retries) throw failure;
        await sleep(backoffDelay(this.retryPolicy, attempt));
      }
    }
  }

  /**
   * Stores one DICOM file (POST /instances), streamed from `body` (or sent from memory); the image server's answer
   * (`ID`, `ParentStudy`, `Status`). No retry: the stream is read once.
   */
  async storeInstance(body: Readable | Buffer, length: number): Promise<{ ID: string; ParentStudy: string; Status: string }> {
    const path = '/instances';
    try {
      const response = await this.http.post(path, body, {
        headers: { 'Content-Type': 'application/dicom', 'Content-Length': String(length) },
        maxBodyLength: Infinity,
        maxContentLength: 1024 * 1024,
        timeout: 0,
      });
      return response.data;
    } catch (error) {
      throw toImgsrvError(error, path);
    }
  }

  private async get<T>(path: string, config: AxiosRequestConfig = {}): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        const response = await this.http.get<T>(path, config);
        return response.data;
      } catch (error) {
        const failure = toImgsrvError(error, path);
        // Past the call's own bound (its signal), another try would only be cancelled again.
        const boundPassed = (config.signal as AbortSignal | undefined)?.aborted;
        if (!failure.transient || boundPassed || attempt >= this.retryPolicy.retries) throw failure;
        await sleep(backoffDelay(this.retryPolicy, attempt));
      }
    }
  }

  private async orNull<T>(call: () => Promise<T>): Promise<T | null> {
    try {
      return await call();
    } catch (error) {
      if ((error as ImgsrvError).status === 404) return null;
      throw error;
    }
  }
}
