import * as http from 'http';
import { AddressInfo } from 'net';
import { ImgsrvClient } from '../../src/imgsrv';
import { createTestApp, TestApp } from '../support/app';
import {
  createImagedStudy,
  createInstance,
  createPatient,
  createSeries,
  createStudy,
  createThumbnail,
  fakeImageTags,
  fakeJpeg,
  StudyRow,
} from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';

jest.setTimeout(30_000);

type Caller = 'user1' | 'user2' | 'tenantAdmin' | 'otherAdmin' | 'superAdmin';
const CALLERS: Caller[] = ['user1', 'user2', 'tenantAdmin', 'otherAdmin', 'superAdmin'];

/**
 * Stands in for Orthanc's `/instances/{id}/rendered`: a JPEG by default, or the failure registered
 * for that image-server instance id; and for what the API reads before a rendering (no DICOMweb in
 * `/plugins`, so `/instances/{id}/simplified-tags`: a 16-bit grey image, a PALETTE COLOR one, or no
 * answer for 3 s). Records what it was asked.
 */
interface FakeImgsrv {
  url: string;
  requests: Array<{ url: string; authorization?: string; accept?: string }>;
  behaviour: Map<
    string,
    | 'error500'
    | 'unsupported415'
    | 'hangup'
    | 'breakAfterHeaders'
    | 'stallAfterHeaders'
    | 'trickle'
    | 'empty'
    | 'paletteColor'
    | 'stallTags'
  >;
  close(): Promise<void>;
}

