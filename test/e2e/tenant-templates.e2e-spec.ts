import { randomUUID } from 'crypto';
import sharp from 'sharp';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';
import { ids, ISO, PAGE_KEYS, tag, LIST_QUERY_REFUSALS, refusal } from '../support/expectations';

const TEMPLATE_KEYS = [
  'assets',
  'content',
  'created_at',
  'id',
  'is_active',
  'layout',
  'name',
  'page',
  'schema_version',
  'tenant_id',
  'unit_id',
  'unit_name',
  'updated_at',
];
const UNIT_INVALID = 'The selected unit id is invalid.';
interface TemplateRow {
  id: string;
  name: string;
  unit_id: string | null;
  is_active: boolean;
}

async function createTemplate(
  db: DataSource,
  tenantId: string,
  unitId: string | null,
  values: { name?: string; is_active?: boolean; deleted?: boolean } = {},
): Promise<TemplateRow> {
  const [row] = await db.query(
    `INSERT INTO report_templates (tenant_id, unit_id, name, is_active, deleted_at)
     VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN now() END) RETURNING id, name, unit_id, is_active`,
    [tenantId, unitId, values.name ?? `Template ${tag()}`, values.is_active ?? false, values.deleted ?? false],
  );
  return row;
}

async function activeIn(db: DataSource, tenantId: string, unitId: string | null): Promise<string[]> {
  const rows: Array<{ id: string }> = await db.query(
    `SELECT id FROM report_templates
      WHERE tenant_id = $1 AND unit_id IS NOT DISTINCT FROM $2::uuid AND is_active AND deleted_at IS NULL`,
    [tenantId, unitId],
  );
  return rows.map((r) => r.id);
}

