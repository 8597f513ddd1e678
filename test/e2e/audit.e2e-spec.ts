import { Body, Controller, Get, HttpCode, Module, Post } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { getDataSourceToken } from '@nestjs/typeorm';
import { randomUUID } from 'crypto';
import * as http from 'http';
import { AddressInfo } from 'net';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { AuditAccess } from '../../src/audit/audit-access.decorator';
import { AuditService } from '../../src/audit/audit.service';
import { Auth } from '../../src/common/auth/decorators';
import { Errors } from '../../src/common/errors/api-errors';
import { UuidParam } from '../../src/common/http/uuid-param';
import { loadConfig } from '../../src/config/environment';
import { createTestApp } from '../support/app';
import { createImagedStudy, createThumbnail, fakeImageTags, fakeJpeg } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser } from '../support/factories';
import { HttpClient, socketRequest } from '../support/http';

/** Holds the `slow/...` handlers until released: requests still running when the application shuts down. */
const held = {
  entered: 0,
  gate: Promise.resolve(),
  release: () => undefined as void,
  hold(): void {
    this.entered = 0;
    this.gate = new Promise<void>((resolve) => (this.release = resolve));
  },
};

/**
 * Handlers shaped like the clinical reads (path id, nested target, body study_id), so the access
 * log is proven on its own; the real endpoints are covered in their own tests. `studies/:id` records
 * a report.read: a study.view is written once per caller and study in 5 minutes (ViewTrail).
 */
@Controller('__audit_test__')
class AuditedController {
  constructor() {}

  @Get('studies/:id')
  @Auth()
  @AuditAccess('report.read')
  open(@UuidParam('id', 'Study') id: string) {
    return { id };
  }

  @Get('studies/:id/instances/:instance/rendered')
  @Auth()
  @AuditAccess('study.image', { targetParam: 'instance' })
  image(@UuidParam('id', 'Study') id: string) {
    return { id };
  }

  @Get('slow/read/:id')
  @Auth()
  @AuditAccess('report.read')
  async slowRead(@UuidParam('id', 'Study') id: string) {
    held.entered++;
    await held.gate;
    return { id };
  }

  @Get('slow/view/:id')
  @Auth()
  @AuditAccess('study.view')
  async slowView(@UuidParam('id', 'Study') id: string) {
    held.entered++;
    await held.gate;
    return { id };
  }

  @Get('missing/:id')
  @Auth()
  @AuditAccess('study.view')
  missing(): never {
    throw Errors.notFound('Study');
  }

  @Post('viewer-token')
  @HttpCode(200)
  @Auth()
  @AuditAccess('viewer_token.issue', { studyBodyField: 'study_id' })
  token(@Body() body: Record<string, unknown>) {
    return { token: randomUUID(), study_id: body?.study_id };
  }
}

@Module({ controllers: [AuditedController] })
class AuditedModule {}

interface LogRow {
  action: string;
  user_id: string | null;
  tenant_id: string | null;
  study_id: string | null;
  target_id: string | null;
  ip: string | null;
  request_id: string | null;
  occurred_at: Date;
}

jest.setTimeout(30_000);

/** The API with this spec's own audited routes (AuditedModule). */
const startApp = async (env: Record<string, string> = {}): Promise<NestFastifyApplication> =>
  (await createTestApp(env, [AuditedModule])).app;

