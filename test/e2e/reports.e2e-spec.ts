import { execFileSync } from 'child_process';
import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import sharp from 'sharp';
import { AuditService } from '../../src/audit';
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy, StudyRow } from '../support/clinical-factories';
import { ISO } from '../support/expectations';
import { rgbaPng } from '../support/png';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';

const REPORT_KEYS = [
  'amends_id',
  'author',
  'created_at',
  'findings',
  'id',
  'impression',
  'indication',
  'kind',
  'signed_at',
  'signed_by',
  'status',
  'study_id',
  'technique',
  'template_id',
  'tenant_id',
  'unit_id',
  'updated_at',
  'version',
];
const STUDY_NOT_FOUND = { message: 'Study not found.' };
const REPORT_NOT_FOUND = { message: 'Report not found.' };
const FINAL = { message: 'The report is final and cannot be changed: add an addendum instead.' };
const STALE = { message: 'The report was changed by someone else since this version: reload it before saving.' };
const DRAFT_EXISTS = { message: 'The study already has a draft: edit or delete it first.' };
const REPORT_EXISTS = { message: 'The study already has a report: add an addendum to its final report.' };
const NOT_FINAL = { message: 'Addenda are added to a final report only.' };
const TEMPLATE_INVALID = 'The selected template id is invalid.';
/** A 422 body with one message for one field. */
const invalid = (field: string, message: string) => ({ message, errors: { [field]: [message] } });

type Clinic = Awaited<ReturnType<typeof createClinic>>;

/** Text of a PDF as poppler's pdftotext reads it, and its pdfinfo. */
function readPdf(pdf: Buffer): { text: string; info: string; images: number } {
  const dir = mkdtempSync(join(tmpdir(), 'report-pdf-'));
  const file = join(dir, 'r.pdf');
  writeFileSync(file, pdf);
  const text = execFileSync('pdftotext', ['-layout', file, '-']).toString();
  const info = execFileSync('pdfinfo', [file]).toString();
  const list = execFileSync('pdfimages', ['-list', file]).toString().trim().split('\n');
  return { text, info, images: Math.max(0, list.length - 2) };
}

