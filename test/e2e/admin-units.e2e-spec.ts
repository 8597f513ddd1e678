import { randomUUID } from 'crypto';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser, createTenant, createUnit } from '../support/factories';
import { ids, ISO, PAGE_KEYS, tag, TENANT_LIST_QUERY_REFUSALS, refusal } from '../support/expectations';

const UNIT_KEYS = ['created_at', 'id', 'is_active', 'name', 'slug', 'tenant_id', 'updated_at'];
const UNIT_TAKEN = 'A unit with that name already exists for this clinic.';
describe('Admin: units (/api/admin/units)', () => {
  let t: TestApp;
  let superToken: string;
  let clinic: Awaited<ReturnType<typeof createClinic>>;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    clinic = await createClinic(t.db, t.http);
  });
  afterAll(() => t.close());

  const post = (body: unknown, token = superToken) => t.http.post('/api/admin/units', { token, body });
  const list = (query: Record<string, string>, token = superToken) => t.http.get('/api/admin/units', { token, query });

  describe('access', () => {
    it.each([['GET'], ['POST']])('%s answers 401 without a token and 403 to a regular user or tenant admin', async (method) => {
      const body = method === 'POST' ? { tenant_id: clinic.tenant.id, name: `Refused ${tag()}` } : undefined;
      const anonymous = await t.http.request(method as 'GET', '/api/admin/units', { body });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
      for (const token of [clinic.token1, clinic.adminToken]) {
        const res = await t.http.request(method as 'GET', '/api/admin/units', { token, body });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'Forbidden' });
      }
      expect(await t.db.query(`SELECT 1 FROM units WHERE name LIKE 'Refused %'`)).toEqual([]);
    });
  });

  describe('GET /api/admin/units', () => {
    it('lists units of every tenant in the Unit shape, by name, with the tenant_id filter', async () => {
      const k = tag();
      const a = await createTenant(t.db);
      const b = await createTenant(t.db);
      const b1 = await createUnit(t.db, b.id, { name: `Lst ${k} beta` });
      const a1 = await createUnit(t.db, a.id, { name: `lst ${k} Alpha` });
      const a2 = await createUnit(t.db, a.id, { name: `Lst ${k} gamma`, slug: null });
      const all = await list({ search: `lst ${k}` });
      expect(all.status).toBe(200);
      expect(Object.keys(all.body).sort()).toEqual(PAGE_KEYS);
      expect(all.body).toMatchObject({ current_page: 1, per_page: 50, total: 3, last_page: 1 });
      expect(ids(all.body)).toEqual([a1.id, b1.id, a2.id]);
      const item = all.body.data[2];
      expect(Object.keys(item).sort()).toEqual(UNIT_KEYS);
      expect(item).toMatchObject({ id: a2.id, tenant_id: a.id, name: a2.name, slug: null, is_active: true });
      expect(item.created_at).toMatch(ISO);
      const filtered = await list({ search: `lst ${k}`, tenant_id: a.id });
      expect(ids(filtered.body)).toEqual([a1.id, a2.id]);
      const unknown = await list({ tenant_id: randomUUID() });
      expect(unknown.body).toEqual({ data: [], current_page: 1, per_page: 50, total: 0, last_page: 1, total_exact: true });
    });

    it('searches name and slug case-insensitively and takes % and _ literally', async () => {
      const k = tag();
      const tenant = await createTenant(t.db);
      const percent = await createUnit(t.db, tenant.id, { name: `${k} 50% Sala`, slug: `s-${k}-1` });
      await createUnit(t.db, tenant.id, { name: `${k} 500 Sala`, slug: `s-${k}-2` });
      const underscore = await createUnit(t.db, tenant.id, { name: `${k} x_y`, slug: `s-${k}-3` });
      await createUnit(t.db, tenant.id, { name: `${k} xzy`, slug: `s-${k}-4` });
      const bySlug = await createUnit(t.db, tenant.id, { name: `Plain ${k}`, slug: `findme-${k}` });
      expect(ids((await list({ search: `${k} 50%` })).body)).toEqual([percent.id]);
      expect(ids((await list({ search: `${k} X_Y` })).body)).toEqual([underscore.id]);
      expect(ids((await list({ search: `FINDME-${k.toUpperCase()}` })).body)).toEqual([bySlug.id]);
      expect(ids((await list({ search: `${k} 50% SALA` })).body)).toEqual([percent.id]);
    });

    it('searches regardless of accents', async () => {
      const k = tag();
      const tenant = await createTenant(t.db);
      const accented = await createUnit(t.db, tenant.id, { name: `Unidade São João ${k}` });
      expect(ids((await list({ search: `unidade sao joao ${k}` })).body)).toEqual([accented.id]);
    });

    it('pages 50 at a time and answers an empty page past the end', async () => {
      const tenant = await createTenant(t.db);
      await t.db.query(
        `INSERT INTO units (tenant_id, name) SELECT $1, 'U ' || lpad(i::text, 3, '0') FROM generate_series(1, 52) AS i`,
        [tenant.id],
      );
      const [p1, p2, p9] = await Promise.all(
        ['1', '2', '9'].map((page) => list({ tenant_id: tenant.id, page, per_page: '100' })),
      );
      expect(p1.body).toMatchObject({ current_page: 1, per_page: 50, total: 52, last_page: 2 });
      expect(p1.body.data).toHaveLength(50);
      expect(p2.body.data.map((u: { name: string }) => u.name)).toEqual(['U 051', 'U 052']);
      expect(p9.body).toEqual({ data: [], current_page: 9, per_page: 50, total: 52, last_page: 2, total_exact: true });
    });

    it("a search's total is exact up to 1,000 matches: past that 1000, total_exact false, and no page past it", async () => {
      const k = tag();
      const tenant = await createTenant(t.db);
      await t.db.query(
        `INSERT INTO units (tenant_id, name) SELECT $1, 'Cap ${k} ' || lpad(i::text, 4, '0') FROM generate_series(1, 1001) AS i`,
        [tenant.id],
      );
      const names = (from: number, to: number) =>
        Array.from({ length: to - from + 1 }, (_, i) => `Cap ${k} ${String(from + i).padStart(4, '0')}`);
      const page = async (query: Record<string, string>) => {
        const res = await list(query);
        expect(res.status).toBe(200);
        return { ...res.body, data: res.body.data.map((u: { name: string }) => u.name) };
      };
      const capped = { per_page: 50, total: 1000, last_page: 20, total_exact: false };
      const search = `cap ${k}`;
      expect(await page({ search })).toEqual({ ...capped, current_page: 1, data: names(1, 50) });
      expect(await page({ search, page: '20' })).toEqual({ ...capped, current_page: 20, data: names(951, 1000) });
      expect(await page({ search, page: '21' })).toEqual({ ...capped, current_page: 21, data: [] });
      // Without a search the same 1,001 units are counted exactly.
      expect(await page({ tenant_id: tenant.id, page: '21' })).toEqual({
        per_page: 50,
        total: 1001,
        last_page: 21,
        total_exact: true,
        current_page: 21,
        data: names(1001, 1001),
      });

      await t.db.query(`DELETE FROM units WHERE tenant_id = $1 AND name = $2`, [tenant.id, names(1001, 1001)[0]]);
      const exact = { per_page: 50, total: 1000, last_page: 20, total_exact: true };
      expect(await page({ search, page: '20' })).toEqual({ ...exact, current_page: 20, data: names(951, 1000) });
      expect(await page({ search, page: '21' })).toEqual({ ...exact, current_page: 21, data: [] });
    });

    it.each(TENANT_LIST_QUERY_REFUSALS)('answers 422 for %j', async (query, field, message) => {
      const res = await list(query);
      expect(res.status).toBe(422);
      expect(res.body).toEqual(refusal(field, message));
    });
  });

  describe('POST /api/admin/units', () => {
    it('creates a unit (201, Unit shape) with a normalised slug; its state follows the tenant, not the body', async () => {
      const tenant = await createTenant(t.db);
      const k = tag();
      const res = await post({
        tenant_id: tenant.id,
        name: `  Unidade Jardins ${k} `,
        slug: `Unidade Jardíns ${k}`,
        is_active: false,
      });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(UNIT_KEYS);
      expect(res.body).toMatchObject({
        tenant_id: tenant.id,
        name: `Unidade Jardins ${k}`,
        slug: `unidade-jardins-${k}`,
        is_active: true,
      });
      expect(res.body.created_at).toMatch(ISO);
      expect(res.body.updated_at).toMatch(ISO);
    });

    it('leaves the slug null when absent or null, and two units may both have none', async () => {
      const tenant = await createTenant(t.db);
      const a = await post({ tenant_id: tenant.id, name: 'No Slug A' });
      const b = await post({ tenant_id: tenant.id, name: 'No Slug B', slug: null });
      expect([a.status, b.status]).toEqual([201, 201]);
      expect([a.body.slug, b.body.slug]).toEqual([null, null]);
    });

    it('creates the unit inactive when its tenant is inactive', async () => {
      const tenant = await createTenant(t.db, { is_active: false });
      const res = await post({ tenant_id: tenant.id, name: 'Dormant' });
      expect(res.status).toBe(201);
      expect(res.body.is_active).toBe(false);
    });

    it('allows the same unit name in two tenants', async () => {
      const [a, b] = [await createTenant(t.db), await createTenant(t.db)];
      expect((await post({ tenant_id: a.id, name: 'Centro' })).status).toBe(201);
      expect((await post({ tenant_id: b.id, name: 'CENTRO' })).status).toBe(201);
    });

    it('answers 422 for a name used in the tenant in another case', async () => {
      const tenant = await createTenant(t.db);
      await createUnit(t.db, tenant.id, { name: 'Zona Sul' });
      const res = await post({ tenant_id: tenant.id, name: 'zona SUL' });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message: UNIT_TAKEN, errors: { name: [UNIT_TAKEN] } });
    });

    it('answers 422 for a slug used by a unit of any tenant', async () => {
      const k = tag();
      const other = await createTenant(t.db);
      await createUnit(t.db, other.id, { slug: `shared-${k}` });
      const tenant = await createTenant(t.db);
      const res = await post({ tenant_id: tenant.id, name: 'Slugged', slug: `Shared ${k}` });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: 'The slug has already been taken.',
        errors: { slug: ['The slug has already been taken.'] },
      });
    });

    it('answers 404 for an unknown tenant', async () => {
      const res = await post({ tenant_id: randomUUID(), name: 'Orphan' });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Tenant not found.' });
    });

    it.each([
      [{ name: 'x' }, 'tenant_id', 'The tenant id field is required.'],
      [{ tenant_id: 'abc', name: 'x' }, 'tenant_id', 'The tenant id field must be a valid UUID.'],
      [{ tenant_id: null, name: 'x' }, 'tenant_id', 'The tenant id field is required.'],
      [{ tenant_id: 'TENANT' }, 'name', 'The name field is required.'],
      [{ tenant_id: 'TENANT', name: ['a'] }, 'name', 'The name field must be a string.'],
      [{ tenant_id: 'TENANT', name: 'n'.repeat(256) }, 'name', 'The name field must not be greater than 255 characters.'],
      [
        { tenant_id: 'TENANT', name: 'x', slug: 's'.repeat(256) },
        'slug',
        'The slug field must not be greater than 255 characters.',
      ],
      [{ tenant_id: 'TENANT', name: 'x', slug: false }, 'slug', 'The slug field must be a string.'],
      [{ tenant_id: 'TENANT', name: 'x', slug: '---' }, 'slug', 'The slug must contain at least one letter or digit.'],
    ])('answers 422 for %j with errors.%s', async (body, field, message) => {
      const payload = JSON.parse(JSON.stringify(body).replace('"TENANT"', JSON.stringify(clinic.tenant.id)));
      const res = await post(payload);
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ [field]: [message] });
    });

    it('lets exactly one of 20 concurrent creations of one unit name (in different cases) win', async () => {
      const tenant = await createTenant(t.db);
      const name = `Race Unit ${tag()}`;
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          post({ tenant_id: tenant.id, name: i % 2 ? name.toUpperCase() : name.toLowerCase() }),
        ),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
      const refused = responses.filter((r) => r.status !== 201);
      expect(refused).toHaveLength(19);
      for (const r of refused) expect(r).toMatchObject({ status: 422, body: { errors: { name: [UNIT_TAKEN] } } });
      const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM units WHERE tenant_id = $1`, [tenant.id]);
      expect(count).toBe(1);
    });

    it('lets exactly one of 20 concurrent creations with one slug win', async () => {
      const tenant = await createTenant(t.db);
      const slug = `race-slug-${tag()}`;
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => post({ tenant_id: tenant.id, name: `Slug racer ${i}`, slug })),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 201)) {
        expect(r).toMatchObject({ status: 422, body: { errors: { slug: ['The slug has already been taken.'] } } });
      }
    });
  });
});
