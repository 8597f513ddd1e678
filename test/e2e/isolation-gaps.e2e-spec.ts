/**
 * Isolation, as the contract words it: a record of another clinic or, for a regular user, of another
 * unit behaves exactly as if it did not exist. Each route that takes an id of patient data is asked,
 * by each caller who may not see the record, once with the record's id and once with an id nobody
 * holds: the two answers must be the same (status and body) and a refusal. Each list is asked with a
 * filter naming the record and with one naming nothing: same answer, and no row of the record's place.
 *
 * The other specs assert the refusal of most of these routes with a fixed body; this one compares
 * with "unknown" directly, covers the routes they leave out (download, upload's unit_id, the
 * viewer gate with a session, cross-record ids, list filters naming another clinic's records) and
 * the callers they leave out (a regular user of another clinic).
 */
import { randomUUID } from 'crypto';
import { AuditService } from '../../src/audit/audit.service';
import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy, createThumbnail, dicomUid, fakeJpeg } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';
import { TestResponse } from '../support/http';

jest.setTimeout(120_000);

type Caller = 'user2' | 'otherUser' | 'otherAdmin';
const CALLERS: Caller[] = ['user2', 'otherUser', 'otherAdmin'];

/** The ids a route may name. */
interface Ids {
  study: string;
  series: string;
  instance: string;
  patient: string;
  report: string;
  share: string;
  preset: string;
  template: string;
}

/** A route: how to call it with the record's ids (or unknown ones), and the caller's own study (home). */
type Route = [name: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: (ids: Ids, home: Ids) => string, body?: unknown];

const answer = (res: TestResponse) => ({
  status: res.status,
  body: Buffer.isBuffer(res.body) ? res.raw.toString('base64') : res.body,
});