describe('Reports (/api/studies/{id}/reports)', () => {
  let t: TestApp;
  let superToken: string;
  let PNG: string;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    PNG = `data:image/png;base64,${(
      await sharp({ create: { width: 40, height: 20, channels: 3, background: '#3050a0' } })
        .png()
        .toBuffer()
    ).toString('base64')}`;
  });
  afterAll(() => t.close());

  /** A clinic whose unit-1 doctor has a CRM and a signature, and a study of unit 1. */
  async function setup(): Promise<{ c: Clinic; study: StudyRow; doctorToken: string; doctor: { id: string; name: string } }> {
    const c = await createClinic(t.db, t.http);
    const doctor = await createUser(t.db, {
      tenant_id: c.tenant.id,
      unit_id: c.unit1.id,
      name: 'Dr. João Conceição',
      signature: PNG,
    });
    await t.db.query(`UPDATE users SET crm = '123456/SP' WHERE id = $1`, [doctor.id]);
    const patient = await createPatient(t.db, c.tenant.id, {
      patient_name: 'MARIA DA CONCEIÇÃO',
      patient_id: 'PID-77',
      patient_birth_date: '1970-02-03',
      patient_sex: 'F',
    });
    const study = await createStudy(t.db, {
      tenant_id: c.tenant.id,
      unit_id: c.unit1.id,
      patient,
      study_description: 'TC de crânio',
      accession_number: 'ACC-9',
      study_date: '2024-03-05',
    });
    return { c, study, doctorToken: await login(t.http, doctor.email), doctor };
  }

  const url = (studyId: string, rest = '') => `/api/studies/${studyId}/reports${rest}`;
  const studyState = async (id: string) =>
    (await t.db.query(`SELECT report_status, reported_at, reported_by_user_id FROM studies WHERE id = $1`, [id]))[0] as {
      report_status: string;
      reported_at: Date | null;
      reported_by_user_id: string | null;
    };

  describe('drafts', () => {
    it('creates a draft in the Report shape; the study becomes draft; the list has it', async () => {
      const { c, study, doctorToken, doctor } = await setup();
      const res = await t.http.post(url(study.id), {
        token: doctorToken,
        body: { indication: 'Cefaleia', findings: 'Sem alterações.' },
      });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(REPORT_KEYS);
      expect(res.body).toMatchObject({
        study_id: study.id,
        tenant_id: c.tenant.id,
        unit_id: c.unit1.id,
        kind: 'report',
        amends_id: null,
        status: 'draft',
        indication: 'Cefaleia',
        technique: null,
        findings: 'Sem alterações.',
        impression: null,
        template_id: null,
        version: 1,
        author: { id: doctor.id, name: doctor.name },
        signed_by: null,
        signed_at: null,
      });
      expect(res.body.created_at).toMatch(ISO);
      expect((await studyState(study.id)).report_status).toBe('draft');
      const list = await t.http.get(url(study.id), { token: c.token1 });
      expect(list.status).toBe(200);
      expect(list.body.map((r: { id: string }) => r.id)).toEqual([res.body.id]);
    });

    it('takes the unit’s active template when none is given; refuses a template of another unit or clinic (422)', async () => {
      const { c, study, doctorToken } = await setup();
      const other = await createClinic(t.db, t.http);
      const [active] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, $2, 'Unit 1', true) RETURNING id`,
        [c.tenant.id, c.unit1.id],
      );
      const [unit2] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, $2, 'Unit 2', true) RETURNING id`,
        [c.tenant.id, c.unit2.id],
      );
      const [foreign] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, $2, 'Other', true) RETURNING id`,
        [other.tenant.id, other.unit1.id],
      );
      for (const id of [unit2.id, foreign.id, '00000000-0000-4000-8000-000000000000']) {
        const refused = await t.http.post(url(study.id), { token: doctorToken, body: { template_id: id } });
        expect([refused.status, refused.body]).toEqual([422, invalid('template_id', TEMPLATE_INVALID)]);
      }
      const res = await t.http.post(url(study.id), { token: doctorToken, body: {} });
      expect(res.status).toBe(201);
      expect(res.body.template_id).toBe(active.id);
    });

    it('PATCH and addenda refuse a template of another unit or clinic, or a deleted one (422 errors.template_id), and change nothing', async () => {
      const { c, study, doctorToken } = await setup();
      const other = await createClinic(t.db, t.http);
      const template = (tenantId: string, unitId: string, deleted = false) =>
        t.db
          .query(
            `INSERT INTO report_templates (tenant_id, unit_id, name, is_active, deleted_at)
             VALUES ($1, $2, 'T', false, ${deleted ? 'now()' : 'NULL'}) RETURNING id`,
            [tenantId, unitId],
          )
          .then((rows: Array<{ id: string }>) => rows[0].id);
      const refused = [
        await template(c.tenant.id, c.unit2.id),
        await template(other.tenant.id, other.unit1.id),
        await template(c.tenant.id, c.unit1.id, true),
      ];
      const onPost = await t.http.post(url(study.id), { token: doctorToken, body: { template_id: refused[2] } });
      expect([onPost.status, onPost.body]).toEqual([422, invalid('template_id', TEMPLATE_INVALID)]);

      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      for (const id of refused) {
        const res = await t.http.patch(url(study.id, `/${draft.id}`), {
          token: doctorToken,
          body: { version: 1, template_id: id },
        });
        expect([res.status, res.body]).toEqual([422, invalid('template_id', TEMPLATE_INVALID)]);
      }
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: doctorToken })).body).toMatchObject({
        version: 1,
        template_id: null,
      });

      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      for (const id of refused) {
        const res = await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: { template_id: id } });
        expect([res.status, res.body]).toEqual([422, invalid('template_id', TEMPLATE_INVALID)]);
      }
      expect((await t.http.get(url(study.id), { token: doctorToken })).body).toHaveLength(1);
    });

    it('without template_id takes the unit’s own active template only: a clinic’s active global one is not the default', async () => {
      const { c, study, doctorToken } = await setup();
      const [global] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, NULL, 'Global', true) RETURNING id`,
        [c.tenant.id],
      );
      const withoutOwn = await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } });
      expect(withoutOwn.status).toBe(201);
      expect(withoutOwn.body).toMatchObject({ status: 'draft', template_id: null });
      await t.http.delete(url(study.id, `/${withoutOwn.body.id}`), { token: doctorToken });

      const [own] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, $2, 'Unit 1', true) RETURNING id`,
        [c.tenant.id, c.unit1.id],
      );
      const withOwn = await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } });
      expect(withOwn.status).toBe(201);
      expect(withOwn.body).toMatchObject({ status: 'draft', template_id: own.id });
      await t.http.delete(url(study.id, `/${withOwn.body.id}`), { token: doctorToken });

      // The global template, asked for by id, is still allowed.
      const chosen = await t.http.post(url(study.id), { token: doctorToken, body: { template_id: global.id } });
      expect(chosen.status).toBe(201);
      expect(chosen.body).toMatchObject({ status: 'draft', template_id: global.id });
    });

    it('refuses a second draft, and a second report once one is final (409)', async () => {
      const { study, doctorToken } = await setup();
      const first = await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } });
      const second = await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'y' } });
      expect([second.status, second.body]).toEqual([409, DRAFT_EXISTS]);
      await t.http.post(url(study.id, `/${first.body.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const third = await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'z' } });
      expect([third.status, third.body]).toEqual([409, REPORT_EXISTS]);
    });

    it('lets one of two concurrent creations through (the partial unique index)', async () => {
      const { study, doctorToken } = await setup();
      const results = await Promise.all(
        Array.from({ length: 4 }, () => t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
      for (const refused of results.filter((r) => r.status === 409)) expect(refused.body).toEqual(DRAFT_EXISTS);
    });

    it('PATCH with the current version saves and answers the next; a stale version is 409 and changes nothing', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'a' } })).body;
      const saved = await t.http.patch(url(study.id, `/${draft.id}`), {
        token: doctorToken,
        body: { version: 1, findings: 'b', impression: 'c' },
      });
      expect(saved.status).toBe(200);
      expect(saved.body).toMatchObject({ version: 2, findings: 'b', impression: 'c' });
      const stale = await t.http.patch(url(study.id, `/${draft.id}`), {
        token: doctorToken,
        body: { version: 1, findings: 'old' },
      });
      expect([stale.status, stale.body]).toEqual([409, STALE]);
      const now = await t.http.get(url(study.id, `/${draft.id}`), { token: doctorToken });
      expect(now.body).toMatchObject({ version: 2, findings: 'b' });
    });

    it('a PATCH that changes nothing keeps the version, so a save made on that version still goes through', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'a' } })).body;
      for (const body of [{ version: 1, findings: 'a', impression: null }, { version: 1 }]) {
        const same = await t.http.patch(url(study.id, `/${draft.id}`), { token: doctorToken, body });
        expect([same.status, same.body]).toEqual([200, draft]);
      }
      const saved = await t.http.patch(url(study.id, `/${draft.id}`), {
        token: doctorToken,
        body: { version: 1, findings: 'b' },
      });
      expect([saved.status, saved.body.version]).toEqual([200, 2]);
      // Nothing to change, but made on a version someone else has replaced since: still stale.
      const stale = await t.http.patch(url(study.id, `/${draft.id}`), {
        token: doctorToken,
        body: { version: 1, findings: 'b' },
      });
      expect([stale.status, stale.body]).toEqual([409, STALE]);
    });

    it('two PATCHes made on the same version at once: one is saved, the other is 409', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: {} })).body;
      const [a, b] = await Promise.all(
        ['first', 'second'].map((text) =>
          t.http.patch(url(study.id, `/${draft.id}`), { token: doctorToken, body: { version: 1, findings: text } }),
        ),
      );
      expect([a.status, b.status].sort()).toEqual([200, 409]);
      const winner = a.status === 200 ? 'first' : 'second';
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: doctorToken })).body).toMatchObject({
        version: 2,
        findings: winner,
      });
    });

    it('DELETE of a draft: 204 and the study is pending again', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: {} })).body;
      const res = await t.http.delete(url(study.id, `/${draft.id}`), { token: doctorToken });
      expect(res.status).toBe(204);
      expect((await studyState(study.id)).report_status).toBe('pending');
      expect((await t.http.get(url(study.id), { token: doctorToken })).body).toEqual([]);
    });
  });

  describe('signing, final reports and addenda', () => {
    it('signs: final with signer and CRM, the study final with reported_at/by; the kept PDF is A4 with the text', async () => {
      const { c, study, doctorToken, doctor } = await setup();
      await t.db.query(`UPDATE tenants SET logo = $2 WHERE id = $1`, [c.tenant.id, PNG]);
      const draft = (
        await t.http.post(url(study.id), {
          token: doctorToken,
          body: { indication: 'Cefaleia', technique: 'Sem contraste', findings: 'Não há lesões.', impression: 'Normal.' },
        })
      ).body;
      const res = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        status: 'final',
        version: 2,
        signed_by: { id: doctor.id, name: doctor.name, crm: '123456/SP' },
      });
      expect(res.body.signed_at).toMatch(ISO);
      const state = await studyState(study.id);
      expect(state.report_status).toBe('final');
      expect(state.reported_at?.toISOString()).toBe(res.body.signed_at);
      expect(state.reported_by_user_id).toBe(doctor.id);
      expect((await t.http.get(`/api/studies/${study.id}`, { token: c.token1 })).body).toMatchObject({
        report_status: 'final',
        reported_at: res.body.signed_at,
        reported_by_user_id: doctor.id,
      });

      const pdf = await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: c.token1 });
      expect(pdf.status).toBe(200);
      expect(pdf.headers['content-type']).toBe('application/pdf');
      const read = readPdf(pdf.raw);
      expect(read.info).toMatch(/Page size:\s+595\.28 x 841\.89 pts \(A4\)/);
      for (const text of [
        'MARIA DA CONCEIÇÃO',
        'PID-77',
        '03/02/1970',
        'Female',
        '05/03/2024',
        'TC de crânio',
        'ACC-9',
        c.tenant.name,
        c.unit1.name,
        'Não há lesões.',
        'Dr. João Conceição',
        'CRM 123456/SP',
      ]) {
        expect(read.text).toContain(text);
      }
      expect(read.text).not.toContain('DRAFT');
      expect(read.images).toBe(2); // the clinic's logo and the signature
    });

    it('a signed PDF never changes when the logo, the signature or the template change later', async () => {
      const { c, study, doctorToken, doctor } = await setup();
      const [template] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active, layout)
         VALUES ($1, $2, 'Letterhead', true, $3) RETURNING id`,
        [c.tenant.id, c.unit1.id, JSON.stringify({ regions: { footer: { text: 'Rua Antiga, 1' } } })],
      );
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'Achados.' } })).body;
      expect(draft.template_id).toBe(template.id);
      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const before = (await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).raw;
      expect(readPdf(before).text).toContain('Rua Antiga, 1');
      await t.db.query(`UPDATE report_templates SET layout = $2, assets = $3 WHERE id = $1`, [
        template.id,
        JSON.stringify({ regions: { footer: { text: 'Rua Nova, 2' } } }),
        JSON.stringify({ background: { data_url: PNG, opacity: 0.5 } }),
      ]);
      await t.db.query(`UPDATE tenants SET logo = $2 WHERE id = $1`, [c.tenant.id, PNG]);
      await t.db.query(`UPDATE users SET signature = NULL, name = 'Someone Else' WHERE id = $1`, [doctor.id]);
      const after = (await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).raw;
      expect(after.equals(before)).toBe(true);
    });

    it('prints text outside Windows-1252 as written in the signed PDF (composed, tabs as spaces)', async () => {
      const { study, doctorToken } = await setup();
      const findings = 'Nódulo ≥ 6 mm, ≤ 8 mm; β-HCG 5 µg/L; 3 × 4 cm ± 2; Sa\u0303o Paulo; a\ttab.';
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings } })).body;
      const signed = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      expect(signed.status).toBe(200);
      const read = readPdf((await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).raw);
      const text = read.text.replace(/[ \t]+/g, ' ');
      expect(text).toContain('Nódulo ≥ 6 mm, ≤ 8 mm; β-HCG 5 µg/L; 3 × 4 cm ± 2; São Paulo; a tab.');
      expect(text).toContain('Dr. João Conceição');
      expect(text).toContain('MARIA DA CONCEIÇÃO');
    });

    it('an image pdfkit cannot decode (stored before uploads were decoded) is left out: sign and /pdf answer 200', async () => {
      const { c, study, doctorToken, doctor } = await setup();
      const broken = `data:image/png;base64,${rgbaPng('zlib_header').toString('base64')}`;
      await t.db.query(`UPDATE tenants SET logo = $2 WHERE id = $1`, [c.tenant.id, broken]);
      await t.db.query(`UPDATE users SET signature = $2 WHERE id = $1`, [doctor.id, broken]);
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'Sem alterações.' } })).body;
      const preview = await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken });
      expect(preview.status).toBe(200);
      expect(readPdf(preview.raw).text).toContain('Sem alterações.');
      const signed = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      expect(signed.status).toBe(200);
      const read = readPdf((await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).raw);
      expect(read.text).toContain('Sem alterações.');
      expect(read.text).toContain('Dr. João Conceição');
      expect(read.images).toBe(0);
    });

    it('final reports never change: PATCH, DELETE and sign again are 409, and the database refuses too', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { impression: 'ok' } })).body;
      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      for (const res of [
        await t.http.patch(url(study.id, `/${draft.id}`), { token: doctorToken, body: { version: 2, impression: 'no' } }),
        await t.http.delete(url(study.id, `/${draft.id}`), { token: doctorToken }),
        await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 2 } }),
      ]) {
        expect([res.status, res.body]).toEqual([409, FINAL]);
      }
      await expect(t.db.query(`UPDATE reports SET impression = 'tampered' WHERE id = $1`, [draft.id])).rejects.toThrow(/final/);
      await expect(t.db.query(`DELETE FROM reports WHERE id = $1`, [draft.id])).rejects.toThrow(/final/);
      await expect(t.db.query(`UPDATE report_pdfs SET data = 'x' WHERE report_id = $1`, [draft.id])).rejects.toThrow(/kept/);
    });

    it('signing needs a CRM (422 errors.crm) and findings or impression (422)', async () => {
      const { c, study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: c.token1, body: { indication: 'only' } })).body;
      const noCrm = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: c.token1, body: { version: 1 } });
      expect([noCrm.status, noCrm.body]).toEqual([
        422,
        invalid('crm', 'A CRM is required on the signer’s account to sign a report.'),
      ]);
      const empty = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const contentRequired = 'The findings or the impression must be filled in before signing.';
      expect([empty.status, empty.body]).toEqual([
        422,
        {
          message: `${contentRequired} (and 1 more error)`,
          errors: { findings: [contentRequired], impression: [contentRequired] },
        },
      ]);
      const blank = await t.http.patch(url(study.id, `/${draft.id}`), {
        token: doctorToken,
        body: { version: 1, findings: '   ' },
      });
      expect(blank.status).toBe(200);
      const blankSign = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 2 } });
      expect([blankSign.status, blankSign.body]).toEqual([
        422,
        {
          message: `${contentRequired} (and 1 more error)`,
          errors: { findings: [contentRequired], impression: [contentRequired] },
        },
      ]);
      expect((await studyState(study.id)).report_status).toBe('draft');
    });

    it('a stale version at signing is 409 and nothing is signed', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      await t.http.patch(url(study.id, `/${draft.id}`), { token: doctorToken, body: { version: 1, findings: 'y' } });
      const res = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      expect([res.status, res.body]).toEqual([409, STALE]);
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: doctorToken })).body.status).toBe('draft');
    });

    it('addenda: on a final report only, one draft at a time; signed, the report’s PDF gains a dated version and the study its signer', async () => {
      const { c, study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'Primeiro laudo.' } })).body;
      const onDraft = await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: {} });
      expect([onDraft.status, onDraft.body]).toEqual([409, NOT_FINAL]);
      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const v1 = (await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).raw;

      const addendum = await t.http.post(url(study.id, `/${draft.id}/addenda`), {
        token: doctorToken,
        body: { findings: 'Adendo: nódulo de 3 mm.' },
      });
      expect(addendum.status).toBe(201);
      expect(addendum.body).toMatchObject({ kind: 'addendum', amends_id: draft.id, status: 'draft', version: 1 });
      const second = await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: {} });
      expect([second.status, second.body]).toEqual([409, DRAFT_EXISTS]);
      expect((await studyState(study.id)).report_status).toBe('final');

      const preview = readPdf((await t.http.get(url(study.id, `/${addendum.body.id}/pdf`), { token: doctorToken })).raw);
      expect(preview.text).toContain('DRAFT');
      expect(preview.text).toContain('Adendo: nódulo de 3 mm.');

      // Signed the same way, by another doctor of the clinic: the study's reported_at and reported_by follow.
      await t.db.query(`UPDATE users SET crm = '654321/RJ' WHERE id = $1`, [c.admin.id]);
      const signed = await t.http.post(url(study.id, `/${addendum.body.id}/sign`), {
        token: c.adminToken,
        body: { version: 1 },
      });
      expect(signed.status).toBe(200);
      expect(signed.body.signed_by).toEqual({ id: c.admin.id, name: c.admin.name, crm: '654321/RJ' });
      expect((await t.http.get(`/api/studies/${study.id}`, { token: doctorToken })).body).toMatchObject({
        report_status: 'final',
        reported_at: signed.body.signed_at,
        reported_by_user_id: c.admin.id,
      });
      const v2 = (await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).raw;
      expect(v2.equals(v1)).toBe(false);
      const text = readPdf(v2).text;
      expect(text.indexOf('Primeiro laudo.')).toBeGreaterThanOrEqual(0);
      expect(text.indexOf('Adendo: nódulo de 3 mm.')).toBeGreaterThan(text.indexOf('Primeiro laudo.'));
      expect(text).toMatch(/Addendum 1 — signed \d\d\/\d\d\/\d{4} \d\d:\d\d UTC/);
      const versions = await t.db.query(`SELECT version FROM report_pdfs WHERE report_id = $1 ORDER BY version`, [draft.id]);
      expect(versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
    });

    it('DELETE of an addendum draft leaves the study final', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const addendum = (await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: {} })).body;
      expect((await t.http.delete(url(study.id, `/${addendum.id}`), { token: doctorToken })).status).toBe(204);
      expect((await studyState(study.id)).report_status).toBe('final');
    });

    /** A study whose report (findings 'x') is signed, and an addendum draft of it (findings 'y'). */
    async function signedWithAddendumDraft() {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const addendum = (
        await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: { findings: 'y' } })
      ).body;
      return { study, doctorToken, draft, addendum };
    }

    it('a final addendum never changes: PATCH, DELETE and sign again are 409', async () => {
      const { study, doctorToken, addendum } = await signedWithAddendumDraft();
      const signed = await t.http.post(url(study.id, `/${addendum.id}/sign`), { token: doctorToken, body: { version: 1 } });
      expect(signed.body).toMatchObject({ kind: 'addendum', status: 'final', version: 2 });
      for (const res of [
        await t.http.patch(url(study.id, `/${addendum.id}`), { token: doctorToken, body: { version: 2, findings: 'no' } }),
        await t.http.delete(url(study.id, `/${addendum.id}`), { token: doctorToken }),
        await t.http.post(url(study.id, `/${addendum.id}/sign`), { token: doctorToken, body: { version: 2 } }),
      ]) {
        expect([res.status, res.body]).toEqual([409, FINAL]);
      }
      expect((await t.http.get(url(study.id, `/${addendum.id}`), { token: doctorToken })).body).toMatchObject({
        status: 'final',
        findings: 'y',
      });
    });

    it('addenda amend the final report, not an addendum (draft or final): 409', async () => {
      const { study, doctorToken, draft, addendum } = await signedWithAddendumDraft();
      const onDraftAddendum = await t.http.post(url(study.id, `/${addendum.id}/addenda`), { token: doctorToken, body: {} });
      expect([onDraftAddendum.status, onDraftAddendum.body]).toEqual([409, NOT_FINAL]);
      await t.http.post(url(study.id, `/${addendum.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const onFinalAddendum = await t.http.post(url(study.id, `/${addendum.id}/addenda`), { token: doctorToken, body: {} });
      expect([onFinalAddendum.status, onFinalAddendum.body]).toEqual([409, NOT_FINAL]);
      const reports = (await t.http.get(url(study.id), { token: doctorToken })).body;
      expect(reports.map((r: { id: string }) => r.id)).toEqual([draft.id, addendum.id]);
    });

    it('one addendum draft at a time, also when several are asked for at once: the others are 409', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const results = await Promise.all(
        Array.from({ length: 4 }, () => t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: {} })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409]);
      for (const refused of results.filter((r) => r.status === 409)) expect(refused.body).toEqual(DRAFT_EXISTS);
      // While that draft exists, another addendum is refused too.
      const another = await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: { findings: 'z' } });
      expect([another.status, another.body]).toEqual([409, DRAFT_EXISTS]);
      expect((await t.http.get(url(study.id), { token: doctorToken })).body).toHaveLength(2);
    });

    it('a draft’s PDF carries DRAFT on every page and the accents as written', async () => {
      const { study, doctorToken } = await setup();
      const long = 'Parênquima cerebral com atenuação normal. São Paulo. '.repeat(250);
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: long } })).body;
      const res = await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken });
      expect(res.status).toBe(200);
      const read = readPdf(res.raw);
      const pages = Number(/Pages:\s+(\d+)/.exec(read.info)?.[1]);
      expect(pages).toBeGreaterThan(1);
      const perPage = read.text.split('\f').filter((page) => page.trim() !== '');
      expect(perPage).toHaveLength(pages);
      for (const page of perPage) expect(page).toContain('DRAFT');
      expect(read.text).toContain('MARIA DA CONCEIÇÃO');
      expect(read.text).toContain('São Paulo');
    });

    it('draws the template’s background image (at its opacity) and footer text', async () => {
      const { c, study, doctorToken } = await setup();
      const [template] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active, layout, assets)
         VALUES ($1, $2, 'Letterhead', true, $3, $4) RETURNING id`,
        [
          c.tenant.id,
          c.unit1.id,
          JSON.stringify({ regions: { footer: { text: 'Rua Conceição, 100 — São Paulo' } }, typography: { font: 'times' } }),
          JSON.stringify({ background: { data_url: PNG, opacity: 0.2 } }),
        ],
      );
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      expect(draft.template_id).toBe(template.id);
      const read = readPdf((await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).raw);
      expect(read.text).toContain('Rua Conceição, 100 — São Paulo');
      expect(read.images).toBe(1);
    });

    it('refuses to sign (422 errors.template_id) a draft whose template was deleted or moved out of the unit since; the preview still prints', async () => {
      const { c, study, doctorToken } = await setup();
      for (const change of [
        `UPDATE report_templates SET deleted_at = now() WHERE id = $1`,
        `UPDATE report_templates SET unit_id = $2 WHERE id = $1`,
      ]) {
        const [template] = await t.db.query(
          `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, $2, 'Letterhead', false) RETURNING id`,
          [c.tenant.id, c.unit1.id],
        );
        const draft = (
          await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x', template_id: template.id } })
        ).body;
        expect(draft.template_id).toBe(template.id);
        await t.db.query(change, change.includes('$2') ? [template.id, c.unit2.id] : [template.id]);
        expect((await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken })).status).toBe(200);
        const res = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
        expect([res.status, res.body]).toEqual([422, invalid('template_id', TEMPLATE_INVALID)]);
        const [row] = await t.db.query(`SELECT status FROM reports WHERE id = $1`, [draft.id]);
        expect(row.status).toBe('draft');
        await t.http.delete(url(study.id, `/${draft.id}`), { token: doctorToken });
      }
    });
  });

  describe('walls', () => {
    /** Every report path of a study with this draft, with a body each accepts. */
    const everyPath = (draftId: string) => {
      const r = `/${draftId}`;
      return [
        ['GET', '', undefined],
        ['POST', '', {}],
        ['GET', r, undefined],
        ['PATCH', r, { version: 1, findings: 'y' }],
        ['DELETE', r, undefined],
        ['POST', `${r}/sign`, { version: 1 }],
        ['POST', `${r}/addenda`, {}],
        ['GET', `${r}/pdf`, undefined],
      ] as const;
    };

    it('another clinic’s and another unit’s study, and any study for a user without a unit: 404 Study not found on every path', async () => {
      const { c, study, doctorToken } = await setup();
      const other = await createClinic(t.db, t.http);
      const noUnit = await createUser(t.db, { tenant_id: c.tenant.id, name: 'No unit' });
      const noUnitToken = await login(t.http, noUnit.email);
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      for (const token of [c.token2, noUnitToken, other.token1, other.adminToken]) {
        for (const [method, path, body] of everyPath(draft.id)) {
          const res = await t.http.request(method, url(study.id, path), { token, body });
          expect({ method, path, status: res.status, body: res.body }).toEqual({
            method,
            path,
            status: 404,
            body: STUDY_NOT_FOUND,
          });
        }
      }
      // The clinic's tenant admin and a super admin see it.
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: c.adminToken })).status).toBe(200);
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: superToken })).status).toBe(200);
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: doctorToken })).body.version).toBe(1);
    });

    // A quarantined study is moved into a clinic once its device is registered: its reports follow
    // it, a signed one included (whose row never changes).
    it("shows the study's clinic and unit after the study moves", async () => {
      const { c, study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      const signed = await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 1 } });
      expect(signed.status).toBe(200);
      const other = await createClinic(t.db, t.http);
      await t.db.query(`UPDATE studies SET tenant_id = $2, unit_id = $3 WHERE id = $1`, [
        study.id,
        other.tenant.id,
        other.unit2.id,
      ]);
      const list = await t.http.get(url(study.id), { token: other.adminToken });
      expect(list.status).toBe(200);
      expect(list.body).toEqual([
        expect.objectContaining({ id: draft.id, tenant_id: other.tenant.id, unit_id: other.unit2.id }),
      ]);
      const one = await t.http.get(url(study.id, `/${draft.id}`), { token: other.adminToken });
      expect(one.body).toMatchObject({ tenant_id: other.tenant.id, unit_id: other.unit2.id, status: 'final' });
      expect((await t.http.get(url(study.id), { token: c.adminToken })).body).toEqual(STUDY_NOT_FOUND);
    });

    it('a report id of another study is 404 Report not found', async () => {
      const { c, study, doctorToken } = await setup();
      const otherStudy = await createStudy(t.db, { tenant_id: c.tenant.id, unit_id: c.unit1.id });
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      for (const [method, path, body] of [
        ['GET', '', undefined],
        ['PATCH', '', { version: 1 }],
        ['DELETE', '', undefined],
        ['POST', '/sign', { version: 1 }],
        ['POST', '/addenda', {}],
        ['GET', '/pdf', undefined],
      ] as const) {
        const res = await t.http.request(method, url(otherStudy.id, `/${draft.id}${path}`), { token: doctorToken, body });
        expect({ method, path, status: res.status, body: res.body }).toEqual({
          method,
          path,
          status: 404,
          body: REPORT_NOT_FOUND,
        });
      }
      const bad = await t.http.get(url(study.id, '/not-a-uuid'), { token: doctorToken });
      expect(bad).toMatchObject({ status: 404, body: REPORT_NOT_FOUND });
      expect(await t.http.get(url('not-a-uuid'), { token: doctorToken })).toMatchObject({ status: 404, body: STUDY_NOT_FOUND });
    });

    it('no session: 401 {message: "Unauthenticated."} on every path', async () => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      for (const [method, path, body] of everyPath(draft.id)) {
        const res = await t.http.request(method, url(study.id, path), { body });
        expect({ method, path, status: res.status, body: res.body }).toEqual({
          method,
          path,
          status: 401,
          body: { message: 'Unauthenticated.' },
        });
      }
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: doctorToken })).body).toMatchObject({
        version: 1,
        findings: 'x',
      });
    });
  });

  describe('bad input (422, never 500)', () => {
    it.each([
      ['findings', 'a number', { findings: 12 }, 'The findings field must be a string.'],
      ['impression', 'an array', { impression: ['a'] }, 'The impression field must be a string.'],
      [
        'indication',
        '20,001 characters',
        { indication: 'x'.repeat(20_001) },
        'The indication field must not be greater than 20000 characters.',
      ],
      ['template_id', 'not a uuid', { template_id: 'nope' }, 'The template id field must be a valid UUID.'],
    ])('POST with %s %s: 422 with its message', async (field, _what, body, message) => {
      const { study, doctorToken } = await setup();
      const res = await t.http.post(url(study.id), { token: doctorToken, body });
      expect([res.status, res.body]).toEqual([422, invalid(field, message)]);
    });

    it.each([
      [{}, 'The version field is required.'],
      [{ version: '1' }, 'The version field must be an integer.'],
      [{ version: 0 }, 'The version field must be at least 1.'],
      [{ version: 1.5 }, 'The version field must be an integer.'],
      [{ version: null }, 'The version field is required.'],
      [{ version: 1e12 }, 'The version field is too large.'],
    ])('PATCH and sign with %j: 422 %j', async (body, message) => {
      const { study, doctorToken } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      for (const res of [
        await t.http.patch(url(study.id, `/${draft.id}`), { token: doctorToken, body }),
        await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body }),
      ]) {
        expect([res.status, res.body]).toEqual([422, invalid('version', message)]);
      }
    });

    it('a logo or signature whose pixels do not decode is refused at upload (422), not at signing', async () => {
      const { c, doctor } = await setup();
      const broken = `data:image/png;base64,${rgbaPng('zlib_header').toString('base64')}`;
      const logo = await t.http.patch('/api/tenant/settings', { token: c.adminToken, body: { logo: broken } });
      expect(logo.status).toBe(422);
      const notImage = 'The logo is not a valid image of the declared type (JPEG or PNG).';
      expect(logo.body).toEqual({ message: notImage, errors: { logo: [notImage] } });
      const signature = await t.http.patch(`/api/admin/users/${doctor.id}`, { token: superToken, body: { signature: broken } });
      expect([signature.status, signature.body]).toEqual([
        422,
        invalid('signature', 'The signature is not a valid image of the declared type (JPEG or PNG).'),
      ]);
    });

    it('a section of exactly 20,000 characters is accepted', async () => {
      const { study, doctorToken } = await setup();
      const res = await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'é'.repeat(20_000) } });
      expect(res.status).toBe(201);
    });

    it('counts a section’s characters as PostgreSQL does: 10,001 emoji (20,002 UTF-16 units) pass, 20,001 are 422', async () => {
      const { study, doctorToken } = await setup();
      const res = await t.http.post(url(study.id), { token: doctorToken, body: { findings: '\u{1F600}'.repeat(10_001) } });
      expect(res.status).toBe(201);
      expect([...res.body.findings]).toHaveLength(10_001);
      const tooLong = await t.http.patch(url(study.id, `/${res.body.id}`), {
        token: doctorToken,
        body: { version: 1, findings: '\u{1F600}'.repeat(20_001) },
      });
      const message = 'The findings field must not be greater than 20000 characters.';
      expect(tooLong.status).toBe(422);
      expect(tooLong.body).toEqual({ message, errors: { findings: [message] } });
      await t.http.delete(url(study.id, `/${res.body.id}`), { token: doctorToken });
      const refused = await t.http.post(url(study.id), { token: doctorToken, body: { findings: '\u{1F600}'.repeat(20_001) } });
      expect([refused.status, refused.body]).toEqual([422, { message, errors: { findings: [message] } }]);
    });
  });

  describe('GET /api/studies?report_status= (the reporting worklist)', () => {
    it('lists only the studies in that report state, with an exact total, with and without a search; 422 otherwise', async () => {
      const c = await createClinic(t.db, t.http);
      const make = (report_status: 'pending' | 'draft' | 'final', patient_name: string, study_date: string) =>
        createStudy(t.db, { tenant_id: c.tenant.id, unit_id: c.unit1.id, report_status, patient_name, study_date });
      const older = await make('pending', 'SOUZA^ANA', '2024-01-01');
      const newer = await make('pending', 'LIMA^JOÃO', '2024-02-01');
      const draft = await make('draft', 'SOUZA^BIA', '2024-03-01');
      const final = await make('final', 'SOUZA^CAIO', '2024-04-01');
      const list = async (query: Record<string, string>) => {
        const res = await t.http.get('/api/studies', { token: c.token1, query });
        expect(res.status).toBe(200);
        return { ids: res.body.data.map((s: { id: string }) => s.id), total: res.body.total };
      };
      expect(await list({ report_status: 'pending' })).toEqual({ ids: [newer.id, older.id], total: 2 });
      expect(await list({ report_status: 'draft' })).toEqual({ ids: [draft.id], total: 1 });
      expect(await list({ report_status: 'final' })).toEqual({ ids: [final.id], total: 1 });
      expect(await list({ report_status: 'pending', search: 'souza' })).toEqual({ ids: [older.id], total: 1 });
      expect((await list({})).total).toBe(4);
      // Another unit's user sees none of them.
      expect((await t.http.get('/api/studies', { token: c.token2, query: { report_status: 'pending' } })).body.total).toBe(0);
      for (const value of ['PENDING', 'done', '']) {
        const res = await t.http.get('/api/studies', { token: c.token1, query: { report_status: value } });
        expect([res.status, res.body]).toEqual([422, invalid('report_status', 'The selected report status is invalid.')]);
      }
    });
  });

  describe('access log', () => {
    it('logs every write (report.write: create, change, addendum, delete), signing (report.sign) and read (report.read: PDF, list, one), with the study’s patient and clinic', async () => {
      const { c, study, doctorToken, doctor } = await setup();
      const draft = (await t.http.post(url(study.id), { token: doctorToken, body: { findings: 'x' } })).body;
      await t.http.patch(url(study.id, `/${draft.id}`), { token: doctorToken, body: { version: 1, impression: 'y' } });
      await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken });
      await t.http.post(url(study.id, `/${draft.id}/sign`), { token: doctorToken, body: { version: 2 } });
      await t.http.get(url(study.id, `/${draft.id}/pdf`), { token: doctorToken });
      const addendum = (
        await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: { findings: 'z' } })
      ).body;
      await t.http.post(url(study.id, `/${addendum.id}/sign`), { token: doctorToken, body: { version: 1 } });
      const dropped = (await t.http.post(url(study.id, `/${draft.id}/addenda`), { token: doctorToken, body: {} })).body;
      expect((await t.http.delete(url(study.id, `/${dropped.id}`), { token: doctorToken })).status).toBe(204);
      expect((await t.http.get(url(study.id), { token: doctorToken })).status).toBe(200);
      expect((await t.http.get(url(study.id, `/${draft.id}`), { token: doctorToken })).status).toBe(200);
      await t.app.get(AuditService).flush();
      const rows: Array<{ action: string; user_id: string; tenant_id: string; patient_id: string }> = await t.db.query(
        `SELECT action, user_id, tenant_id, patient_id FROM access_logs WHERE study_id = $1 ORDER BY id`,
        [study.id],
      );
      expect(rows.map((r) => r.action)).toEqual([
        'report.write',
        'report.write',
        'report.read',
        'report.sign',
        'report.read',
        'report.write',
        'report.sign',
        'report.write',
        'report.write',
        'report.read',
        'report.read',
      ]);
      for (const row of rows) {
        expect({ user_id: row.user_id, tenant_id: row.tenant_id, patient_id: row.patient_id }).toEqual({
          user_id: doctor.id,
          tenant_id: c.tenant.id,
          patient_id: 'PID-77',
        });
      }
    });
  });
});