describe('Access log (who opened which study, image or viewer token)', () => {
  let app: NestFastifyApplication;
  let db: DataSource;
  let client: HttpClient;
  let imageServer: http.Server;
  let audit: AuditService;
  let closed = false;

  beforeAll(async () => {
    // Stands in for the image server: every instance is a small grey image (its simplified tags,
    // read before a rendering) and renders as the same small JPEG.
    imageServer = http.createServer((req, res) => {
      if (/^\/instances\/[^/]+\/simplified-tags$/.test(req.url ?? '')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(fakeImageTags());
      } else if (/^\/instances\/[^/]+\/rendered/.test(req.url ?? '')) {
        res.writeHead(200, { 'content-type': 'image/jpeg' }).end(fakeJpeg('rendered'));
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((resolve) => imageServer.listen(0, '127.0.0.1', resolve));
    const { port } = imageServer.address() as AddressInfo;
    app = await startApp({ IMGSRV_URL: `http://127.0.0.1:${port}` });
    db = app.get<DataSource>(getDataSourceToken());
    client = new HttpClient(app);
    audit = app.get(AuditService);
  });
  afterAll(async () => {
    if (!closed) await app.close();
    await new Promise((resolve) => imageServer?.close(resolve));
  });

  const rowsFor = (studyId: string): Promise<LogRow[]> =>
    db.query(
      `SELECT action, user_id, tenant_id, study_id, target_id, ip, request_id, occurred_at
         FROM access_logs WHERE study_id = $1 ORDER BY id`,
      [studyId],
    );

  it('records user, tenant, study, action, time, IP and request id once the request succeeded', async () => {
    const clinic = await createClinic(db, client);
    const { study } = await createImagedStudy(db, clinic.tenant.id, clinic.unit1.id);
    const before = new Date();
    const res = await client.get(`/api/__audit_test__/studies/${study.id}`, { token: clinic.token1, ip: '198.51.100.7' });
    expect(res.status).toBe(200);
    await audit.flush();
    const rows = await rowsFor(study.id);
    expect(rows).toEqual([
      {
        action: 'report.read',
        user_id: clinic.user1.id,
        tenant_id: clinic.tenant.id,
        study_id: study.id,
        target_id: null,
        ip: '198.51.100.7',
        request_id: res.headers['x-request-id'],
        occurred_at: expect.any(Date),
      },
    ]);
    expect(rows[0].occurred_at.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1000);
    expect(rows[0].occurred_at.getTime()).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('logs a super admin under the clinic that owns the study, with the image opened', async () => {
    const clinic = await createClinic(db, client);
    const { study, instance } = await createImagedStudy(db, clinic.tenant.id, clinic.unit2.id);
    const root = await createSuperAdminUser(db, client);
    const res = await client.get(`/api/__audit_test__/studies/${study.id}/instances/${instance.id}/rendered`, {
      token: root.token,
      ip: '203.0.113.9',
    });
    expect(res.status).toBe(200);
    await audit.flush();
    expect(await rowsFor(study.id)).toEqual([
      expect.objectContaining({
        action: 'study.image',
        user_id: root.user.id,
        tenant_id: clinic.tenant.id,
        study_id: study.id,
        target_id: instance.id,
        ip: '203.0.113.9',
      }),
    ]);
  });

  it('records the study named in the body of a viewer token request', async () => {
    const clinic = await createClinic(db, client);
    const { study } = await createImagedStudy(db, clinic.tenant.id, clinic.unit1.id);
    const res = await client.post('/api/__audit_test__/viewer-token', {
      token: clinic.adminToken,
      body: { study_id: study.id },
    });
    expect(res.status).toBe(200);
    await audit.flush();
    const rows = await rowsFor(study.id);
    expect(rows.map((r) => [r.action, r.user_id, r.tenant_id])).toEqual([
      ['viewer_token.issue', clinic.admin.id, clinic.tenant.id],
    ]);
    // The token itself is a credential: it is never written to the log.
    const [everything] = await db.query(`SELECT count(*)::int AS n FROM access_logs WHERE request_id = $1 OR ip = $1`, [
      res.body.token,
    ]);
    expect(everything.n).toBe(0);
  });

  it('records nothing for a refused or failed request (401, 404, non-uuid id)', async () => {
    const clinic = await createClinic(db, client);
    const { study } = await createImagedStudy(db, clinic.tenant.id, clinic.unit1.id);
    expect((await client.get(`/api/__audit_test__/studies/${study.id}`)).status).toBe(401);
    expect((await client.get(`/api/__audit_test__/missing/${study.id}`, { token: clinic.token1 })).status).toBe(404);
    expect((await client.get(`/api/__audit_test__/studies/${study.id}'--`, { token: clinic.token1 })).status).toBe(404);
    await audit.flush();
    expect(await rowsFor(study.id)).toEqual([]);
  });

  it('answers at full speed while the log table is locked, and writes everything once it is free', async () => {
    const clinic = await createClinic(db, client);
    const { study } = await createImagedStudy(db, clinic.tenant.id, clinic.unit1.id);
    const blocker = new Client({ connectionString: loadConfig().DATABASE_URL });
    blocker.on('error', () => undefined);
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE access_logs IN ACCESS EXCLUSIVE MODE');
      const started = Date.now();
      const statuses: number[] = [];
      // Past one batch, so a flush starts and waits on the lock behind the requests.
      for (let i = 0; i < 150; i++) {
        statuses.push((await client.get(`/api/__audit_test__/studies/${study.id}`, { token: clinic.token1 })).status);
      }
      const elapsed = Date.now() - started;
      expect(statuses.every((s) => s === 200)).toBe(true);
      // 150 sequential in-process requests; a request that waited on the INSERT would take seconds.
      expect(elapsed).toBeLessThan(5000);
      // Nothing could be written yet (the lock holder sees the table): the requests did not wait for it.
      const { rows } = await blocker.query(`SELECT count(*)::int AS n FROM access_logs WHERE study_id = $1`, [study.id]);
      expect(rows[0].n).toBe(0);
    } finally {
      await blocker.query('ROLLBACK');
      await blocker.end();
    }
    await audit.flush();
    await audit.flush();
    expect((await rowsFor(study.id)).length).toBe(150);
  });

  describe('on the clinical endpoints', () => {
    it('logs the study detail, both thumbnails, a rendered image and a viewer token, each once', async () => {
      const clinic = await createClinic(db, client);
      const { study, series, instance } = await createImagedStudy(db, clinic.tenant.id, clinic.unit1.id);
      await createThumbnail(db, study.id, null, fakeJpeg('study'));
      await createThumbnail(db, study.id, series.id, fakeJpeg('series'));
      const token = clinic.token1;
      const calls: Array<[string, () => Promise<{ status: number }>]> = [
        ['study.view', () => client.get(`/api/studies/${study.id}`, { token })],
        // Within 5 minutes of the first: the same caller opening the same study, spelled in
        // uppercase or not, leaves no second entry.
        ['study.view', () => client.get(`/api/studies/${study.id.toUpperCase()}`, { token })],
        ['study.thumbnail', () => client.get(`/api/studies/${study.id}/thumbnail`, { token })],
        ['series.thumbnail', () => client.get(`/api/studies/${study.id}/series/${series.id}/thumbnail`, { token })],
        ['study.image', () => client.get(`/api/studies/${study.id}/instances/${instance.id}/rendered`, { token })],
        ['viewer_token.issue', () => client.post('/api/viewer/token', { token, body: { study_id: study.id } })],
      ];
      for (const [action, call] of calls) {
        expect({ action, status: (await call()).status }).toEqual({ action, status: 200 });
      }
      // Lists and series lists show what exists; they open nothing.
      expect((await client.get('/api/studies', { token })).status).toBe(200);
      expect((await client.get(`/api/studies/${study.id}/series`, { token })).status).toBe(200);
      await audit.flush();
      const rows = await rowsFor(study.id);
      // Sorted: the study.view is recorded once its window is checked in Redis, maybe after the next act.
      expect(rows.map((r) => [r.action, r.user_id, r.tenant_id, r.target_id]).sort()).toEqual(
        [
          ['study.view', clinic.user1.id, clinic.tenant.id, null],
          ['study.thumbnail', clinic.user1.id, clinic.tenant.id, null],
          ['series.thumbnail', clinic.user1.id, clinic.tenant.id, series.id],
          ['study.image', clinic.user1.id, clinic.tenant.id, instance.id],
          ['viewer_token.issue', clinic.user1.id, clinic.tenant.id, null],
        ].sort(),
      );
    });

    it("logs nothing when the study is another unit's or another clinic's (404)", async () => {
      const clinic = await createClinic(db, client);
      const other = await createClinic(db, client);
      const { study: unit2Study } = await createImagedStudy(db, clinic.tenant.id, clinic.unit2.id);
      const { study: theirs, instance } = await createImagedStudy(db, other.tenant.id, other.unit1.id);
      await createThumbnail(db, theirs.id, null, fakeJpeg('theirs'));
      const token = clinic.token1;
      expect((await client.get(`/api/studies/${unit2Study.id}`, { token })).status).toBe(404);
      expect((await client.get(`/api/studies/${theirs.id}`, { token })).status).toBe(404);
      expect((await client.get(`/api/studies/${theirs.id}/thumbnail`, { token })).status).toBe(404);
      expect((await client.get(`/api/studies/${theirs.id}/instances/${instance.id}/rendered`, { token })).status).toBe(404);
      expect((await client.post('/api/viewer/token', { token, body: { study_id: theirs.id } })).status).toBe(404);
      await audit.flush();
      expect(await rowsFor(unit2Study.id)).toEqual([]);
      expect(await rowsFor(theirs.id)).toEqual([]);
    });
  });

  it('writes what is still buffered when the application shuts down', async () => {
    const clinic = await createClinic(db, client);
    const { study } = await createImagedStudy(db, clinic.tenant.id, clinic.unit1.id);
    const url = loadConfig().DATABASE_URL;
    expect((await client.get(`/api/__audit_test__/studies/${study.id}`, { token: clinic.token1 })).status).toBe(200);
    expect(audit.pending).toBeGreaterThan(0);
    await app.close();
    closed = true;
    const reader = new Client({ connectionString: url });
    await reader.connect();
    try {
      const { rows } = await reader.query(`SELECT action FROM access_logs WHERE study_id = $1`, [study.id]);
      expect(rows).toEqual([{ action: 'report.read' }]);
    } finally {
      await reader.end();
    }
  });

  it('writes the entries of requests still running when the application starts to shut down', async () => {
    // Its own app, after the one above has closed: Passport keeps one strategy per process.
    const closing = await startApp();
    const closingDb = closing.get<DataSource>(getDataSourceToken());
    const clinic = await createClinic(closingDb, new HttpClient(closing));
    const { study } = await createImagedStudy(closingDb, clinic.tenant.id, clinic.unit1.id);
    await closing.listen(0, '127.0.0.1');
    const server = closing.getHttpServer();
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const headers = { authorization: `Bearer ${clinic.token1}` };
    held.hold();
    try {
      const responses = Promise.all(
        ['read', 'view'].map((kind) => socketRequest(baseUrl, 'GET', `/api/__audit_test__/slow/${kind}/${study.id}`, headers)),
      );
      while (held.entered < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      const closed = closing.close();
      // The server stops listening once the modules' destroy hooks have run; Fastify then waits for both requests.
      while (server.listening) await new Promise((resolve) => setTimeout(resolve, 5));
      held.release();
      expect((await responses).map((res) => res.status)).toEqual([200, 200]);
      await closed;
    } finally {
      held.release();
    }
    const reader = new Client({ connectionString: loadConfig().DATABASE_URL });
    await reader.connect();
    try {
      const { rows } = await reader.query(`SELECT action, user_id FROM access_logs WHERE study_id = $1 ORDER BY action`, [
        study.id,
      ]);
      expect(rows).toEqual([
        { action: 'report.read', user_id: clinic.user1.id },
        { action: 'study.view', user_id: clinic.user1.id },
      ]);
    } finally {
      await reader.end();
    }
  });
});