async function startFakeImgsrv(): Promise<FakeImgsrv> {
  const requests: FakeImgsrv['requests'] = [];
  const behaviour: FakeImgsrv['behaviour'] = new Map();
  const server = http.createServer((req, res) => {
    requests.push({ url: req.url ?? '', authorization: req.headers.authorization, accept: req.headers.accept });
    if (req.url === '/plugins') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
      return;
    }
    const tags = /^\/instances\/([^/?]+)\/simplified-tags$/.exec(req.url ?? '');
    if (tags) {
      const kind = behaviour.get(decodeURIComponent(tags[1]));
      if (kind === 'stallTags') {
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 3_000).unref();
        return;
      }
      const photometric = kind === 'paletteColor' ? 'PALETTE COLOR' : 'MONOCHROME2';
      res.writeHead(200, { 'content-type': 'application/json' }).end(fakeImageTags(photometric));
      return;
    }
    const match = /^\/instances\/([^/?]+)\/rendered/.exec(req.url ?? '');
    if (!match) {
      res.writeHead(404).end();
      return;
    }
    const id = decodeURIComponent(match[1]);
    switch (behaviour.get(id)) {
      case 'error500':
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"Message":"boom"}');
        return;
      case 'unsupported415':
        res.writeHead(415).end();
        return;
      case 'hangup':
        req.socket.destroy();
        return;
      case 'breakAfterHeaders':
        res.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': '1000' });
        res.flushHeaders();
        setTimeout(() => req.socket.destroy(), 20);
        return;
      case 'stallAfterHeaders':
        // Headers at once, then nothing for 3 s: past the API's (shortened) rendering timeout.
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        res.flushHeaders();
        setTimeout(() => res.end(Buffer.from([0xff, 0xd8, 0xff])), 3_000).unref();
        return;
      case 'trickle': {
        // A byte every 100 ms for 3 s: the socket is never idle for long.
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        const bytes = setInterval(() => res.write(Buffer.from([0])), 100);
        setTimeout(() => {
          clearInterval(bytes);
          res.end(Buffer.from([0xff, 0xd8, 0xff]));
        }, 3_000).unref();
        res.on('close', () => clearInterval(bytes));
        return;
      }
      case 'empty':
        res.writeHead(200, { 'content-type': 'image/jpeg' }).end();
        return;
      default:
        res.writeHead(200, { 'content-type': 'image/jpeg' });
        // Two writes: the API must pass a multi-chunk body through whole.
        res.write(Buffer.from([0xff, 0xd8, 0xff]));
        setTimeout(() => res.end(Buffer.from(`rendered:${id}`)), 10);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    behaviour,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const renderedBytes = (imgsrvInstanceId: string) =>
  Buffer.concat([Buffer.from([0xff, 0xd8, 0xff]), Buffer.from(`rendered:${imgsrvInstanceId}`)]);

describe('Studies, series, instances and images', () => {
  let t: TestApp;
  let imgsrv: FakeImgsrv;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let tokens: Record<Caller, string>;

  beforeAll(async () => {
    imgsrv = await startFakeImgsrv();
    t = await createTestApp({ IMGSRV_URL: imgsrv.url, IMGSRV_USERNAME: 'svc', IMGSRV_PASSWORD: 'svc-secret' });
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    const superAdmin = await createSuperAdminUser(t.db, t.http);
    tokens = {
      user1: clinic.token1,
      user2: clinic.token2,
      tenantAdmin: clinic.adminToken,
      otherAdmin: other.adminToken,
      superAdmin: superAdmin.token,
    };
  });
  afterAll(async () => {
    await t?.close();
    await imgsrv?.close();
  });

  /** Status of each caller, with the body of the refusals (which must not differ from "missing"). */
  async function statuses(url: string, expectedOk = 200) {
    const seen: Record<string, string | number> = {};
    for (const caller of CALLERS) {
      const res = await t.http.get(url, { token: tokens[caller] });
      seen[caller] = res.status === expectedOk ? res.status : `${res.status} ${JSON.stringify(res.body)}`;
    }
    return seen;
  }

  describe('isolation: a study of unit 1 of the tenant', () => {
    let record: Awaited<ReturnType<typeof createImagedStudy>>;
    const visibleTo = (ok: number | string, refused: string) => ({
      user1: ok,
      user2: refused,
      tenantAdmin: ok,
      otherAdmin: refused,
      superAdmin: ok,
    });

    beforeAll(async () => {
      record = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      await createThumbnail(t.db, record.study.id, null, fakeJpeg('study'));
      await createThumbnail(t.db, record.study.id, record.series.id, fakeJpeg('series'));
    });

    it('GET /api/studies/{id}', async () => {
      expect(await statuses(`/api/studies/${record.study.id}`)).toEqual(visibleTo(200, '404 {"message":"Study not found."}'));
    });

    it('GET /api/studies/{id}/series', async () => {
      expect(await statuses(`/api/studies/${record.study.id}/series`)).toEqual(
        visibleTo(200, '404 {"message":"Study not found."}'),
      );
    });

    it('GET /api/series/{id}/instances', async () => {
      expect(await statuses(`/api/series/${record.series.id}/instances`)).toEqual(
        visibleTo(200, '404 {"message":"Series not found."}'),
      );
    });

    // interface.md, Errors: a record missing or outside the caller's tenant or unit is, for thumbnails,
    // `{message: Thumbnail not ready}`.
    it('GET /api/studies/{id}/thumbnail', async () => {
      expect(await statuses(`/api/studies/${record.study.id}/thumbnail`)).toEqual(
        visibleTo(200, '404 {"message":"Thumbnail not ready"}'),
      );
    });

    it('GET /api/studies/{id}/series/{series}/thumbnail', async () => {
      expect(await statuses(`/api/studies/${record.study.id}/series/${record.series.id}/thumbnail`)).toEqual(
        visibleTo(200, '404 {"message":"Thumbnail not ready"}'),
      );
    });

    it('GET /api/studies/{id}/instances/{instance}/rendered', async () => {
      expect(await statuses(`/api/studies/${record.study.id}/instances/${record.instance.id}/rendered`)).toEqual(
        visibleTo(200, '404 {"message":"Image not available"}'),
      );
    });

    it('never asks the image server for an image the caller may not see', async () => {
      imgsrv.requests.length = 0;
      for (const caller of ['user2', 'otherAdmin'] as const) {
        await t.http.get(`/api/studies/${record.study.id}/instances/${record.instance.id}/rendered`, {
          token: tokens[caller],
        });
      }
      expect(imgsrv.requests).toEqual([]);
    });

    it('GET /api/studies lists it (and counts it) only for those who may see it', async () => {
      const seen: Record<string, unknown> = {};
      for (const caller of CALLERS) {
        const res = await t.http.get('/api/studies', {
          token: tokens[caller],
          query: { search: record.study.accession_number! },
        });
        expect(res.status).toBe(200);
        seen[caller] = { ids: res.body.data.map((s: StudyRow) => s.id), total: res.body.total };
      }
      const shown = { ids: [record.study.id], total: 1 };
      const hidden = { ids: [], total: 0 };
      expect(seen).toEqual({ user1: shown, user2: hidden, tenantAdmin: shown, otherAdmin: hidden, superAdmin: shown });
    });
  });

  describe('GET /api/studies: visibility of the whole list', () => {
    it('shows each caller exactly the studies of their unit, tenant or all tenants', async () => {
      const tag = `VIS${Date.now()}`;
      const a1 = await createStudy(t.db, {
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        accession_number: `${tag}-a1`,
      });
      const a2 = await createStudy(t.db, {
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit2.id,
        accession_number: `${tag}-a2`,
      });
      const b1 = await createStudy(t.db, {
        tenant_id: other.tenant.id,
        unit_id: other.unit1.id,
        accession_number: `${tag}-b1`,
      });
      const seen: Record<string, unknown> = {};
      for (const caller of CALLERS) {
        const res = await t.http.get('/api/studies', { token: tokens[caller], query: { search: tag } });
        seen[caller] = { ids: res.body.data.map((s: StudyRow) => s.id).sort(), total: res.body.total };
      }
      const of = (...rows: StudyRow[]) => ({ ids: rows.map((r) => r.id).sort(), total: rows.length });
      expect(seen).toEqual({
        user1: of(a1),
        user2: of(a2),
        tenantAdmin: of(a1, a2),
        otherAdmin: of(b1),
        superAdmin: of(a1, a2, b1),
      });
    });

    it('shows nothing to a regular user without a unit', async () => {
      await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const loose = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: null });
      const token = await login(t.http, loose.email);
      const list = await t.http.get('/api/studies', { token });
      expect(list.status).toBe(200);
      expect(list.body).toEqual({ data: [], current_page: 1, per_page: 15, total: 0, last_page: 1, total_exact: true });
      const { study, series } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      for (const [url, message] of [
        [`/api/studies/${study.id}`, 'Study not found.'],
        [`/api/studies/${study.id}/series`, 'Study not found.'],
        [`/api/series/${series.id}/instances`, 'Series not found.'],
      ]) {
        const res = await t.http.get(url, { token });
        expect({ url, status: res.status, body: res.body }).toEqual({ url, status: 404, body: { message } });
      }
    });
  });

  describe('GET /api/studies: order, pages, search and filters', () => {
    it('orders by study_date desc, created_at desc, id desc, 15 per page, pages never overlap', async () => {
      const fresh = await createClinic(t.db, t.http);
      const seeds: Array<{ study_date: string; created_at: string }> = [];
      for (let i = 0; i < 17; i++) {
        seeds.push({
          // Five dates, and within a date three creation times, the last one shared by two studies.
          study_date: `2024-0${1 + (i % 5)}-10`,
          created_at: `2024-06-01T10:00:0${Math.min(i % 3, 2)}Z`,
        });
      }
      const rows: StudyRow[] = [];
      for (const seed of seeds) {
        rows.push(await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id, ...seed }));
      }
      const expected = [...rows]
        .sort(
          (a, b) =>
            b.study_date.localeCompare(a.study_date) ||
            b.created_at.getTime() - a.created_at.getTime() ||
            b.id.localeCompare(a.id),
        )
        .map((r) => r.id);

      const page1 = await t.http.get('/api/studies', { token: fresh.adminToken });
      expect(page1.status).toBe(200);
      expect(Object.keys(page1.body).sort()).toEqual(['current_page', 'data', 'last_page', 'per_page', 'total', 'total_exact']);
      expect(page1.body).toMatchObject({ current_page: 1, per_page: 15, total: 17, last_page: 2 });
      const page2 = await t.http.get('/api/studies', { token: fresh.adminToken, query: { page: '2', per_page: '100' } });
      expect(page2.body).toMatchObject({ current_page: 2, per_page: 15, total: 17, last_page: 2 });
      expect([...page1.body.data, ...page2.body.data].map((s: StudyRow) => s.id)).toEqual(expected);

      const past = await t.http.get('/api/studies', { token: fresh.adminToken, query: { page: '9' } });
      expect(past.status).toBe(200);
      expect(past.body).toEqual({ data: [], current_page: 9, per_page: 15, total: 17, last_page: 2, total_exact: true });
    });

    it('answers any page past the end, however large, with empty data and the right total', async () => {
      const fresh = await createClinic(t.db, t.http);
      for (let i = 0; i < 3; i++) {
        const patient = await createPatient(t.db, fresh.tenant.id, { patient_name: 'Far Pagewell' });
        await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id, patient });
      }
      // Past 100,000,000; past Number.MAX_SAFE_INTEGER; past a double's range (answered as the largest double).
      for (const [page, current] of [
        ['100000001', 100000001],
        ['99999999999999999999', 1e20],
        ['9'.repeat(400), Number.MAX_VALUE],
      ] as const) {
        const queries: Array<Record<string, string>> = [
          { page },
          { page, search: 'pagewell' },
          { page, report_status: 'pending' },
        ];
        for (const query of queries) {
          const res = await t.http.get('/api/studies', { token: fresh.adminToken, query });
          expect({ query, status: res.status, body: res.body }).toEqual({
            query,
            status: 200,
            body: { data: [], current_page: current, per_page: 15, total: 3, last_page: 1, total_exact: true },
          });
        }
        const patients = await t.http.get('/api/patients', { token: fresh.adminToken, query: { page } });
        expect(patients.status).toBe(200);
        expect(patients.body).toEqual({
          data: [],
          current_page: current,
          per_page: 20,
          total: 3,
          last_page: 1,
          total_exact: true,
        });
      }
    });

    it('returns items in the Study shape, without patient, unit or tenant objects', async () => {
      const fresh = await createClinic(t.db, t.http);
      const patient = await createPatient(t.db, fresh.tenant.id, { patient_birth_date: '1975-03-04', patient_sex: 'M' });
      const study = await createStudy(t.db, {
        tenant_id: fresh.tenant.id,
        unit_id: fresh.unit1.id,
        patient,
        modalities: null,
        accession_number: null,
        study_description: null,
      });
      const res = await t.http.get('/api/studies', { token: fresh.token1 });
      expect(res.body.data).toHaveLength(1);
      const item = res.body.data[0];
      expect(item).toEqual({
        id: study.id,
        tenant_id: fresh.tenant.id,
        unit_id: fresh.unit1.id,
        patient_uuid: patient.id,
        imgsrv_study_id: study.imgsrv_study_id,
        study_instance_uid: study.study_instance_uid,
        patient_id: patient.patient_id,
        patient_name: patient.patient_name,
        patient_birth_date: '1975-03-04',
        patient_sex: 'M',
        accession_number: null,
        study_date: '2024-01-15',
        study_description: null,
        modalities: null,
        report_status: 'pending',
        reported_at: null,
        reported_by_user_id: null,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(item.created_at).toBe(study.created_at.toISOString());
    });

    describe('search', () => {
      let fresh: Awaited<ReturnType<typeof createClinic>>;
      const names: Record<string, StudyRow> = {};

      beforeAll(async () => {
        fresh = await createClinic(t.db, t.http);
        const make = async (key: string, values: { patient_name?: string; patient_id?: string; accession_number?: string }) => {
          names[key] = await createStudy(t.db, {
            tenant_id: fresh.tenant.id,
            unit_id: fresh.unit1.id,
            patient_name: values.patient_name ?? `PLAIN^${key}`,
            patient_id: values.patient_id ?? `PID-${key}`,
            accession_number: values.accession_number ?? `ACC-${key}`,
          });
        };
        await make('percent', { patient_name: 'SILVA^ANA 100%' });
        await make('digits', { patient_name: 'SILVA^ANA 1000' });
        await make('underscore', { patient_name: 'SOUZA^A_B' });
        await make('letter', { patient_name: 'SOUZA^AXB' });
        await make('backslash', { patient_name: 'ROE^BACK\\SLASH' });
        await make('pid', { patient_id: 'MRN-77Q' });
        await make('acc', { accession_number: 'XA-9K' });
        await make('accented', { patient_name: 'JOÃO^CONCEIÇÃO SÃO BENTO', patient_id: 'ÁB-55' });
        await make('plain', { patient_name: 'Joao Rezende Azevedo' });
      });

      const search = async (text: string, token = fresh.adminToken) => {
        const res = await t.http.get('/api/studies', { token, query: { search: text } });
        expect(res.status).toBe(200);
        return Object.keys(names)
          .filter((key) => res.body.data.some((s: StudyRow) => s.id === names[key].id))
          .sort();
      };

      it('matches patient_name case-insensitively', async () => {
        expect(await search('silva^ana')).toEqual(['digits', 'percent']);
      });

      it('treats % literally', async () => {
        expect(await search('100%')).toEqual(['percent']);
        expect(await search('%')).toEqual(['percent']);
      });

      it('treats _ and \\ literally', async () => {
        expect(await search('a_b')).toEqual(['underscore']);
        expect(await search('\\')).toEqual(['backslash']);
      });

      it('matches patient_id and accession_number', async () => {
        expect(await search('mrn-77q')).toEqual(['pid']);
        expect(await search('xa-9')).toEqual(['acc']);
      });

      it('matches regardless of accents, either way, and of case', async () => {
        expect(await search('joao')).toEqual(['accented', 'plain']);
        expect(await search('JOÃO')).toEqual(['accented', 'plain']);
        expect(await search('sao')).toEqual(['accented']);
        expect(await search('ceicao s')).toEqual(['accented']);
        expect(await search('ab-5')).toEqual(['accented']);
      });

      it('matches a fragment cut anywhere: inside a word, across words, of 3 characters', async () => {
        expect(await search('ouz')).toEqual(['letter', 'underscore']);
        expect(await search('zende azev')).toEqual(['plain']);
        expect(await search('lva^an')).toEqual(['digits', 'percent']);
        expect(await search('o rezende azevedo')).toEqual(['plain']);
        // The text between the words is matched as typed, and fields are not joined.
        expect(await search('zende  azev')).toEqual([]);
        expect(await search('rezende^azevedo')).toEqual([]);
        expect(await search('azevedo pid')).toEqual([]);
        expect(await search('a b')).toEqual([]);
      });

      it('counts only the matches', async () => {
        const res = await t.http.get('/api/studies', { token: fresh.adminToken, query: { search: 'souza' } });
        expect(res.body).toMatchObject({ total: 2, last_page: 1 });
      });

      it("searches only inside the caller's scope", async () => {
        expect(await search('silva', fresh.token2)).toEqual([]);
        expect(await search('silva', other.adminToken)).toEqual([]);
      });

      it('accepts 255 characters and an empty search', async () => {
        expect(
          (await t.http.get('/api/studies', { token: fresh.adminToken, query: { search: 'x'.repeat(255) } })).body.total,
        ).toBe(0);
        expect((await t.http.get('/api/studies', { token: fresh.adminToken, query: { search: '' } })).body.total).toBe(9);
      });
    });

    it('finds the pages of a clinic of more than 10,000 studies through a capped walk or the search index', async () => {
      // 9,900 recent studies and, before them all, 450 of January 2023's accession numbers and 150 of
      // February's. "old2301" (450) and "old230" (600) have enough matches that the plan walks the
      // date order (450 x 8 >= 15 x 10,500 / 450), none within the walk's cap of 2,000 rows: the walk
      // comes back short, a walk 8 times wider would go past the clinic (widerWalkCap), and the page
      // is read again through the search index (8 x 600 < 10,500), then and on the next request.
      // "old2301-7" (11 matches) is collected through the index from the start: the clinic's own
      // terms, its tenant tested on the rows, while another clinic holds newer studies with the same
      // accession numbers. The same searches by the user of the unit that holds the 10,500 (more
      // than 10,000 too): the unit's term narrows the clinic's terms in the scan (UnitSearchTerms),
      // and the clinic's other unit holds older matches of its own (on the admin's pages after the
      // 10,500's). A scope of 10,000 or fewer is always walked: these are above, so every plan is
      // exercised here.
      const big = await createClinic(t.db, t.http);
      const neighbour = await createClinic(t.db, t.http);
      const sameAccessions = [
        { tenant_id: neighbour.tenant.id, unit_id: neighbour.unit1.id, numbers: [7, 70, 71], study_date: '2026-11-20' },
        { tenant_id: big.tenant.id, unit_id: big.unit2.id, numbers: [7, 72, 73], study_date: '2022-12-20' },
      ];
      for (const { numbers, ...place } of sameAccessions) {
        for (const n of numbers) await createStudy(t.db, { ...place, accession_number: `OLD2301-${n}` });
      }
      await t.db.query(
        `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
                              accession_number, study_date, modalities, report_status, created_at)
         SELECT $1, $2, 'walk-' || $3 || '-' || n, '1.2.3.' || n || '.' || $3, 'P' || n, 'DOE^JOHN',
                CASE WHEN n <= 450 THEN 'OLD2301-' || n WHEN n <= 600 THEN 'OLD2302-' || n ELSE 'NEW2611-' || n END,
                CASE WHEN n <= 450 THEN date '2023-01-01' + (n % 28) WHEN n <= 600 THEN date '2023-02-01' + (n % 28)
                     ELSE date '2026-11-01' + (n % 20) END,
                '{CT}', 'pending', now()
           FROM generate_series(1, 10500) n`,
        [big.tenant.id, big.unit1.id, big.tenant.id.slice(0, 8)],
      );
      const callers = [
        { caller: 'tenant admin', token: big.adminToken, units: [big.unit1.id, big.unit2.id], outOfUnit: 3 },
        { caller: 'unit user', token: big.token1, units: [big.unit1.id], outOfUnit: 0 },
      ];
      for (const { caller, token, units, outOfUnit } of callers) {
        for (const [fragment, like, total] of [
          ['old2301', 'OLD2301-%', 450 + outOfUnit],
          ['old230', 'OLD230%', 600 + outOfUnit],
          ['old2301-7', 'OLD2301-7%', 11 + outOfUnit],
        ] as const) {
          const [{ expected }] = await t.db.query(
            `SELECT array_agg(accession_number ORDER BY study_date DESC, created_at DESC, id DESC) AS expected
               FROM (SELECT * FROM studies WHERE tenant_id = $1 AND unit_id = ANY($3) AND accession_number LIKE $2
                      ORDER BY study_date DESC, created_at DESC, id DESC LIMIT 15) s`,
            [big.tenant.id, like, units],
          );
          for (let request = 0; request < 2; request++) {
            const res = await t.http.get('/api/studies', { token, query: { search: fragment } });
            expect(res.status).toBe(200);
            const page = res.body.data.map((s: { accession_number: string }) => s.accession_number);
            expect({ caller, fragment, request, total: res.body.total, page }).toEqual({
              caller,
              fragment,
              request,
              total,
              page: expected,
            });
          }
        }
      }
    });

    it('collects the page when a walk of matches that sit deeper than their number promises comes back short', async () => {
      // 20,000 studies: the 3,000 newest without the fragment, then every 6th of the 17,000 older
      // ones with it (2,833 matches: past the cap, total 1000, not exact). The walk's cap of 2,000
      // rows comes back short, and the page is collected through the search index instead. Pages 1
      // and 2, each asked twice: the second request collects directly (the kept count remembers).
      const wide = await createClinic(t.db, t.http);
      await t.db.query(
        `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
                              accession_number, study_date, modalities, report_status, created_at)
         SELECT $1, $2, 'wide-' || $3 || '-' || n, '1.2.4.' || n || '.' || $3, 'P' || n, 'ROE^JANE',
                CASE WHEN n > 3000 AND n % 6 = 0 THEN 'SPRD-' || n ELSE 'PLAIN-' || n END,
                CASE WHEN n <= 3000 THEN date '2026-11-01' + (n % 20) ELSE date '2020-01-01' + (n % 1500) END,
                '{CT}', 'pending', now()
           FROM generate_series(1, 20000) n`,
        [wide.tenant.id, wide.unit1.id, wide.tenant.id.slice(0, 8)],
      );
      for (const page of [1, 2]) {
        const rows = await t.db.query(
          `SELECT accession_number FROM studies WHERE tenant_id = $1 AND accession_number LIKE 'SPRD-%'
            ORDER BY study_date DESC, created_at DESC, id DESC LIMIT 15 OFFSET $2`,
          [wide.tenant.id, (page - 1) * 15],
        );
        const expected = rows.map((row: { accession_number: string }) => row.accession_number);
        for (let request = 0; request < 2; request++) {
          const res = await t.http.get('/api/studies', {
            token: wide.adminToken,
            query: { search: 'sprd-', page: String(page) },
          });
          expect(res.status).toBe(200);
          const found = res.body.data.map((s: { accession_number: string }) => s.accession_number);
          expect({ page, request, total: res.body.total, exact: res.body.total_exact, found }).toEqual({
            page,
            request,
            total: 1000,
            exact: false,
            found: expected,
          });
        }
      }
    });

    describe('patient_uuid and exclude_id', () => {
      let fresh: Awaited<ReturnType<typeof createClinic>>;
      let patient: Awaited<ReturnType<typeof createPatient>>;
      let inUnit1: StudyRow[];
      let inUnit2: StudyRow;
      let foreign: Awaited<ReturnType<typeof createImagedStudy>>;

      beforeAll(async () => {
        fresh = await createClinic(t.db, t.http);
        patient = await createPatient(t.db, fresh.tenant.id);
        inUnit1 = [
          await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id, patient, study_date: '2024-03-01' }),
          await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id, patient, study_date: '2024-02-01' }),
        ];
        inUnit2 = await createStudy(t.db, {
          tenant_id: fresh.tenant.id,
          unit_id: fresh.unit2.id,
          patient,
          study_date: '2024-01-01',
        });
        await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id });
        foreign = await createImagedStudy(t.db, other.tenant.id, other.unit1.id);
      });

      const ids = async (token: string, query: Record<string, string>) => {
        const res = await t.http.get('/api/studies', { token, query });
        expect(res.status).toBe(200);
        return { ids: res.body.data.map((s: StudyRow) => s.id), total: res.body.total };
      };

      it("patient_uuid keeps that patient's studies within the scope", async () => {
        expect(await ids(fresh.adminToken, { patient_uuid: patient.id })).toEqual({
          ids: [...inUnit1.map((s) => s.id), inUnit2.id],
          total: 3,
        });
        expect(await ids(fresh.token1, { patient_uuid: patient.id })).toEqual({ ids: inUnit1.map((s) => s.id), total: 2 });
        expect(await ids(fresh.token2, { patient_uuid: patient.id })).toEqual({ ids: [inUnit2.id], total: 1 });
      });

      it("patient_uuid of another tenant's patient finds nothing (and counts nothing)", async () => {
        expect(await ids(fresh.adminToken, { patient_uuid: foreign.patient.id })).toEqual({ ids: [], total: 0 });
        expect(await ids(tokens.superAdmin, { patient_uuid: foreign.patient.id })).toEqual({
          ids: [foreign.study.id],
          total: 1,
        });
      });

      it('exclude_id leaves one study out', async () => {
        expect(await ids(fresh.adminToken, { patient_uuid: patient.id, exclude_id: inUnit1[0].id })).toEqual({
          ids: [inUnit1[1].id, inUnit2.id],
          total: 2,
        });
      });

      it("exclude_id of another tenant's study changes nothing", async () => {
        const all = await ids(fresh.adminToken, {});
        expect(all.total).toBe(4);
        expect(await ids(fresh.adminToken, { exclude_id: foreign.study.id })).toEqual(all);
      });
    });

    it.each([
      ['page=0', { page: '0' }, 'page'],
      ['page=-1', { page: '-1' }, 'page'],
      ['page=abc', { page: 'abc' }, 'page'],
      ['page=1.5', { page: '1.5' }, 'page'],
      ['page=1e3', { page: '1e3' }, 'page'],
      ['patient_uuid not a uuid', { patient_uuid: 'not-a-uuid' }, 'patient_uuid'],
      ['exclude_id not a uuid', { exclude_id: "1' OR '1'='1" }, 'exclude_id'],
      ['search of 256 characters', { search: 'x'.repeat(256) }, 'search'],
    ])('answers 422 for %s', async (_, query, field) => {
      const res = await t.http.get('/api/studies', { token: tokens.tenantAdmin, query });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: expect.any(String),
        errors: { [field]: expect.arrayContaining([expect.any(String)]) },
      });
    });

    it('answers 422 for repeated parameters rather than guessing', async () => {
      const res = await t.http.get('/api/studies?search=a&search=b&patient_uuid=x&patient_uuid=y', {
        token: tokens.tenantAdmin,
      });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.errors).sort()).toEqual(['patient_uuid', 'search']);
    });
  });

  describe('GET /api/studies/{id}', () => {
    it('adds patient, unit and tenant, and computes modalities from the series when not stored', async () => {
      const patient = await createPatient(t.db, clinic.tenant.id, { patient_birth_date: '1990-12-31', patient_sex: null });
      const study = await createStudy(t.db, {
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        patient,
        modalities: null,
        study_description: 'CT abdomen',
      });
      await createSeries(t.db, study.id, { modality: 'SR', series_number: 3 });
      await createSeries(t.db, study.id, { modality: 'CT', series_number: 1 });
      await createSeries(t.db, study.id, { modality: 'CT', series_number: 2 });

      const res = await t.http.get(`/api/studies/${study.id}`, { token: tokens.user1 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: study.id,
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        patient_uuid: patient.id,
        imgsrv_study_id: study.imgsrv_study_id,
        study_instance_uid: study.study_instance_uid,
        patient_id: patient.patient_id,
        patient_name: patient.patient_name,
        patient_birth_date: '1990-12-31',
        patient_sex: null,
        accession_number: study.accession_number,
        study_date: '2024-01-15',
        study_description: 'CT abdomen',
        modalities: ['CT', 'SR'],
        report_status: 'pending',
        reported_at: null,
        reported_by_user_id: null,
        created_at: study.created_at.toISOString(),
        updated_at: expect.any(String),
        patient: {
          id: patient.id,
          tenant_id: clinic.tenant.id,
          patient_id: patient.patient_id,
          patient_name: patient.patient_name,
          patient_birth_date: '1990-12-31',
          patient_sex: null,
          created_at: expect.any(String),
          updated_at: expect.any(String),
        },
        unit: { id: clinic.unit1.id, tenant_id: clinic.tenant.id, name: clinic.unit1.name },
        tenant: { id: clinic.tenant.id, name: clinic.tenant.name },
      });
    });

    it('returns stored modalities as stored, [] when neither stored nor any series, patient null when unlinked', async () => {
      const stored = await createStudy(t.db, {
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        modalities: ['MR', 'CT'],
      });
      await createSeries(t.db, stored.id, { modality: 'US' });
      expect((await t.http.get(`/api/studies/${stored.id}`, { token: tokens.user1 })).body.modalities).toEqual(['MR', 'CT']);

      const bare = await createStudy(t.db, {
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        modalities: null,
        patient: null,
      });
      const res = await t.http.get(`/api/studies/${bare.id}`, { token: tokens.user1 });
      expect(res.body.modalities).toEqual([]);
      expect(res.body.patient).toBeNull();
    });

    it.each(['not-a-uuid', '00000000-0000-0000-0000-000000000000', "1'--"])('answers 404 for %s', async (id) => {
      const res = await t.http.get(`/api/studies/${encodeURIComponent(id)}`, { token: tokens.superAdmin });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Study not found.' });
    });
  });

  describe('series and instances', () => {
    it('lists series by series_number, then created_at, then id', async () => {
      const { study } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const [first] = (await t.http.get(`/api/studies/${study.id}/series`, { token: tokens.user1 })).body;
      const later = await createSeries(t.db, study.id, { series_number: 1, created_at: '2030-01-01T00:00:00Z' });
      const zero = await createSeries(t.db, study.id, { series_number: 0, created_at: '2031-01-01T00:00:00Z' });
      const ten = await createSeries(t.db, study.id, {
        series_number: 10,
        modality: 'SR',
        manufacturer: null,
        instance_count: 4,
      });
      const res = await t.http.get(`/api/studies/${study.id}/series`, { token: tokens.user1 });
      expect(res.status).toBe(200);
      expect(res.body.map((s: { id: string }) => s.id)).toEqual([zero.id, first.id, later.id, ten.id]);
      expect(res.body[3]).toEqual({
        id: ten.id,
        study_id: study.id,
        imgsrv_series_id: ten.imgsrv_series_id,
        series_instance_uid: ten.series_instance_uid,
        modality: 'SR',
        series_number: 10,
        manufacturer: null,
        instance_count: 4,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
    });

    it('lists instances by instance_number, then created_at, then id', async () => {
      const { series, instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const third = await createInstance(t.db, series.id, { instance_number: 3 });
      const second = await createInstance(t.db, series.id, { instance_number: 2 });
      const sameLater = await createInstance(t.db, series.id, {
        instance_number: 1,
        created_at: '2030-01-01T00:00:00Z',
        rows: null,
        columns: null,
        slice_thickness: null,
      });
      const res = await t.http.get(`/api/series/${series.id}/instances`, { token: tokens.tenantAdmin });
      expect(res.status).toBe(200);
      expect(res.body.map((i: { id: string }) => i.id)).toEqual([instance.id, sameLater.id, second.id, third.id]);
      expect(res.body[0]).toEqual({
        id: instance.id,
        series_id: series.id,
        imgsrv_instance_id: instance.imgsrv_instance_id,
        sop_instance_uid: instance.sop_instance_uid,
        instance_number: 1,
        rows: 512,
        columns: 512,
        slice_thickness: 1.25,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(res.body[1]).toMatchObject({ rows: null, columns: null, slice_thickness: null });
    });

    it('answers [] for a study without series', async () => {
      const study = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const res = await t.http.get(`/api/studies/${study.id}/series`, { token: tokens.user1 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual([]);
    });

    it.each(['nope', '00000000-0000-0000-0000-000000000000'])('answers 404 for series %s', async (id) => {
      const res = await t.http.get(`/api/series/${id}/instances`, { token: tokens.superAdmin });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Series not found.' });
      const series = await t.http.get(`/api/studies/${id}/series`, { token: tokens.superAdmin });
      expect(series.status).toBe(404);
      expect(series.body).toEqual({ message: 'Study not found.' });
    });
  });

  describe('thumbnails', () => {
    it('serves the study thumbnail as image/jpeg, not cached by shared caches', async () => {
      const { study } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      await createThumbnail(t.db, study.id, null, fakeJpeg('study-thumb'));
      const res = await t.http.get(`/api/studies/${study.id}/thumbnail`, { token: tokens.user1 });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/jpeg');
      expect(res.headers['cache-control']).toBe('no-cache, private');
      expect(res.raw).toEqual(fakeJpeg('study-thumb'));
    });

    it('answers 404 {message: Thumbnail not ready} before the worker made one', async () => {
      const { study, series } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      for (const url of [`/api/studies/${study.id}/thumbnail`, `/api/studies/${study.id}/series/${series.id}/thumbnail`]) {
        const res = await t.http.get(url, { token: tokens.user1 });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Thumbnail not ready' });
      }
    });

    it('serves the series thumbnail, and falls back to the study thumbnail', async () => {
      const { study, series } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const second = await createSeries(t.db, study.id, { series_number: 2 });
      await createThumbnail(t.db, study.id, null, fakeJpeg('study'));
      await createThumbnail(t.db, study.id, series.id, fakeJpeg('series-1'));
      const own = await t.http.get(`/api/studies/${study.id}/series/${series.id}/thumbnail`, { token: tokens.user1 });
      expect(own.status).toBe(200);
      expect(own.headers['content-type']).toBe('image/jpeg');
      expect(own.headers['cache-control']).toBe('no-cache, private');
      expect(own.raw).toEqual(fakeJpeg('series-1'));
      const fallback = await t.http.get(`/api/studies/${study.id}/series/${second.id}/thumbnail`, { token: tokens.user1 });
      expect(fallback.status).toBe(200);
      expect(fallback.raw).toEqual(fakeJpeg('study'));
    });

    it('does not serve a series of another study, even of the same unit', async () => {
      const a = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const b = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      await createThumbnail(t.db, a.study.id, null, fakeJpeg('a'));
      await createThumbnail(t.db, b.study.id, b.series.id, fakeJpeg('b-series'));
      const res = await t.http.get(`/api/studies/${a.study.id}/series/${b.series.id}/thumbnail`, { token: tokens.user1 });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Thumbnail not ready' });
    });

    it('answers 404 {message: Thumbnail not ready} for unknown and malformed ids', async () => {
      const { study } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      await createThumbnail(t.db, study.id, null, fakeJpeg('study'));
      const unknown = '00000000-0000-4000-8000-000000000000';
      for (const url of [
        `/api/studies/${unknown}/thumbnail`,
        '/api/studies/xyz/thumbnail',
        `/api/studies/${unknown}/series/${unknown}/thumbnail`,
        `/api/studies/xyz/series/${unknown}/thumbnail`,
        `/api/studies/${study.id}/series/${unknown}/thumbnail`,
        `/api/studies/${study.id}/series/xyz/thumbnail`,
      ]) {
        const res = await t.http.get(url, { token: tokens.user1 });
        expect({ url, status: res.status, body: res.body }).toEqual({
          url,
          status: 404,
          body: { message: 'Thumbnail not ready' },
        });
      }
    });
  });

  describe('GET /api/studies/{id}/instances/{instance}/rendered', () => {
    /** Runs `body` with the image server's rendering bound (20 s) shortened to 300 ms. */
    const withShortRenderingBound = async (body: (client: ImgsrvClient) => Promise<void>) => {
      const client = t.app.get(ImgsrvClient);
      const timeout = client.renderedTimeoutMs;
      client.renderedTimeoutMs = 300;
      try {
        await body(client);
      } finally {
        client.renderedTimeoutMs = timeout;
      }
    };

    it("streams the image server's JPEG with its content type and no-cache, private", async () => {
      const { study, instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      imgsrv.requests.length = 0;
      const res = await t.http.get(`/api/studies/${study.id}/instances/${instance.id}/rendered`, { token: tokens.user1 });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/jpeg');
      expect(res.headers['cache-control']).toBe('no-cache, private');
      expect(res.raw).toEqual(renderedBytes(instance.imgsrv_instance_id));
      const authorization = `Basic ${Buffer.from('svc:svc-secret').toString('base64')}`;
      // `/plugins` is asked once a minute.
      expect(imgsrv.requests.filter((request) => request.url !== '/plugins')).toEqual([
        { url: `/instances/${instance.imgsrv_instance_id}/simplified-tags`, authorization, accept: expect.any(String) },
        { url: `/instances/${instance.imgsrv_instance_id}/rendered`, authorization, accept: 'image/jpeg' },
      ]);
    });

    it("answers 404 {message: Image not available} for an image the image server's decoders fail on, and never asks for it", async () => {
      const { study, instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      imgsrv.behaviour.set(instance.imgsrv_instance_id, 'paletteColor');
      imgsrv.requests.length = 0;
      const res = await t.http.get(`/api/studies/${study.id}/instances/${instance.id}/rendered`, { token: tokens.user1 });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Image not available' });
      expect(imgsrv.requests.map((request) => request.url)).not.toContain(`/instances/${instance.imgsrv_instance_id}/rendered`);
    });

    it('bounds the check and the rendering together: attributes that never come are a 404 within the timeout', () =>
      withShortRenderingBound(async () => {
        const { study, instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
        imgsrv.behaviour.set(instance.imgsrv_instance_id, 'stallTags');
        const started = Date.now();
        const res = await t.http.get(`/api/studies/${study.id}/instances/${instance.id}/rendered`, { token: tokens.user1 });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Image not available' });
        // The tags would come after 3 s; retries past the bound would add more.
        expect(Date.now() - started).toBeLessThan(2_500);
      }));

    it('answers 404 {message: Image not available} for an instance of another study of the same unit', async () => {
      const a = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const b = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const res = await t.http.get(`/api/studies/${a.study.id}/instances/${b.instance.id}/rendered`, { token: tokens.user1 });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Image not available' });
    });

    it.each([
      ['study id not a uuid', 'x', 'instance'],
      ['instance id not a uuid', 'study', "1' or 1=1"],
      ['unknown instance', 'study', '00000000-0000-0000-0000-000000000000'],
      ['image server instance id instead of ours', 'study', 'imgsrv'],
    ])('answers 404 {message: Image not available}: %s', async (_, studyPart, instancePart) => {
      const { study, instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const studyId = studyPart === 'study' ? study.id : studyPart;
      const instanceId =
        instancePart === 'instance' ? instance.id : instancePart === 'imgsrv' ? instance.imgsrv_instance_id : instancePart;
      const res = await t.http.get(
        `/api/studies/${encodeURIComponent(studyId)}/instances/${encodeURIComponent(instanceId)}/rendered`,
        { token: tokens.superAdmin },
      );
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Image not available' });
    });

    it.each(['error500', 'unsupported415', 'hangup', 'breakAfterHeaders', 'empty'] as const)(
      'answers 404 {message: Image not available} when the image server fails: %s',
      async (failure) => {
        const { study, instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
        imgsrv.behaviour.set(instance.imgsrv_instance_id, failure);
        const res = await t.http.get(`/api/studies/${study.id}/instances/${instance.id}/rendered`, { token: tokens.user1 });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Image not available' });
      },
    );

    it("bounds a thumbnail's rendering as a whole: a body that keeps trickling in is given up", () =>
      withShortRenderingBound(async (client) => {
        const { instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
        imgsrv.behaviour.set(instance.imgsrv_instance_id, 'trickle');
        const started = Date.now();
        // Without the bound the trickle would end after 3 s with a whole body.
        await expect(client.renderedBuffer(instance.imgsrv_instance_id)).rejects.toMatchObject({ status: undefined });
        expect(Date.now() - started).toBeLessThan(2_500);
      }));

    describe("a thumbnail's source (the worker's checkedRenderedBuffer)", () => {
      const uidsOf = (made: Awaited<ReturnType<typeof createImagedStudy>>) => ({
        imgsrvInstanceId: made.instance.imgsrv_instance_id,
        studyInstanceUid: made.study.study_instance_uid,
        seriesInstanceUid: made.series.series_instance_uid,
        sopInstanceUid: made.instance.sop_instance_uid,
      });

      it('is the rendering after the check, or the refusal without a rendering', async () => {
        const client = t.app.get(ImgsrvClient);
        const safe = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
        expect(await client.checkedRenderedBuffer(uidsOf(safe), { quality: 90 })).toEqual({
          image: renderedBytes(safe.instance.imgsrv_instance_id),
        });
        const unsafe = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
        imgsrv.behaviour.set(unsafe.instance.imgsrv_instance_id, 'paletteColor');
        imgsrv.requests.length = 0;
        expect(await client.checkedRenderedBuffer(uidsOf(unsafe))).toEqual({ refusal: expect.any(String) });
        expect(imgsrv.requests.map((request) => request.url)).not.toContain(
          `/instances/${unsafe.instance.imgsrv_instance_id}/rendered`,
        );
      });

      it('bounds the check and the rendering together: attributes that never come are given up within the bound', () =>
        withShortRenderingBound(async (client) => {
          const made = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
          imgsrv.behaviour.set(made.instance.imgsrv_instance_id, 'stallTags');
          const started = Date.now();
          // The tags would come after 3 s, and the rendering after them.
          await expect(client.checkedRenderedBuffer(uidsOf(made))).rejects.toMatchObject({ status: undefined });
          expect(Date.now() - started).toBeLessThan(2_500);
        }));
    });

    it('answers 404 {message: Image not available} once the timeout passes, even after the headers came', () =>
      withShortRenderingBound(async () => {
        const { study, instance } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
        imgsrv.behaviour.set(instance.imgsrv_instance_id, 'stallAfterHeaders');
        // Without the bound the stalled body would end after 3 s as a 200.
        const res = await t.http.get(`/api/studies/${study.id}/instances/${instance.id}/rendered`, { token: tokens.user1 });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Image not available' });
      }));
  });

  describe('authentication', () => {
    const ANY = '00000000-0000-4000-8000-000000000000';
    it.each([
      '/api/studies',
      `/api/studies/${ANY}`,
      `/api/studies/${ANY}/series`,
      `/api/series/${ANY}/instances`,
      `/api/studies/${ANY}/thumbnail`,
      `/api/studies/${ANY}/series/${ANY}/thumbnail`,
      `/api/studies/${ANY}/instances/${ANY}/rendered`,
    ])('GET %s without a token is 401', async (url) => {
      const res = await t.http.get(url);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
      const forged = await t.http.get(url, { token: 'not.a.jwt' });
      expect(forged.status).toBe(401);
      expect(forged.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('refuses a viewer token used as a bearer token', async () => {
      const { study } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const issued = await t.http.post('/api/viewer/token', { token: tokens.user1, body: { study_id: study.id } });
      expect(issued.status).toBe(200);
      for (const url of ['/api/studies', `/api/studies/${study.id}`]) {
        const res = await t.http.get(url, { token: issued.body.token });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ message: 'Unauthenticated.' });
        const cookie = await t.http.get(url, { cookies: { pacs_access_token: issued.body.token } });
        expect(cookie.status).toBe(401);
        expect(cookie.body).toEqual({ message: 'Unauthenticated.' });
      }
    });
  });
});
