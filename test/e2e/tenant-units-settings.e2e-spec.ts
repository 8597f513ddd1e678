import sharp from 'sharp';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser, createTenant, createUnit, createUser, login } from '../support/factories';
import { ids, PAGE_KEYS, tag, TENANT_LIST_QUERY_REFUSALS, refusal } from '../support/expectations';

const UNIT_KEYS = ['created_at', 'id', 'is_active', 'name', 'slug', 'tenant_id', 'updated_at'];
const NOT_DATA_URL = 'The logo must be a data URL starting with data:image/jpeg;base64, or data:image/png;base64,.';
describe('Tenant: units and settings (/api/tenant/units, /api/tenant/settings)', () => {
  let t: TestApp;
  let superToken: string;
  let PNG: string;
  let JPEG: string;
  let pngBase64: string;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    const image = sharp({ create: { width: 16, height: 9, channels: 3, background: '#0a6' } });
    pngBase64 = (await image.clone().png().toBuffer()).toString('base64');
    PNG = `data:image/png;base64,${pngBase64}`;
    JPEG = `data:image/jpeg;base64,${(await image.clone().jpeg().toBuffer()).toString('base64')}`;
  });
  afterAll(() => t.close());

  describe('GET /api/tenant/units', () => {
    it('lists the units of the caller’s clinic by name in the Unit shape, for regular users and admins', async () => {
      const c = await createClinic(t.db, t.http);
      const other = await createClinic(t.db, t.http);
      const extra = await createUnit(t.db, c.tenant.id, { name: 'aaa first', slug: null });
      const expected = [extra, c.unit1, c.unit2]
        .sort((a, b) => a.name.toLowerCase().localeCompare(b.name.toLowerCase()) || a.id.localeCompare(b.id))
        .map((u) => u.id);
      for (const token of [c.token1, c.token2, c.adminToken]) {
        const res = await t.http.get('/api/tenant/units', { token });
        expect(res.status).toBe(200);
        expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
        expect(res.body).toMatchObject({ current_page: 1, per_page: 50, total: 3, last_page: 1 });
        expect(ids(res.body)).toEqual(expected);
        expect(ids(res.body)).not.toContain(other.unit1.id);
      }
      const first = (await t.http.get('/api/tenant/units', { token: c.token1 })).body.data[0];
      expect(Object.keys(first).sort()).toEqual(UNIT_KEYS);
      expect(first).toMatchObject({ id: extra.id, tenant_id: c.tenant.id, name: 'aaa first', slug: null, is_active: true });
    });

    it('ignores a tenant_id of another clinic for everyone but a super admin, who may filter with it', async () => {
      const c = await createClinic(t.db, t.http);
      const other = await createClinic(t.db, t.http);
      const crossed = await t.http.get('/api/tenant/units', { token: c.adminToken, query: { tenant_id: other.tenant.id } });
      expect(crossed.status).toBe(200);
      expect(crossed.body.data).toEqual([]);
      const own = await t.http.get('/api/tenant/units', { token: c.token1, query: { tenant_id: c.tenant.id } });
      expect(own.body.total).toBe(2);
      const root = await t.http.get('/api/tenant/units', { token: superToken, query: { tenant_id: other.tenant.id } });
      expect(ids(root.body).sort()).toEqual([other.unit1.id, other.unit2.id].sort());
      const everything = await t.http.get('/api/tenant/units', { token: superToken });
      expect(everything.body.total).toBeGreaterThanOrEqual(5);
    });

    it('searches name and slug case-insensitively and takes % and _ literally', async () => {
      const c = await createClinic(t.db, t.http);
      const k = tag();
      const percent = await createUnit(t.db, c.tenant.id, { name: 'Sala 10% Norte' });
      await createUnit(t.db, c.tenant.id, { name: 'Sala 100 Norte' });
      const underscore = await createUnit(t.db, c.tenant.id, { name: 'Ala_B' });
      await createUnit(t.db, c.tenant.id, { name: 'AlaXB' });
      const bySlug = await createUnit(t.db, c.tenant.id, { name: 'Plain', slug: `zona-${k}` });
      const get = (search: string) => t.http.get('/api/tenant/units', { token: c.token1, query: { search } });
      expect(ids((await get('SALA 10%')).body)).toEqual([percent.id]);
      expect(ids((await get('ala_b')).body)).toEqual([underscore.id]);
      expect(ids((await get(`ZONA-${k.toUpperCase()}`)).body)).toEqual([bySlug.id]);
    });

    it('searches regardless of accents', async () => {
      const c = await createClinic(t.db, t.http);
      const accented = await createUnit(t.db, c.tenant.id, { name: 'Unidade São João' });
      const get = (search: string) => t.http.get('/api/tenant/units', { token: c.token1, query: { search } });
      expect(ids((await get('unidade sao joao')).body)).toEqual([accented.id]);
    });

    it('pages 50 at a time and answers an empty page past the end', async () => {
      const c = await createClinic(t.db, t.http);
      await t.db.query(
        `INSERT INTO units (tenant_id, name) SELECT $1, 'Z ' || lpad(i::text, 3, '0') FROM generate_series(1, 49) AS i`,
        [c.tenant.id],
      );
      const get = (page: string) => t.http.get('/api/tenant/units', { token: c.adminToken, query: { page } });
      const [p1, p2, p3] = await Promise.all([get('1'), get('2'), get('3')]);
      expect(p1.body).toMatchObject({ current_page: 1, per_page: 50, total: 51, last_page: 2 });
      expect(p1.body.data).toHaveLength(50);
      expect(p2.body.data.map((u: { name: string }) => u.name)).toEqual(['Z 049']);
      expect(p3.body).toEqual({ data: [], current_page: 3, per_page: 50, total: 51, last_page: 2, total_exact: true });
    });

    it.each(TENANT_LIST_QUERY_REFUSALS)('answers 422 for %j', async (query, field, message) => {
      const c = await createClinic(t.db, t.http);
      const res = await t.http.get('/api/tenant/units', { token: c.token1, query });
      expect(res.status).toBe(422);
      expect(res.body).toEqual(refusal(field, message));
    });

    it('answers 401 without a token', async () => {
      const res = await t.http.get('/api/tenant/units');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });
  });

  describe('GET /api/tenant/settings', () => {
    it('returns id, name and logo of the caller’s clinic to every member', async () => {
      const c = await createClinic(t.db, t.http);
      for (const token of [c.token1, c.adminToken]) {
        const res = await t.http.get('/api/tenant/settings', { token });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ id: c.tenant.id, name: c.tenant.name, logo: null });
      }
      await t.db.query(`UPDATE tenants SET logo = $2 WHERE id = $1`, [c.tenant.id, PNG]);
      const withLogo = await t.http.get('/api/tenant/settings', { token: c.token2 });
      expect(withLogo.body).toEqual({ id: c.tenant.id, name: c.tenant.name, logo: PNG });
    });

    it('answers 404 to a caller without a clinic, and a super admin linked to one gets it', async () => {
      const res = await t.http.get('/api/tenant/settings', { token: superToken });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Tenant not found.' });
      const tenant = await createTenant(t.db);
      const linked = await createUser(t.db, { is_super_admin: true, tenant_id: tenant.id });
      const own = await t.http.get('/api/tenant/settings', { token: await login(t.http, linked.email) });
      expect(own.status).toBe(200);
      expect(own.body).toEqual({ id: tenant.id, name: tenant.name, logo: null });
    });

    it('answers 401 without a token', async () => {
      const res = await t.http.get('/api/tenant/settings');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });
  });

  describe('PATCH /api/tenant/settings', () => {
    it('sets a PNG or JPEG logo and removes it with null, on the caller’s clinic only', async () => {
      const c = await createClinic(t.db, t.http);
      const other = await createClinic(t.db, t.http);
      await t.db.query(`UPDATE tenants SET logo = $2 WHERE id = $1`, [other.tenant.id, PNG]);
      const png = await t.http.patch('/api/tenant/settings', {
        token: c.adminToken,
        body: { logo: PNG, name: 'Renamed', id: other.tenant.id },
      });
      expect(png.status).toBe(200);
      expect(png.body).toEqual({ id: c.tenant.id, name: c.tenant.name, logo: PNG });
      const jpeg = await t.http.patch('/api/tenant/settings', { token: c.adminToken, body: { logo: JPEG } });
      expect(jpeg.body).toEqual({ id: c.tenant.id, name: c.tenant.name, logo: JPEG });
      expect((await t.http.get('/api/tenant/settings', { token: c.token1 })).body.logo).toBe(JPEG);
      const removed = await t.http.patch('/api/tenant/settings', { token: c.adminToken, body: { logo: null } });
      expect(removed.status).toBe(200);
      expect(removed.body).toEqual({ id: c.tenant.id, name: c.tenant.name, logo: null });
      const [row] = await t.db.query(`SELECT logo FROM tenants WHERE id = $1`, [other.tenant.id]);
      expect(row.logo).toBe(PNG);
    });

    it('answers 403 to a regular user and 401 without a token, and changes nothing', async () => {
      const c = await createClinic(t.db, t.http);
      const forbidden = await t.http.patch('/api/tenant/settings', { token: c.token1, body: { logo: PNG } });
      expect(forbidden.status).toBe(403);
      expect(forbidden.body).toEqual({ error: 'Forbidden' });
      const anonymous = await t.http.patch('/api/tenant/settings', { body: { logo: PNG } });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
      const [row] = await t.db.query(`SELECT logo FROM tenants WHERE id = $1`, [c.tenant.id]);
      expect(row.logo).toBeNull();
    });

    it('answers 404 to a super admin without a clinic', async () => {
      const res = await t.http.patch('/api/tenant/settings', { token: superToken, body: { logo: PNG } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Tenant not found.' });
    });

    it.each([
      ['absent', undefined, 'The logo field is required.'],
      ['a plain string', 'logo.png', NOT_DATA_URL],
      ['a GIF data URL', 'data:image/gif;base64,R0lGODlhAQABAAAAACw=', NOT_DATA_URL],
      ['an uppercase prefix', 'DATA:IMAGE/PNG;BASE64,', NOT_DATA_URL],
      ['a number', 12, NOT_DATA_URL],
      ['broken base64', 'data:image/png;base64,iVBORw0KGgo', 'The logo data URL does not contain valid base64.'],
      [
        'a PNG declared as JPEG',
        'data:image/jpeg;base64,PNGB64',
        'The logo is not a valid image of the declared type (JPEG or PNG).',
      ],
      [
        'a truncated PNG',
        'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA',
        'The logo is not a valid image of the declared type (JPEG or PNG).',
      ],
      ['over 2 MiB decoded', 'BIG', 'The logo must not be larger than 2 MiB.'],
    ])('answers 422 for %s', async (_label, value, message) => {
      const c = await createClinic(t.db, t.http);
      const concrete =
        value === 'BIG'
          ? `data:image/png;base64,${Buffer.alloc(2 * 1024 * 1024 + 3).toString('base64')}`
          : typeof value === 'string'
            ? value.replace('PNGB64', pngBase64)
            : value;
      const res = await t.http.patch('/api/tenant/settings', {
        token: c.adminToken,
        body: value === undefined ? {} : { logo: concrete },
      });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message, errors: { logo: [message] } });
    });
  });

  describe('Swagger', () => {
    const endpoints: Array<[string, string, string | null, boolean]> = [
      ['/api/admin/tenants', 'get', '200', false],
      ['/api/admin/tenants', 'post', '201', true],
      ['/api/admin/tenants/{id}/status', 'patch', '200', true],
      ['/api/admin/units', 'get', '200', false],
      ['/api/admin/units', 'post', '201', true],
      ['/api/admin/modalities', 'get', '200', false],
      ['/api/admin/modalities', 'post', '201', true],
      ['/api/admin/users', 'get', '200', false],
      ['/api/admin/users', 'post', '201', true],
      ['/api/admin/users/{id}', 'patch', '200', true],
      ['/api/tenant/units', 'get', '200', false],
      ['/api/tenant/templates', 'get', '200', false],
      ['/api/tenant/templates', 'post', '201', true],
      ['/api/tenant/templates/{id}', 'get', '200', false],
      ['/api/tenant/templates/{id}', 'patch', '200', true],
      ['/api/tenant/templates/{id}', 'delete', null, false],
      ['/api/tenant/my-template', 'get', '200', false],
      ['/api/tenant/settings', 'get', '200', false],
      ['/api/tenant/settings', 'patch', '200', true],
    ];

    it('documents every administration endpoint with its request and response schemas', async () => {
      const res = await t.http.get('/api/docs-json');
      expect(res.status).toBe(200);
      const doc = res.body;
      type Schema = { $ref?: string; properties?: Record<string, unknown> };
      const schemas = doc.components.schemas as Record<string, Schema>;
      const resolve = (schema: Schema): Schema => (schema.$ref ? schemas[schema.$ref.split('/').pop()!] : schema);
      for (const [path, method, success, hasBody] of endpoints) {
        const operation = doc.paths[path]?.[method];
        expect({ path, method, documented: Boolean(operation) }).toEqual({ path, method, documented: true });
        expect(operation.security.length).toBeGreaterThan(0);
        if (success) {
          const schema = operation.responses[success]?.content?.['application/json']?.schema;
          expect({ path, method, schema: Boolean(schema) }).toEqual({ path, method, schema: true });
        } else {
          expect(operation.responses['204']).toBeDefined();
        }
        if (hasBody) {
          const body = resolve(operation.requestBody.content['application/json'].schema);
          expect(Object.keys(body.properties ?? {}).length).toBeGreaterThan(0);
        }
      }
      expect(Object.keys(schemas.TenantDto.properties!).sort()).toEqual([
        'created_at',
        'id',
        'is_active',
        'logo',
        'name',
        'slug',
        'updated_at',
      ]);
      expect(schemas.AdminUserDto.properties).toHaveProperty('has_signature');
      expect(schemas.AdminUserDto.properties).not.toHaveProperty('signature');
      expect(schemas.AdminUserDto.properties).not.toHaveProperty('password');
      expect(schemas.CreateUserDto.properties).not.toHaveProperty('is_super_admin');
      expect(schemas.UpdateUserDto.properties).not.toHaveProperty('is_super_admin');
      expect(schemas.TemplatePageDto.properties).toHaveProperty('data');
      const adminPaths = Object.keys(doc.paths).filter((p) => p.startsWith('/api/admin/'));
      expect(adminPaths.sort()).toEqual(
        [
          '/api/admin/modalities',
          '/api/admin/tenants',
          '/api/admin/tenants/{id}/status',
          '/api/admin/units',
          '/api/admin/users',
          '/api/admin/users/{id}',
        ].sort(),
      );
    });
  });
});
