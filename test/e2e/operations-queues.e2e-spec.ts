import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { randomUUID } from 'crypto';
import { AccountStatusService } from '../../src/auth/account-status.service';
import { INDEX_QUEUE, RECONCILE_QUEUE, REPORT_FILING_QUEUE, STUDY_QUEUE } from '../../src/common/queues/queues.module';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';

/**
 * The queue board at /queues. The app gets its own queue prefix, so that no other test file's
 * worker can take the jobs made here and the counts are exact.
 */
describe('Operations: queue board at /queues', () => {
  let t: TestApp;
  let superToken: string;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let reconcile: Queue;

  const put = (url: string, token?: string) => t.http.request('PUT', url, { token });
  const UNAUTHENTICATED = { message: 'Unauthenticated.' };
  const FORBIDDEN = { error: 'Forbidden' };

  /** A job of the reconcile queue that ran once and failed (attempts exhausted). */
  async function failedJob(): Promise<string> {
    await reconcile.add({ probe: randomUUID() }, { attempts: 1, jobId: randomUUID() });
    const job = await reconcile.getNextJob();
    if (!job) throw new Error('no job to take');
    await job.moveToFailed({ message: 'image server down' }, true);
    // As a worker does once it is done with a job; a locked job cannot be retried.
    await job.releaseLock();
    return String(job.id);
  }

  beforeAll(async () => {
    t = await createTestApp({ QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_board` });
    reconcile = t.app.get<Queue>(getQueueToken(RECONCILE_QUEUE));
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    clinic = await createClinic(t.db, t.http);
  });
  afterAll(() => t.close());

  describe('access', () => {
    const paths = [
      '/queues',
      '/queues/api/queues',
      '/queues/static/css/not-there.css',
      `/queues/api/queues/${RECONCILE_QUEUE}/1`,
    ];

    it.each(paths)('GET %s without a token is 401 {message: Unauthenticated.}', async (path) => {
      const res = await t.http.get(path);
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHENTICATED);
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('refuses a malformed token, a forged signature and a viewer-token-like uuid with 401', async () => {
      const [, payload] = superToken.split('.');
      const forged = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${payload}.AAAA`;
      for (const token of ['not-a-jwt', forged, randomUUID()]) {
        const res = await t.http.get('/queues/api/queues', { token });
        expect({ token, status: res.status, body: res.body }).toEqual({ token, status: 401, body: UNAUTHENTICATED });
      }
    });

    it('is 403 {error: Forbidden} for a regular user and a tenant admin, page, API and retry alike', async () => {
      for (const token of [clinic.token1, clinic.adminToken]) {
        for (const res of [
          await t.http.get('/queues', { token }),
          await t.http.get('/queues/api/queues', { token }),
          await put(`/queues/api/queues/${RECONCILE_QUEUE}/retry/failed`, token),
        ]) {
          expect(res.status).toBe(403);
          expect(res.body).toEqual(FORBIDDEN);
        }
      }
    });

    it('is 403 for a non-super-admin presenting the cookie', async () => {
      const res = await t.http.get('/queues', { cookies: { pacs_access_token: clinic.token2 } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual(FORBIDDEN);
    });

    it('serves the board page to a super admin with the bearer header', async () => {
      const res = await t.http.get('/queues', { token: superToken });
      expect(res.status).toBe(200);
      expect(String(res.headers['content-type'])).toContain('text/html');
      expect(res.body).toContain('<base href="/queues/"');
      expect(res.body).toContain('PACS queues');
    });

    it('serves the board and its assets to a super admin with the pacs_access_token cookie', async () => {
      const page = await t.http.get('/queues', { cookies: { pacs_access_token: superToken } });
      expect(page.status).toBe(200);
      const script = /src="(static\/js\/main[^"]+\.js)"/.exec(page.body)?.[1];
      expect(script).toBeDefined();
      const asset = await t.http.get(`/queues/${script}`, { cookies: { pacs_access_token: superToken } });
      expect(asset.status).toBe(200);
      expect(String(asset.headers['content-type'])).toContain('javascript');
      const anonymous = await t.http.get(`/queues/${script}`);
      expect(anonymous.status).toBe(401);
    });

    it('prefers the bearer header over the cookie, like the API', async () => {
      const res = await t.http.get('/queues/api/queues', { token: clinic.token1, cookies: { pacs_access_token: superToken } });
      expect(res.status).toBe(403);
    });

    it('lets the board page load its own scripts and styles (not the API deny-all policy)', async () => {
      const res = await t.http.get('/queues', { token: superToken });
      const csp = String(res.headers['content-security-policy'] ?? '');
      if (csp) {
        expect(csp).toContain("script-src 'self'");
        expect(csp).toContain("frame-ancestors 'none'");
      }
    });

    it('refuses a super admin once signed out (blacklisted token) or deactivated', async () => {
      const admin = await createUser(t.db, { is_super_admin: true });
      const token = await login(t.http, admin.email);
      expect((await t.http.get('/queues/api/queues', { token })).status).toBe(200);
      expect((await t.http.post('/api/logout', { token })).status).toBe(200);
      const signedOut = await t.http.get('/queues/api/queues', { token });
      expect(signedOut.status).toBe(401);
      expect(signedOut.body).toEqual(UNAUTHENTICATED);

      const other = await login(t.http, admin.email);
      await t.db.query('UPDATE users SET is_active = false WHERE id = $1', [admin.id]);
      t.app.get(AccountStatusService).forgetAll();
      const deactivated = await t.http.get('/queues/api/queues', { token: other });
      expect(deactivated.status).toBe(401);
      expect(deactivated.body).toEqual(UNAUTHENTICATED);
    });

    it('leaves the API itself untouched: /api routes still answer as before', async () => {
      const res = await t.http.get('/api/me', { token: superToken });
      expect(res.status).toBe(200);
    });
  });

  describe('queues and failed jobs', () => {
    it('lists the three ingestion queues and the report filing queue with their counts', async () => {
      const res = await t.http.get('/queues/api/queues', { token: superToken });
      expect(res.status).toBe(200);
      const names = (res.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
      expect(names).toEqual([INDEX_QUEUE, RECONCILE_QUEUE, REPORT_FILING_QUEUE, STUDY_QUEUE].sort());
    });

    it('shows a failed job with its reason, and a super admin retries it', async () => {
      const id = await failedJob();
      const listed = await t.http.get('/queues/api/queues', {
        token: superToken,
        query: { activeQueue: RECONCILE_QUEUE, status: 'failed', page: '1' },
      });
      const queue = (listed.body.queues as Array<{ name: string; jobs: Array<{ id: string; failedReason: string }> }>).find(
        (q) => q.name === RECONCILE_QUEUE,
      );
      expect(queue!.jobs.find((j) => String(j.id) === id)?.failedReason).toBe('image server down');

      const forbidden = await put(`/queues/api/queues/${RECONCILE_QUEUE}/${id}/retry`, clinic.adminToken);
      expect(forbidden.status).toBe(403);
      expect(await (await reconcile.getJob(id))!.getState()).toBe('failed');

      const retried = await put(`/queues/api/queues/${RECONCILE_QUEUE}/${id}/retry`, superToken);
      expect(retried.status).toBe(204);
      expect(await (await reconcile.getJob(id))!.getState()).toBe('waiting');
      await (await reconcile.getJob(id))!.remove();
    });

    it('retries every failed job of a queue at once', async () => {
      const ids = [await failedJob(), await failedJob()];
      const res = await put(`/queues/api/queues/${RECONCILE_QUEUE}/retry/failed`, superToken);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { retried: 2, skipped: 0 } });
      for (const id of ids) {
        expect(await (await reconcile.getJob(id))!.getState()).toBe('waiting');
        await (await reconcile.getJob(id))!.remove();
      }
    });

    it('answers 404 for an unknown queue or job, not 500', async () => {
      const unknownQueue = await t.http.get('/queues/api/queues/nope/1', { token: superToken });
      expect(unknownQueue.status).toBe(404);
      const unknownJob = await put(`/queues/api/queues/${RECONCILE_QUEUE}/does-not-exist/retry`, superToken);
      expect(unknownJob.status).toBe(404);
    });
  });

  describe('/metrics without METRICS_TOKEN', () => {
    it('is not served: 404 exactly like an unknown path, with or without a bearer', async () => {
      const unknown = await t.http.get('/no-such-path');
      for (const res of [await t.http.get('/metrics'), await t.http.get('/metrics', { token: 'anything-at-all-123' })]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(unknown.body);
      }
      expect(unknown.body).toEqual({ message: 'Not found.' });
    });
  });
});