describe('Tenant: report templates (/api/tenant/templates, /api/tenant/my-template)', () => {
  let t: TestApp;
  let superToken: string;
  let PNG: string;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    PNG = `data:image/png;base64,${(
      await sharp({ create: { width: 4, height: 6, channels: 4, background: '#ffffff80' } })
        .png()
        .toBuffer()
    ).toString('base64')}`;
  });
  afterAll(() => t.close());

  /** A fresh clinic per test keeps the single-active rule of one test away from the others. */
  const newClinic = () => createClinic(t.db, t.http);

  describe('GET /api/tenant/templates', () => {
    it('shows a tenant admin every live template of the clinic, by name, in the Template shape', async () => {
      const c = await newClinic();
      const other = await newClinic();
      const b = await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'beta', is_active: true });
      const a = await createTemplate(t.db, c.tenant.id, c.unit2.id, { name: 'Alpha' });
      const g = await createTemplate(t.db, c.tenant.id, null, { name: 'Global' });
      await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'Deleted', deleted: true });
      await createTemplate(t.db, other.tenant.id, other.unit1.id, { name: 'Foreign', is_active: true });
      const res = await t.http.get('/api/tenant/templates', { token: c.adminToken });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
      expect(res.body).toMatchObject({ current_page: 1, per_page: 50, total: 3, last_page: 1 });
      expect(ids(res.body)).toEqual([a.id, b.id, g.id]);
      const item = res.body.data[1];
      expect(Object.keys(item).sort()).toEqual(TEMPLATE_KEYS);
      expect(item).toMatchObject({
        id: b.id,
        tenant_id: c.tenant.id,
        unit_id: c.unit1.id,
        unit_name: c.unit1.name,
        name: 'beta',
        content: null,
        schema_version: 1,
        layout: {},
        page: {},
        assets: {},
        is_active: true,
      });
      expect(item.created_at).toMatch(ISO);
      expect(res.body.data[2]).toMatchObject({ id: g.id, unit_id: null, unit_name: null });
    });

    it('shows a regular user only the active templates of their unit and the active global ones', async () => {
      const c = await newClinic();
      const own = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: false });
      await createTemplate(t.db, c.tenant.id, c.unit2.id, { is_active: true });
      const global = await createTemplate(t.db, c.tenant.id, null, { is_active: true });
      await createTemplate(t.db, c.tenant.id, null, { is_active: false });
      const res = await t.http.get('/api/tenant/templates', { token: c.token1 });
      expect(res.status).toBe(200);
      expect(ids(res.body).sort()).toEqual([own.id, global.id].sort());
      expect(res.body.total).toBe(2);
      const other = await t.http.get('/api/tenant/templates', { token: c.token1, query: { unit_id: c.unit2.id } });
      expect(other.body.data).toEqual([]);
    });

    it('shows a regular user without a unit nothing', async () => {
      const c = await newClinic();
      await createTemplate(t.db, c.tenant.id, null, { is_active: true });
      const loose = await createUser(t.db, { tenant_id: c.tenant.id, unit_id: null });
      const res = await t.http.get('/api/tenant/templates', { token: await login(t.http, loose.email) });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], current_page: 1, per_page: 50, total: 0, last_page: 1, total_exact: true });
    });

    it('shows a super admin every clinic, narrowed by tenant_id and unit_id', async () => {
      const c = await newClinic();
      const other = await newClinic();
      const mine = await createTemplate(t.db, c.tenant.id, c.unit1.id);
      const theirs = await createTemplate(t.db, other.tenant.id, other.unit2.id);
      const byTenant = await t.http.get('/api/tenant/templates', { token: superToken, query: { tenant_id: other.tenant.id } });
      expect(ids(byTenant.body)).toEqual([theirs.id]);
      const byUnit = await t.http.get('/api/tenant/templates', { token: superToken, query: { unit_id: c.unit1.id } });
      expect(ids(byUnit.body)).toEqual([mine.id]);
      const crossed = await t.http.get('/api/tenant/templates', { token: c.adminToken, query: { tenant_id: other.tenant.id } });
      expect(crossed.body.data).toEqual([]);
    });

    it('searches the name regardless of case and accents and takes % and _ literally', async () => {
      const c = await newClinic();
      const percent = await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'Laudo 100% CT' });
      await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'Laudo 1000 CT' });
      const underscore = await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'RX_TORAX' });
      await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'RXATORAX' });
      const get = (search: string) => t.http.get('/api/tenant/templates', { token: c.adminToken, query: { search } });
      expect(ids((await get('laudo 100%')).body)).toEqual([percent.id]);
      expect(ids((await get('rx_torax')).body)).toEqual([underscore.id]);
      const accented = await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'Tórax São José' });
      expect(ids((await get('torax sao')).body)).toEqual([accented.id]);
      expect(ids((await get('TÓRAX SÃO')).body)).toEqual([accented.id]);
    });

    it('pages 50 at a time and answers an empty page past the end', async () => {
      const c = await newClinic();
      await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active)
         SELECT $1, $2, 'T ' || lpad(i::text, 3, '0'), false FROM generate_series(1, 51) AS i`,
        [c.tenant.id, c.unit1.id],
      );
      const get = (page: string) => t.http.get('/api/tenant/templates', { token: c.adminToken, query: { page } });
      const [p1, p2, p3] = await Promise.all([get('1'), get('2'), get('3')]);
      expect(p1.body).toMatchObject({ current_page: 1, per_page: 50, total: 51, last_page: 2 });
      expect(p1.body.data).toHaveLength(50);
      expect(p2.body.data.map((x: { name: string }) => x.name)).toEqual(['T 051']);
      expect(p3.body).toEqual({ data: [], current_page: 3, per_page: 50, total: 51, last_page: 2, total_exact: true });
    });

    it.each(LIST_QUERY_REFUSALS)('answers 422 for %j', async (query, field, message) => {
      const c = await newClinic();
      const res = await t.http.get('/api/tenant/templates', { token: c.token1, query });
      expect(res.status).toBe(422);
      expect(res.body).toEqual(refusal(field, message));
    });

    it('answers 401 without a token', async () => {
      const res = await t.http.get('/api/tenant/templates');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });
  });

  describe('GET /api/tenant/templates/{id}', () => {
    it('returns a template to the admin, to a super admin, and to a regular user who may see it', async () => {
      const c = await newClinic();
      const own = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true, name: 'Own' });
      const global = await createTemplate(t.db, c.tenant.id, null, { is_active: true });
      for (const token of [c.adminToken, superToken, c.token1]) {
        const res = await t.http.get(`/api/tenant/templates/${own.id}`, { token });
        expect(res.status).toBe(200);
        expect(Object.keys(res.body).sort()).toEqual(TEMPLATE_KEYS);
        expect(res.body).toMatchObject({ id: own.id, name: 'Own', unit_name: c.unit1.name, tenant_id: c.tenant.id });
      }
      expect((await t.http.get(`/api/tenant/templates/${global.id}`, { token: c.token2 })).status).toBe(200);
    });

    it('answers 404 for a missing, malformed, soft-deleted or other-tenant template, and for a regular user outside its unit', async () => {
      const c = await newClinic();
      const other = await newClinic();
      const foreign = await createTemplate(t.db, other.tenant.id, other.unit1.id, { is_active: true });
      const deleted = await createTemplate(t.db, c.tenant.id, c.unit1.id, { deleted: true });
      const unit2 = await createTemplate(t.db, c.tenant.id, c.unit2.id, { is_active: true });
      const inactive = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: false });
      const cases: Array<[string, string]> = [
        [randomUUID(), c.adminToken],
        ['not-a-uuid', c.adminToken],
        [deleted.id, c.adminToken],
        [deleted.id, superToken],
        [foreign.id, c.adminToken],
        [foreign.id, c.token1],
        [unit2.id, c.token1],
        [inactive.id, c.token1],
      ];
      for (const [id, token] of cases) {
        const res = await t.http.get(`/api/tenant/templates/${id}`, { token });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Template not found.' });
      }
    });

    it('answers 401 without a token', async () => {
      const res = await t.http.get(`/api/tenant/templates/${randomUUID()}`);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });
  });

  describe('GET /api/tenant/my-template', () => {
    it('returns the active template of the caller’s unit', async () => {
      const c = await newClinic();
      const active = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: false });
      for (const token of [c.token1, c.adminToken]) {
        const res = await t.http.get('/api/tenant/my-template', { token });
        expect(res.status).toBe(200);
        expect(Object.keys(res.body).sort()).toEqual(TEMPLATE_KEYS);
        expect(res.body.id).toBe(active.id);
      }
    });

    it('answers the JSON value null when the unit has no active template (a global one does not count)', async () => {
      const c = await newClinic();
      await createTemplate(t.db, c.tenant.id, c.unit2.id, { is_active: false });
      await createTemplate(t.db, c.tenant.id, null, { is_active: true });
      await createTemplate(t.db, c.tenant.id, c.unit2.id, { is_active: true, deleted: true });
      const res = await t.http.get('/api/tenant/my-template', { token: c.token2 });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.raw.toString()).toBe('null');
    });

    it('answers null to a caller without a unit (a super admin)', async () => {
      const res = await t.http.get('/api/tenant/my-template', { token: superToken });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.raw.toString()).toBe('null');
    });

    it('answers 401 without a token', async () => {
      const res = await t.http.get('/api/tenant/my-template');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });
  });

  describe('POST /api/tenant/templates', () => {
    it('creates an active template with the defaults and deactivates the other active one of the unit only', async () => {
      const c = await newClinic();
      const previous = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      const otherUnit = await createTemplate(t.db, c.tenant.id, c.unit2.id, { is_active: true });
      const global = await createTemplate(t.db, c.tenant.id, null, { is_active: true });
      const res = await t.http.post('/api/tenant/templates', {
        token: c.adminToken,
        body: { name: '  Laudo padrão ', unit_id: c.unit1.id, tenant_id: randomUUID(), id: randomUUID() },
      });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(TEMPLATE_KEYS);
      expect(res.body).toMatchObject({
        tenant_id: c.tenant.id,
        unit_id: c.unit1.id,
        unit_name: c.unit1.name,
        name: 'Laudo padrão',
        content: null,
        schema_version: 1,
        layout: {},
        page: {},
        assets: {},
        is_active: true,
      });
      expect(res.body.created_at).toMatch(ISO);
      expect(await activeIn(t.db, c.tenant.id, c.unit1.id)).toEqual([res.body.id]);
      expect(await activeIn(t.db, c.tenant.id, c.unit2.id)).toEqual([otherUnit.id]);
      expect(await activeIn(t.db, c.tenant.id, null)).toEqual([global.id]);
      const [prev] = await t.db.query(`SELECT is_active FROM report_templates WHERE id = $1`, [previous.id]);
      expect(prev.is_active).toBe(false);
    });

    it('stores every field, with the background opacity defaulting to 1', async () => {
      const c = await newClinic();
      const layout = { regions: { header: { height: 30 } }, slots: [{ kind: 'logo', x: 1 }], typography: { size: 11 } };
      const page = { size: 'A4', margins: { top: 20 } };
      const res = await t.http.post('/api/tenant/templates', {
        token: c.adminToken,
        body: {
          name: 'Full',
          unit_id: c.unit2.id,
          content: 'Texto livre',
          schema_version: 1,
          layout,
          page,
          assets: { background: { data_url: PNG }, extra: 'dropped' },
          is_active: false,
        },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        content: 'Texto livre',
        layout,
        page,
        assets: { background: { data_url: PNG, opacity: 1 } },
        is_active: false,
      });
      const withOpacity = await t.http.post('/api/tenant/templates', {
        token: c.adminToken,
        body: {
          name: 'Faded',
          unit_id: c.unit2.id,
          assets: { background: { data_url: PNG, opacity: 0.35 } },
          is_active: false,
        },
      });
      expect(withOpacity.body.assets).toEqual({ background: { data_url: PNG, opacity: 0.35 } });
    });

    it('keeps the current active template when the new one is created inactive', async () => {
      const c = await newClinic();
      const current = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      const res = await t.http.post('/api/tenant/templates', {
        token: c.adminToken,
        body: { name: 'Draft', unit_id: c.unit1.id, is_active: false },
      });
      expect(res.status).toBe(201);
      expect(await activeIn(t.db, c.tenant.id, c.unit1.id)).toEqual([current.id]);
    });

    it('answers 422 with errors.unit_id for a unit of another clinic or an unknown unit', async () => {
      const c = await newClinic();
      const other = await newClinic();
      for (const unitId of [other.unit1.id, randomUUID()]) {
        const res = await t.http.post('/api/tenant/templates', { token: c.adminToken, body: { name: 'X', unit_id: unitId } });
        expect(res.status).toBe(422);
        expect(res.body).toEqual({ message: UNIT_INVALID, errors: { unit_id: [UNIT_INVALID] } });
      }
      expect(await t.db.query(`SELECT 1 FROM report_templates WHERE tenant_id = $1`, [c.tenant.id])).toEqual([]);
    });

    it('lets a super admin write the template of the tenant that owns the unit', async () => {
      const c = await newClinic();
      const res = await t.http.post('/api/tenant/templates', {
        token: superToken,
        body: { name: 'By root', unit_id: c.unit2.id },
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ tenant_id: c.tenant.id, unit_id: c.unit2.id, unit_name: c.unit2.name });
      const unknown = await t.http.post('/api/tenant/templates', {
        token: superToken,
        body: { name: 'X', unit_id: randomUUID() },
      });
      expect(unknown.status).toBe(422);
      expect(unknown.body.errors).toEqual({ unit_id: [UNIT_INVALID] });
    });

    it('answers 403 to a regular user and 401 without a token', async () => {
      const c = await newClinic();
      const body = { name: 'Nope', unit_id: c.unit1.id };
      const forbidden = await t.http.post('/api/tenant/templates', { token: c.token1, body });
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual({ error: 'Forbidden' });
      const anonymous = await t.http.post('/api/tenant/templates', { body });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
      expect(await t.db.query(`SELECT 1 FROM report_templates WHERE tenant_id = $1`, [c.tenant.id])).toEqual([]);
    });

    it.each([
      [{ unit_id: 'UNIT' }, 'name', 'The name field is required.'],
      [{ unit_id: 'UNIT', name: 'n'.repeat(256) }, 'name', 'The name field must not be greater than 255 characters.'],
      [{ unit_id: 'UNIT', name: 3 }, 'name', 'The name field must be a string.'],
      [{ name: 'x' }, 'unit_id', 'The unit id field is required.'],
      [{ name: 'x', unit_id: null }, 'unit_id', 'The unit id field is required.'],
      [{ name: 'x', unit_id: 'u1' }, 'unit_id', 'The unit id field must be a valid UUID.'],
      [{ name: 'x', unit_id: 'UNIT', content: 5 }, 'content', 'The content field must be a string.'],
      [
        { name: 'x', unit_id: 'UNIT', schema_version: 2 },
        'schema_version',
        'The selected schema version is invalid (only 1 is accepted).',
      ],
      [
        { name: 'x', unit_id: 'UNIT', schema_version: '1' },
        'schema_version',
        'The selected schema version is invalid (only 1 is accepted).',
      ],
      [{ name: 'x', unit_id: 'UNIT', assets: [{ background: {} }] }, 'assets', 'The assets field must be an object.'],
      [{ name: 'x', unit_id: 'UNIT', layout: [1, 2] }, 'layout', 'The layout field must be an object.'],
      [{ name: 'x', unit_id: 'UNIT', layout: 'grid' }, 'layout', 'The layout field must be an object.'],
      [{ name: 'x', unit_id: 'UNIT', page: 4 }, 'page', 'The page field must be an object.'],
      [{ name: 'x', unit_id: 'UNIT', assets: 'bg' }, 'assets', 'The assets field must be an object.'],
      [
        { name: 'x', unit_id: 'UNIT', assets: { background: 'x' } },
        'assets.background',
        'The background field must be an object.',
      ],
      [
        { name: 'x', unit_id: 'UNIT', assets: { background: {} } },
        'assets.background.data_url',
        'The data url field is required.',
      ],
      [
        { name: 'x', unit_id: 'UNIT', assets: { background: { data_url: 'data:image/svg+xml;base64,PHN2Zz4=' } } },
        'assets.background.data_url',
        'The background image must be a data URL starting with data:image/jpeg;base64, or data:image/png;base64,.',
      ],
      [
        { name: 'x', unit_id: 'UNIT', assets: { background: { data_url: 'PNG', opacity: 1.5 } } },
        'assets.background.opacity',
        'The opacity field must be between 0 and 1.',
      ],
      [
        { name: 'x', unit_id: 'UNIT', assets: { background: { data_url: 'PNG', opacity: '0.5' } } },
        'assets.background.opacity',
        'The opacity field must be a number.',
      ],
      [{ name: 'x', unit_id: 'UNIT', is_active: 'yes' }, 'is_active', 'The is active field must be true or false.'],
    ])('answers 422 for %j with errors[%s]', async (body, field, message) => {
      const c = await newClinic();
      const payload = JSON.parse(
        JSON.stringify(body).replace('"UNIT"', JSON.stringify(c.unit1.id)).replace('"PNG"', JSON.stringify(PNG)),
      );
      const res = await t.http.post('/api/tenant/templates', { token: c.adminToken, body: payload });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ [field]: [message] });
    });

    it('refuses a background larger than 5 MiB decoded', async () => {
      const c = await newClinic();
      const huge = `data:image/png;base64,${Buffer.alloc(5 * 1024 * 1024 + 1).toString('base64')}`;
      const res = await t.http.post('/api/tenant/templates', {
        token: c.adminToken,
        body: { name: 'Huge', unit_id: c.unit1.id, assets: { background: { data_url: huge } } },
      });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({
        'assets.background.data_url': ['The background image must not be larger than 5 MiB.'],
      });
    });

    it('leaves exactly one active template when ten activations in one unit race', async () => {
      const c = await newClinic();
      const responses = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          t.http.post('/api/tenant/templates', { token: c.adminToken, body: { name: `Racer ${i}`, unit_id: c.unit1.id } }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect(await activeIn(t.db, c.tenant.id, c.unit1.id)).toHaveLength(1);
    });
  });

  describe('PATCH /api/tenant/templates/{id}', () => {
    it('changes the given fields and answers the Template', async () => {
      const c = await newClinic();
      const tpl = await createTemplate(t.db, c.tenant.id, c.unit1.id, { name: 'Old', is_active: false });
      const res = await t.http.patch(`/api/tenant/templates/${tpl.id}`, {
        token: c.adminToken,
        body: { name: 'New', content: 'Body', layout: { slots: [] }, page: { size: 'A4' } },
      });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(TEMPLATE_KEYS);
      expect(res.body).toMatchObject({
        id: tpl.id,
        name: 'New',
        content: 'Body',
        layout: { slots: [] },
        page: { size: 'A4' },
        assets: {},
        is_active: false,
        unit_id: c.unit1.id,
      });
      const cleared = await t.http.patch(`/api/tenant/templates/${tpl.id}`, {
        token: c.adminToken,
        body: { content: null, layout: null, assets: { background: { data_url: PNG, opacity: 0 } } },
      });
      expect(cleared.body).toMatchObject({
        content: null,
        layout: {},
        page: { size: 'A4' },
        assets: { background: { data_url: PNG, opacity: 0 } },
      });
      const removed = await t.http.patch(`/api/tenant/templates/${tpl.id}`, {
        token: c.adminToken,
        body: { assets: { background: null } },
      });
      expect(removed.body.assets).toEqual({});
    });

    it('activating a template deactivates the other templates of its unit', async () => {
      const c = await newClinic();
      const current = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      const next = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: false });
      const res = await t.http.patch(`/api/tenant/templates/${next.id}`, { token: c.adminToken, body: { is_active: true } });
      expect(res.status).toBe(200);
      expect(res.body.is_active).toBe(true);
      expect(await activeIn(t.db, c.tenant.id, c.unit1.id)).toEqual([next.id]);
      const [before] = await t.db.query(`SELECT is_active FROM report_templates WHERE id = $1`, [current.id]);
      expect(before.is_active).toBe(false);
    });

    it('moving an active template to another unit or making it global deactivates the active one there', async () => {
      const c = await newClinic();
      const moving = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      const there = await createTemplate(t.db, c.tenant.id, c.unit2.id, { is_active: true });
      const global = await createTemplate(t.db, c.tenant.id, null, { is_active: true });
      const moved = await t.http.patch(`/api/tenant/templates/${moving.id}`, {
        token: c.adminToken,
        body: { unit_id: c.unit2.id },
      });
      expect(moved.status).toBe(200);
      expect(moved.body).toMatchObject({ unit_id: c.unit2.id, unit_name: c.unit2.name, is_active: true });
      expect(await activeIn(t.db, c.tenant.id, c.unit2.id)).toEqual([moving.id]);
      expect(await activeIn(t.db, c.tenant.id, c.unit1.id)).toEqual([]);
      const [replaced] = await t.db.query(`SELECT is_active FROM report_templates WHERE id = $1`, [there.id]);
      expect(replaced.is_active).toBe(false);
      const globalised = await t.http.patch(`/api/tenant/templates/${moving.id}`, {
        token: c.adminToken,
        body: { unit_id: null },
      });
      expect(globalised.status).toBe(200);
      expect(globalised.body).toMatchObject({ unit_id: null, unit_name: null, is_active: true });
      expect(await activeIn(t.db, c.tenant.id, null)).toEqual([moving.id]);
      const [oldGlobal] = await t.db.query(`SELECT is_active FROM report_templates WHERE id = $1`, [global.id]);
      expect(oldGlobal.is_active).toBe(false);
    });

    it('leaves exactly one active template when two activations race', async () => {
      const c = await newClinic();
      for (let round = 0; round < 5; round++) {
        const a = await createTemplate(t.db, c.tenant.id, c.unit1.id);
        const b = await createTemplate(t.db, c.tenant.id, c.unit1.id);
        const [ra, rb] = await Promise.all(
          [a, b].map((x) => t.http.patch(`/api/tenant/templates/${x.id}`, { token: c.adminToken, body: { is_active: true } })),
        );
        expect([ra.status, rb.status]).toEqual([200, 200]);
        const active = await activeIn(t.db, c.tenant.id, c.unit1.id);
        expect(active).toHaveLength(1);
        expect([a.id, b.id]).toContain(active[0]);
      }
    });

    it('answers 422 with errors.unit_id for a unit of another clinic, for a super admin too', async () => {
      const c = await newClinic();
      const other = await newClinic();
      const tpl = await createTemplate(t.db, c.tenant.id, c.unit1.id);
      for (const token of [c.adminToken, superToken]) {
        const res = await t.http.patch(`/api/tenant/templates/${tpl.id}`, { token, body: { unit_id: other.unit1.id } });
        expect(res.status).toBe(422);
        expect(res.body).toEqual({ message: UNIT_INVALID, errors: { unit_id: [UNIT_INVALID] } });
      }
    });

    it('lets a super admin change any clinic’s template', async () => {
      const c = await newClinic();
      const tpl = await createTemplate(t.db, c.tenant.id, c.unit1.id);
      const res = await t.http.patch(`/api/tenant/templates/${tpl.id}`, {
        token: superToken,
        body: { unit_id: c.unit2.id, is_active: true },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ tenant_id: c.tenant.id, unit_id: c.unit2.id, is_active: true });
    });

    it('answers 404 for a missing, malformed, soft-deleted or other-tenant template', async () => {
      const c = await newClinic();
      const other = await newClinic();
      const foreign = await createTemplate(t.db, other.tenant.id, other.unit1.id);
      const deleted = await createTemplate(t.db, c.tenant.id, c.unit1.id, { deleted: true });
      for (const id of [randomUUID(), 'x1', foreign.id, deleted.id]) {
        const res = await t.http.patch(`/api/tenant/templates/${id}`, { token: c.adminToken, body: { name: 'Hijack' } });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Template not found.' });
      }
      const [row] = await t.db.query(`SELECT name FROM report_templates WHERE id = $1`, [foreign.id]);
      expect(row.name).not.toBe('Hijack');
    });

    it('answers 403 to a regular user and 401 without a token', async () => {
      const c = await newClinic();
      const tpl = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      const forbidden = await t.http.patch(`/api/tenant/templates/${tpl.id}`, { token: c.token1, body: { name: 'x' } });
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual({ error: 'Forbidden' });
      const anonymous = await t.http.patch(`/api/tenant/templates/${tpl.id}`, { body: { name: 'x' } });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
    });

    it.each([
      ['name', null, 'The name field must not be empty.'],
      ['name', '', 'The name field must not be empty.'],
      ['unit_id', 'nope', 'The unit id field must be a valid UUID.'],
      ['schema_version', 0, 'The selected schema version is invalid (only 1 is accepted).'],
      ['schema_version', null, 'The selected schema version is invalid (only 1 is accepted).'],
      ['assets', 5, 'The assets field must be an object.'],
      ['is_active', null, 'The is active field must be true or false.'],
      ['page', [], 'The page field must be an object.'],
    ])('answers 422 when %s is %j', async (field, value, message) => {
      const c = await newClinic();
      const tpl = await createTemplate(t.db, c.tenant.id, c.unit1.id);
      const res = await t.http.patch(`/api/tenant/templates/${tpl.id}`, { token: c.adminToken, body: { [field]: value } });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ [field]: [message] });
    });
  });

  describe('DELETE /api/tenant/templates/{id}', () => {
    it('soft-deletes (204, no body): the row stays, every read answers 404', async () => {
      const c = await newClinic();
      const tpl = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      const res = await t.http.delete(`/api/tenant/templates/${tpl.id}`, { token: c.adminToken });
      expect(res.status).toBe(204);
      expect(res.raw.length).toBe(0);
      const [row] = await t.db.query(`SELECT deleted_at FROM report_templates WHERE id = $1`, [tpl.id]);
      expect(row.deleted_at).toBeInstanceOf(Date);
      expect((await t.http.get(`/api/tenant/templates/${tpl.id}`, { token: c.adminToken })).status).toBe(404);
      expect((await t.http.get('/api/tenant/templates', { token: c.adminToken })).body.total).toBe(0);
      expect((await t.http.get('/api/tenant/my-template', { token: c.token1 })).raw.toString()).toBe('null');
      const again = await t.http.delete(`/api/tenant/templates/${tpl.id}`, { token: c.adminToken });
      expect(again.status).toBe(404);
      expect(again.body).toEqual({ message: 'Template not found.' });
    });

    it('lets a super admin delete any clinic’s template', async () => {
      const c = await newClinic();
      const tpl = await createTemplate(t.db, c.tenant.id, null);
      expect((await t.http.delete(`/api/tenant/templates/${tpl.id}`, { token: superToken })).status).toBe(204);
    });

    it('answers 404 for a missing, malformed or other-tenant template, 403 to a regular user, 401 without a token', async () => {
      const c = await newClinic();
      const other = await newClinic();
      const foreign = await createTemplate(t.db, other.tenant.id, other.unit1.id);
      for (const id of [randomUUID(), 'zzz', foreign.id]) {
        const res = await t.http.delete(`/api/tenant/templates/${id}`, { token: c.adminToken });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Template not found.' });
      }
      const [row] = await t.db.query(`SELECT deleted_at FROM report_templates WHERE id = $1`, [foreign.id]);
      expect(row.deleted_at).toBeNull();
      const own = await createTemplate(t.db, c.tenant.id, c.unit1.id, { is_active: true });
      const forbidden = await t.http.delete(`/api/tenant/templates/${own.id}`, { token: c.token1 });
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual({ error: 'Forbidden' });
      const anonymous = await t.http.delete(`/api/tenant/templates/${own.id}`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
    });
  });
});