describe('Isolation: another clinic’s or unit’s record answers as an unknown id', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superToken: string;
  let tokens: Record<Caller, string>;
  /** The record: everything of unit 1 of the clinic. */
  let record: Ids;
  let recordUid: string;
  let recordAccession: string;
  let recordPatientId: string;
  let recordPatientName: string;
  /** Ids nobody holds. */
  const unknown: Ids = {
    study: randomUUID(),
    series: randomUUID(),
    instance: randomUUID(),
    patient: randomUUID(),
    report: randomUUID(),
    share: randomUUID(),
    preset: randomUUID(),
    template: randomUUID(),
  };
  /** Each caller's own records (a study of their unit, with its report and share). */
  let homes: Record<Caller, Ids>;

  /** A study of that unit with a draft report and a share, made through the API by `token`. */
  async function recordsOf(tenantId: string, unitId: string, token: string, adminToken: string): Promise<Ids> {
    const imaged = await createImagedStudy(t.db, tenantId, unitId);
    await createThumbnail(t.db, imaged.study.id, null, fakeJpeg(`study-${imaged.study.id}`));
    await createThumbnail(t.db, imaged.study.id, imaged.series.id, fakeJpeg(`series-${imaged.series.id}`));
    const report = await t.http.post(`/api/studies/${imaged.study.id}/reports`, { token, body: { findings: 'x' } });
    const share = await t.http.post(`/api/studies/${imaged.study.id}/shares`, { token, body: {} });
    const preset = await t.http.post('/api/tenant/report-presets', {
      token: adminToken,
      body: { name: `Preset ${randomUUID().slice(0, 8)}`, unit_id: unitId },
    });
    const template = await t.http.post('/api/tenant/templates', {
      token: adminToken,
      body: { name: `Template ${randomUUID().slice(0, 8)}`, unit_id: unitId },
    });
    for (const res of [report, share, preset, template]) {
      if (res.status !== 201) throw new Error(`setup: ${res.status} ${JSON.stringify(res.body)}`);
    }
    return {
      study: imaged.study.id,
      series: imaged.series.id,
      instance: imaged.instance.id,
      patient: imaged.patient.id,
      report: report.body.id,
      share: share.body.id,
      preset: preset.body.id,
      template: template.body.id,
    };
  }

  beforeAll(async () => {
    // Nothing listens on port 9: images and downloads of a visible study fail fast with their own 404.
    t = await createTestApp({ IMGSRV_URL: 'http://127.0.0.1:9' });
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    const otherUser = await createUser(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
    tokens = { user2: clinic.token2, otherUser: await login(t.http, otherUser.email), otherAdmin: other.adminToken };

    record = await recordsOf(clinic.tenant.id, clinic.unit1.id, clinic.token1, clinic.adminToken);
    const [row] = await t.db.query(
      `SELECT s.study_instance_uid, s.accession_number, p.patient_id, p.patient_name
         FROM studies s JOIN patients p ON p.id = s.patient_uuid WHERE s.id = $1`,
      [record.study],
    );
    recordUid = row.study_instance_uid;
    recordAccession = row.accession_number;
    recordPatientId = row.patient_id;
    recordPatientName = row.patient_name;
    const unit2Home = await recordsOf(clinic.tenant.id, clinic.unit2.id, clinic.token2, clinic.adminToken);
    const otherHome = await recordsOf(other.tenant.id, other.unit1.id, tokens.otherUser, other.adminToken);
    homes = { user2: unit2Home, otherUser: otherHome, otherAdmin: otherHome };
    // The access trail then holds the record's report.write and share.create entries.
    await t.app.get(AuditService).flush();
  });
  afterAll(() => t?.close());

  /** For each caller: the record's answer and the unknown id's answer, side by side. */
  async function compare(route: Route) {
    const [, method, path, body] = route;
    const seen: Record<string, unknown> = {};
    for (const caller of CALLERS) {
      const home = homes[caller];
      const theirs = await t.http.request(method, path(record, home), { token: tokens[caller], body });
      const none = await t.http.request(method, path(unknown, home), { token: tokens[caller], body });
      seen[caller] = { record: answer(theirs), unknown: answer(none), refused: theirs.status >= 400 };
    }
    return seen;
  }
  const same = (seen: Record<string, unknown>) => {
    for (const [caller, value] of Object.entries(seen)) {
      const { record: theirs, unknown: none, refused } = value as { record: unknown; unknown: unknown; refused: boolean };
      expect({ caller, answer: theirs, refused }).toEqual({ caller, answer: none, refused: true });
    }
  };

  const ROUTES: Route[] = [
    ['GET /api/studies/{id}', 'GET', (r) => `/api/studies/${r.study}`],
    ['GET /api/studies/{id}/series', 'GET', (r) => `/api/studies/${r.study}/series`],
    ['GET /api/series/{id}/instances', 'GET', (r) => `/api/series/${r.series}/instances`],
    ['GET /api/studies/{id}/thumbnail', 'GET', (r) => `/api/studies/${r.study}/thumbnail`],
    ['GET /api/studies/{id}/series/{series}/thumbnail', 'GET', (r) => `/api/studies/${r.study}/series/${r.series}/thumbnail`],
    [
      'GET /api/studies/{id}/instances/{instance}/rendered',
      'GET',
      (r) => `/api/studies/${r.study}/instances/${r.instance}/rendered`,
    ],
    ['GET /api/studies/{id}/archive', 'GET', (r) => `/api/studies/${r.study}/archive`],
    ['GET /api/patients/{id}', 'GET', (r) => `/api/patients/${r.patient}`],
    ['GET /api/patients/{id}/studies', 'GET', (r) => `/api/patients/${r.patient}/studies`],
    ['GET /api/studies/{id}/reports', 'GET', (r) => `/api/studies/${r.study}/reports`],
    ['POST /api/studies/{id}/reports', 'POST', (r) => `/api/studies/${r.study}/reports`, { findings: 'hijack' }],
    ['GET /api/studies/{id}/reports/{report}', 'GET', (r) => `/api/studies/${r.study}/reports/${r.report}`],
    [
      'PATCH /api/studies/{id}/reports/{report}',
      'PATCH',
      (r) => `/api/studies/${r.study}/reports/${r.report}`,
      { version: 1, findings: 'hijack' },
    ],
    ['DELETE /api/studies/{id}/reports/{report}', 'DELETE', (r) => `/api/studies/${r.study}/reports/${r.report}`],
    [
      'POST /api/studies/{id}/reports/{report}/sign',
      'POST',
      (r) => `/api/studies/${r.study}/reports/${r.report}/sign`,
      { version: 1 },
    ],
    [
      'POST /api/studies/{id}/reports/{report}/addenda',
      'POST',
      (r) => `/api/studies/${r.study}/reports/${r.report}/addenda`,
      {},
    ],
    ['GET /api/studies/{id}/reports/{report}/pdf', 'GET', (r) => `/api/studies/${r.study}/reports/${r.report}/pdf`],
    ['POST /api/studies/{id}/shares', 'POST', (r) => `/api/studies/${r.study}/shares`, {}],
    ['GET /api/studies/{id}/shares', 'GET', (r) => `/api/studies/${r.study}/shares`],
    ['DELETE /api/studies/{id}/shares/{share}', 'DELETE', (r) => `/api/studies/${r.study}/shares/${r.share}`],
    ['GET /api/tenant/report-presets/{id}', 'GET', (r) => `/api/tenant/report-presets/${r.preset}`],
    ['PATCH /api/tenant/report-presets/{id}', 'PATCH', (r) => `/api/tenant/report-presets/${r.preset}`, { name: 'hijack' }],
    ['DELETE /api/tenant/report-presets/{id}', 'DELETE', (r) => `/api/tenant/report-presets/${r.preset}`],
    ['GET /api/tenant/templates/{id}', 'GET', (r) => `/api/tenant/templates/${r.template}`],
    ['PATCH /api/tenant/templates/{id}', 'PATCH', (r) => `/api/tenant/templates/${r.template}`, { name: 'hijack' }],
    ['DELETE /api/tenant/templates/{id}', 'DELETE', (r) => `/api/tenant/templates/${r.template}`],
    // The record's child named under the caller's own, visible parent.
    [
      'GET /api/studies/{own}/series/{record series}/thumbnail',
      'GET',
      (r, home) => `/api/studies/${home.study}/series/${r.series}/thumbnail`,
    ],
    [
      'GET /api/studies/{own}/instances/{record instance}/rendered',
      'GET',
      (r, home) => `/api/studies/${home.study}/instances/${r.instance}/rendered`,
    ],
    ['GET /api/studies/{own}/reports/{record report}', 'GET', (r, home) => `/api/studies/${home.study}/reports/${r.report}`],
    [
      'PATCH /api/studies/{own}/reports/{record report}',
      'PATCH',
      (r, home) => `/api/studies/${home.study}/reports/${r.report}`,
      { version: 1, findings: 'hijack' },
    ],
    [
      'DELETE /api/studies/{own}/reports/{record report}',
      'DELETE',
      (r, home) => `/api/studies/${home.study}/reports/${r.report}`,
    ],
    [
      'POST /api/studies/{own}/reports/{record report}/sign',
      'POST',
      (r, home) => `/api/studies/${home.study}/reports/${r.report}/sign`,
      { version: 1 },
    ],
    [
      'POST /api/studies/{own}/reports/{record report}/addenda',
      'POST',
      (r, home) => `/api/studies/${home.study}/reports/${r.report}/addenda`,
      {},
    ],
    [
      'GET /api/studies/{own}/reports/{record report}/pdf',
      'GET',
      (r, home) => `/api/studies/${home.study}/reports/${r.report}/pdf`,
    ],
    ['DELETE /api/studies/{own}/shares/{record share}', 'DELETE', (r, home) => `/api/studies/${home.study}/shares/${r.share}`],
  ];

  // Ids named in a body (the viewer token's study, a draft's template, a unit): their own cases below.
  it.each(ROUTES)('%s', async (...route) => {
    same(await compare(route as Route));
  });

  it('the owner of the record does see it (the comparison above is not between two unknowns)', async () => {
    for (const path of [
      `/api/studies/${record.study}`,
      `/api/studies/${record.study}/series`,
      `/api/series/${record.series}/instances`,
      `/api/studies/${record.study}/thumbnail`,
      `/api/studies/${record.study}/series/${record.series}/thumbnail`,
      `/api/patients/${record.patient}`,
      `/api/studies/${record.study}/reports/${record.report}`,
      `/api/studies/${record.study}/shares`,
      `/api/tenant/report-presets/${record.preset}`,
      `/api/tenant/templates/${record.template}`,
    ]) {
      expect({ path, status: (await t.http.get(path, { token: clinic.token1 })).status }).toEqual({ path, status: 200 });
    }
  });

  it('POST /api/viewer/token: the record’s study_id answers as an unknown one', async () => {
    for (const caller of CALLERS) {
      const theirs = await t.http.post('/api/viewer/token', { token: tokens[caller], body: { study_id: record.study } });
      const none = await t.http.post('/api/viewer/token', { token: tokens[caller], body: { study_id: unknown.study } });
      expect({ caller, ...answer(theirs) }).toEqual({ caller, ...answer(none) });
      expect(theirs.status).toBe(404);
    }
  });

  it('PATCH of one’s own draft naming the record’s template answers as an unknown template', async () => {
    for (const caller of CALLERS) {
      const home = homes[caller];
      const url = `/api/studies/${home.study}/reports/${home.report}`;
      const [current] = await t.db.query(`SELECT version FROM reports WHERE id = $1`, [home.report]);
      const theirs = await t.http.patch(url, {
        token: tokens[caller],
        body: { version: current.version, template_id: record.template },
      });
      const none = await t.http.patch(url, {
        token: tokens[caller],
        body: { version: current.version, template_id: unknown.template },
      });
      expect({ caller, ...answer(theirs) }).toEqual({ caller, ...answer(none) });
      expect(theirs.status).toBe(422);
    }
  });

  it('GET /api/viewer/token/validate: the record’s UID answers as an unknown UID, with a session and with a viewer token', async () => {
    const validate = (headers: Record<string, string>, uid: string) =>
      t.http.get('/api/viewer/token/validate', {
        headers: { ...headers, 'x-original-uri': `/dicom-web/studies/${uid}/series` },
      });
    const nobodys = dicomUid();
    for (const caller of CALLERS) {
      const issued = await t.http.post('/api/viewer/token', { token: tokens[caller], body: { study_id: homes[caller].study } });
      expect(issued.status).toBe(200);
      const ways: Array<Record<string, string>> = [
        { authorization: `Bearer ${tokens[caller]}` },
        { 'x-viewer-token': issued.body.token as string },
      ];
      for (const headers of ways) {
        const theirs = await validate(headers, recordUid);
        const none = await validate(headers, nobodys);
        expect({ caller, via: Object.keys(headers)[0], ...answer(theirs) }).toEqual({
          caller,
          via: Object.keys(headers)[0],
          ...answer(none),
        });
        expect(theirs.status).toBe(403);
      }
    }
  });

  it('POST /api/dicom-web/studies: a unit_id of another clinic answers as an unknown unit', async () => {
    const stow = (unitId: string) =>
      t.http.post(`/api/dicom-web/studies?unit_id=${unitId}`, {
        token: other.adminToken,
        raw: '--b\r\nContent-Type: application/dicom\r\n\r\nnot dicom\r\n--b--\r\n',
        headers: { 'content-type': 'multipart/related; type="application/dicom"; boundary=b' },
      });
    const theirs = await stow(clinic.unit1.id);
    const none = await stow(randomUUID());
    expect(answer(theirs)).toEqual(answer(none));
    expect(theirs.status).toBe(422);
  });

  it('PATCH of one’s own preset naming a unit of another clinic answers as an unknown unit', async () => {
    const url = `/api/tenant/report-presets/${homes.otherAdmin.preset}`;
    const theirs = await t.http.patch(url, { token: other.adminToken, body: { unit_id: clinic.unit1.id } });
    const none = await t.http.patch(url, { token: other.adminToken, body: { unit_id: randomUUID() } });
    expect(answer(theirs)).toEqual(answer(none));
    expect(theirs.status).toBe(422);
  });

  describe('lists: a filter naming the record answers as one naming nothing, without its rows', () => {
    /** [name, path with the record's value, path with a value nobody holds, callers] */
    const LISTS: Array<[string, () => string, () => string, Caller[]]> = [
      [
        'GET /api/studies?patient_uuid=',
        () => `/api/studies?patient_uuid=${record.patient}`,
        () => `/api/studies?patient_uuid=${unknown.patient}`,
        CALLERS,
      ],
      [
        'GET /api/studies?exclude_id=',
        () => `/api/studies?exclude_id=${record.study}`,
        () => `/api/studies?exclude_id=${unknown.study}`,
        CALLERS,
      ],
      [
        'GET /api/studies?search=<accession>',
        () => `/api/studies?search=${recordAccession}`,
        () => `/api/studies?search=ACC-none`,
        CALLERS,
      ],
      [
        'GET /api/studies?search=<accession>&report_status=draft',
        () => `/api/studies?search=${recordAccession}&report_status=draft`,
        () => `/api/studies?search=ACC-none&report_status=draft`,
        CALLERS,
      ],
      [
        'GET /api/studies?patient_uuid=&report_status=draft',
        () => `/api/studies?patient_uuid=${record.patient}&report_status=draft`,
        () => `/api/studies?patient_uuid=${unknown.patient}&report_status=draft`,
        CALLERS,
      ],
      [
        'GET /api/patients?search=<patient id>',
        () => `/api/patients?search=${encodeURIComponent(recordPatientId)}`,
        () => `/api/patients?search=PID-none`,
        CALLERS,
      ],
      [
        'GET /api/patients?search=<patient name>',
        () => `/api/patients?search=${encodeURIComponent(recordPatientName)}`,
        () => `/api/patients?search=NOBODY`,
        CALLERS,
      ],
      [
        'GET /api/dicom-web/studies?StudyInstanceUID=',
        () => `/api/dicom-web/studies?StudyInstanceUID=${recordUid}`,
        () => `/api/dicom-web/studies?StudyInstanceUID=${dicomUid()}`,
        CALLERS,
      ],
      [
        'GET /api/dicom-web/studies?PatientID=',
        () => `/api/dicom-web/studies?PatientID=${encodeURIComponent(recordPatientId)}`,
        () => `/api/dicom-web/studies?PatientID=PID-none`,
        CALLERS,
      ],
      [
        'GET /api/tenant/report-presets?unit_id=',
        () => `/api/tenant/report-presets?unit_id=${clinic.unit1.id}`,
        () => `/api/tenant/report-presets?unit_id=${randomUUID()}`,
        CALLERS,
      ],
      [
        'GET /api/tenant/templates?unit_id=',
        () => `/api/tenant/templates?unit_id=${clinic.unit1.id}`,
        () => `/api/tenant/templates?unit_id=${randomUUID()}`,
        CALLERS,
      ],
      [
        'GET /api/tenant/templates?tenant_id=',
        () => `/api/tenant/templates?tenant_id=${clinic.tenant.id}`,
        () => `/api/tenant/templates?tenant_id=${randomUUID()}`,
        ['otherUser', 'otherAdmin'],
      ],
      [
        'GET /api/tenant/units?tenant_id=',
        () => `/api/tenant/units?tenant_id=${clinic.tenant.id}`,
        () => `/api/tenant/units?tenant_id=${randomUUID()}`,
        ['otherUser', 'otherAdmin'],
      ],
      [
        'GET /api/audit/access?study_id=',
        () => `/api/audit/access?study_id=${record.study}`,
        () => `/api/audit/access?study_id=${unknown.study}`,
        CALLERS,
      ],
      [
        'GET /api/audit/access?patient_id=',
        () => `/api/audit/access?patient_id=${encodeURIComponent(recordPatientId)}`,
        () => `/api/audit/access?patient_id=PID-none`,
        CALLERS,
      ],
      [
        'GET /api/audit/access?user_id=',
        () => `/api/audit/access?user_id=${clinic.user1.id}`,
        () => `/api/audit/access?user_id=${randomUUID()}`,
        CALLERS,
      ],
      [
        'GET /api/audit/access?format=csv&study_id=',
        () => `/api/audit/access?format=csv&study_id=${record.study}`,
        () => `/api/audit/access?format=csv&study_id=${unknown.study}`,
        CALLERS,
      ],
    ];

    /** Every id, UID and name of the record's place (unit 1 of the clinic) that a list could show. */
    const recordMarks = () => [
      record.study,
      record.patient,
      record.report,
      record.share,
      record.preset,
      record.template,
      recordUid,
      recordAccession,
      clinic.unit1.id,
      clinic.user1.id,
    ];

    it.each(LISTS)('%s', async (_name, withRecord, withNothing, callers) => {
      for (const caller of callers) {
        const theirs = await t.http.get(withRecord(), { token: tokens[caller] });
        const none = await t.http.get(withNothing(), { token: tokens[caller] });
        expect({ caller, ...answer(theirs) }).toEqual({ caller, ...answer(none) });
        const text = theirs.raw.toString();
        expect({ caller, shown: recordMarks().filter((mark) => text.includes(mark)) }).toEqual({ caller, shown: [] });
      }
      // The clinic's tenant admin is shown the record through the same filter: the filter does name it
      // (exclude_id excludes it by design).
      if (!withRecord().includes('exclude_id=')) {
        const owner = (await t.http.get(withRecord(), { token: clinic.adminToken })).raw.toString();
        expect(recordMarks().filter((mark) => owner.includes(mark))).not.toEqual([]);
      }
    });
  });

  it('left the record as it was: no write of the callers reached it', async () => {
    const [report] = await t.db.query(`SELECT version, status, findings FROM reports WHERE id = $1`, [record.report]);
    expect(report).toEqual({ version: 1, status: 'draft', findings: 'x' });
    const [share] = await t.db.query(`SELECT revoked_at FROM shares WHERE id = $1`, [record.share]);
    expect(share.revoked_at).toBeNull();
    const [preset] = await t.db.query(`SELECT name, deleted_at FROM report_presets WHERE id = $1`, [record.preset]);
    expect(preset.deleted_at).toBeNull();
    expect(preset.name).not.toBe('hijack');
    const [template] = await t.db.query(`SELECT name, deleted_at FROM report_templates WHERE id = $1`, [record.template]);
    expect(template.deleted_at).toBeNull();
    expect(template.name).not.toBe('hijack');
    const reports = await t.db.query(`SELECT id FROM reports WHERE study_id = $1`, [record.study]);
    expect(reports).toEqual([{ id: record.report }]);
    const shares = await t.http.get(`/api/studies/${record.study}/shares`, { token: superToken });
    expect(shares.body.map((s: { id: string }) => s.id)).toEqual([record.share]);
  });
});
