import { randomUUID } from 'crypto';
import { createTestApp, TestApp } from '../support/app';
import {
  createClinic,
  createSuperAdminUser,
  createTenant,
  createUnit,
  createUser,
  login,
  TEST_PASSWORD,
} from '../support/factories';
import { ISO, PAGE_KEYS, tag } from '../support/expectations';

const TENANT_KEYS = ['created_at', 'id', 'is_active', 'logo', 'name', 'slug', 'updated_at'];

describe('Admin: tenants (/api/admin/tenants)', () => {
  let t: TestApp;
  let superToken: string;
  let clinic: Awaited<ReturnType<typeof createClinic>>;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    clinic = await createClinic(t.db, t.http);
  });
  afterAll(() => t.close());

  const post = (body: unknown, token = superToken) => t.http.post('/api/admin/tenants', { token, body });
  const setStatus = (id: string, body: unknown, token = superToken) =>
    t.http.patch(`/api/admin/tenants/${id}/status`, { token, body });

  describe('access', () => {
    it.each([
      ['GET', '/api/admin/tenants'],
      ['POST', '/api/admin/tenants'],
      ['PATCH', `/api/admin/tenants/${randomUUID()}/status`],
    ])('%s %s answers 401 without a token', async (method, url) => {
      const res = await t.http.request(method as 'GET', url, { body: method === 'GET' ? undefined : { name: 'x' } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it.each([
      ['GET', '/api/admin/tenants'],
      ['POST', '/api/admin/tenants'],
      ['PATCH', `/api/admin/tenants/${randomUUID()}/status`],
    ])('%s %s answers 403 to a regular user and to a tenant admin', async (method, url) => {
      for (const token of [clinic.token1, clinic.adminToken]) {
        const res = await t.http.request(method as 'GET', url, {
          token,
          body: method === 'GET' ? undefined : { name: `Forbidden ${tag()}`, is_active: false },
        });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'Forbidden' });
      }
      // Nothing was written by the refused requests.
      expect(await t.db.query(`SELECT 1 FROM tenants WHERE name LIKE 'Forbidden %'`)).toEqual([]);
      const [{ is_active }] = await t.db.query(`SELECT is_active FROM tenants WHERE id = $1`, [clinic.tenant.id]);
      expect(is_active).toBe(true);
    });
  });

  describe('GET /api/admin/tenants', () => {
    it('returns a page of tenants in the Tenant shape, ordered by name', async () => {
      const k = tag();
      const b = await createTenant(t.db, { name: `Order ${k} beta`, slug: `order-${k}-b` });
      const a = await createTenant(t.db, { name: `order ${k} Alpha`, slug: `order-${k}-a` });
      const res = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: `order ${k}` } });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
      expect(res.body).toMatchObject({ current_page: 1, per_page: 50, total: 2, last_page: 1 });
      expect(res.body.data.map((x: { id: string }) => x.id)).toEqual([a.id, b.id]);
      const item = res.body.data[0];
      expect(Object.keys(item).sort()).toEqual(TENANT_KEYS);
      expect(item).toMatchObject({ id: a.id, name: a.name, slug: a.slug, is_active: true, logo: null });
      expect(item.created_at).toMatch(ISO);
      expect(item.updated_at).toMatch(ISO);
    });

    it('pages 50 at a time, ignores per_page, and answers an empty page past the end', async () => {
      const k = tag();
      await t.db.query(
        `INSERT INTO tenants (name, slug) SELECT 'Paged ${k} ' || lpad(i::text, 3, '0'), 'paged-${k}-' || i
           FROM generate_series(1, 51) AS i`,
      );
      const query = (page?: string) => ({ search: `paged ${k}`, ...(page ? { page } : {}), per_page: '5' });
      const [first, second, past] = await Promise.all([
        t.http.get('/api/admin/tenants', { token: superToken, query: query() }),
        t.http.get('/api/admin/tenants', { token: superToken, query: query('2') }),
        t.http.get('/api/admin/tenants', { token: superToken, query: query('3') }),
      ]);
      expect(first.body).toMatchObject({ current_page: 1, per_page: 50, total: 51, last_page: 2 });
      expect(first.body.data).toHaveLength(50);
      expect(first.body.data[0].name).toBe(`Paged ${k} 001`);
      expect(second.body).toMatchObject({ current_page: 2, per_page: 50, total: 51, last_page: 2 });
      expect(second.body.data.map((x: { name: string }) => x.name)).toEqual([`Paged ${k} 051`]);
      expect(past.status).toBe(200);
      expect(past.body).toEqual({ data: [], current_page: 3, per_page: 50, total: 51, last_page: 2, total_exact: true });
    });

    it.each([
      ['100000001', 100000001],
      ['99999999999999999999', 1e20],
      ['9'.repeat(400), Number.MAX_VALUE],
    ])(
      'answers page=%s (an integer past the end, however large) with empty data and the right total',
      async (page, current) => {
        const k = tag();
        await createTenant(t.db, { name: `Far ${k}`, slug: `far-${k}` });
        const res = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: `far ${k}`, page } });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ data: [], current_page: current, per_page: 50, total: 1, last_page: 1, total_exact: true });
      },
    );

    it.each([['0'], ['-1'], ['abc'], ['1.5']])('answers 422 for page=%s', async (page) => {
      const res = await t.http.get('/api/admin/tenants', { token: superToken, query: { page } });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body.errors)).toEqual(['page']);
      expect(typeof res.body.message).toBe('string');
    });

    it.each([
      ['0', 'The page field must be at least 1.'],
      ['-1', 'The page field must be at least 1.'],
      ['abc', 'The page field must be an integer.'],
      ['1.5', 'The page field must be an integer.'],
      ['', 'The page field must be an integer.'],
      ['-99999999999999999999', 'The page field must be at least 1.'],
      ['1e3', 'The page field must be an integer.'],
    ])('answers 422 for page=%j with the one message that applies', async (page, message) => {
      const res = await t.http.get('/api/admin/tenants', { token: superToken, query: { page } });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message, errors: { page: [message] } });
    });

    it('answers 422 for a search longer than 255 characters', async () => {
      const res = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: 'x'.repeat(256) } });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ search: ['The search field must not be greater than 255 characters.'] });
    });

    it('answers 422 with one message for a search given twice', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/admin/tenants?search=a&search=b',
        headers: { authorization: `Bearer ${superToken}` },
      });
      expect(res.statusCode).toBe(422);
      expect(JSON.parse(res.body)).toEqual({
        message: 'The search field must be a string.',
        errors: { search: ['The search field must be a string.'] },
      });
    });

    it('searches name and slug case-insensitively', async () => {
      const k = tag();
      const byName = await createTenant(t.db, { name: `Ünique Name ${k}`, slug: `plain-${k}-1` });
      const bySlug = await createTenant(t.db, { name: `Other ${k}`, slug: `special-slug-${k}` });
      const names = await t.http.get('/api/admin/tenants', {
        token: superToken,
        query: { search: `üNIQUE name ${k.toUpperCase()}` },
      });
      expect(names.body.data.map((x: { id: string }) => x.id)).toEqual([byName.id]);
      const slugs = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: `SPECIAL-SLUG-${k}` } });
      expect(slugs.body.data.map((x: { id: string }) => x.id)).toEqual([bySlug.id]);
    });

    it('searches regardless of accents, both ways', async () => {
      const k = tag();
      const accented = await createTenant(t.db, { name: `Clínica São João ${k}`, slug: `acc-${k}` });
      const plain = await createTenant(t.db, { name: `Clinica Sao Joao Plain ${k}`, slug: `plain-acc-${k}` });
      const found = async (search: string) =>
        (await t.http.get('/api/admin/tenants', { token: superToken, query: { search } })).body.data.map(
          (x: { id: string }) => x.id,
        );
      expect(await found(`clinica sao joao ${k}`)).toEqual([accented.id]);
      expect(await found(`CLÍNICA SÃO JOÃO PLAIN ${k}`)).toEqual([plain.id]);
    });

    it('takes %, _ and \\ in the search literally', async () => {
      const k = tag();
      const percent = await createTenant(t.db, { name: `${k} 100% Care`, slug: `p-${k}-1` });
      await createTenant(t.db, { name: `${k} 1000 Care`, slug: `p-${k}-2` });
      const underscore = await createTenant(t.db, { name: `${k} a_b`, slug: `p-${k}-3` });
      await createTenant(t.db, { name: `${k} axb`, slug: `p-${k}-4` });
      const backslash = await createTenant(t.db, { name: `${k} c\\d`, slug: `p-${k}-5` });
      await createTenant(t.db, { name: `${k} cd`, slug: `p-${k}-6` });
      const b = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: `${k} c\\d` } });
      expect(b.body.data.map((x: { id: string }) => x.id)).toEqual([backslash.id]);
      const p = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: `${k} 100%` } });
      expect(p.body.data.map((x: { id: string }) => x.id)).toEqual([percent.id]);
      const u = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: `${k} a_b` } });
      expect(u.body.data.map((x: { id: string }) => x.id)).toEqual([underscore.id]);
      const none = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: `${k}%Care` } });
      expect(none.body.total).toBe(0);
    });
  });

  describe('POST /api/admin/tenants', () => {
    it('creates an active tenant with a slug derived from the name (transliterated) and answers 201', async () => {
      const k = tag();
      const res = await post({ name: `  Clínica São Paulo ${k}  ` });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(TENANT_KEYS);
      expect(res.body).toMatchObject({
        name: `Clínica São Paulo ${k}`,
        slug: `clinica-sao-paulo-${k}`,
        is_active: true,
        logo: null,
      });
      expect(res.body.created_at).toMatch(ISO);
      const [row] = await t.db.query(`SELECT name, slug, is_active FROM tenants WHERE id = $1`, [res.body.id]);
      expect(row).toEqual({ name: `Clínica São Paulo ${k}`, slug: `clinica-sao-paulo-${k}`, is_active: true });
    });

    it('normalises a given slug, honours is_active false and ignores unknown fields', async () => {
      const k = tag();
      const res = await post({
        name: `Given ${k}`,
        slug: `  Minha CLÍNICA__${k}!! `,
        is_active: false,
        logo: 'x',
        id: randomUUID(),
      });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ name: `Given ${k}`, slug: `minha-clinica-${k}`, is_active: false, logo: null });
    });

    it('derives the slug when it is null', async () => {
      const k = tag();
      const res = await post({ name: `Null Slug ${k}`, slug: null });
      expect(res.status).toBe(201);
      expect(res.body.slug).toBe(`null-slug-${k}`);
    });

    it.each([
      [{}, 'name', 'The name field is required.'],
      [{ name: '' }, 'name', 'The name field is required.'],
      [{ name: '   ' }, 'name', 'The name field is required.'],
      [{ name: 42 }, 'name', 'The name field must be a string.'],
      [{ name: 'x'.repeat(256) }, 'name', 'The name field must not be greater than 255 characters.'],
      [{ name: 'Slug Long', slug: 'x'.repeat(256) }, 'slug', 'The slug field must not be greater than 255 characters.'],
      [{ name: 'Slug Type', slug: 12 }, 'slug', 'The slug field must be a string.'],
      [{ name: 'Slug Empty', slug: '!!!' }, 'slug', 'The slug must contain at least one letter or digit.'],
      [{ name: '日本語' }, 'slug', 'A slug cannot be derived from this name; please provide a slug.'],
      [{ name: 'Flag', is_active: 'yes' }, 'is_active', 'The is active field must be true or false.'],
      [{ name: 'Flag', is_active: null }, 'is_active', 'The is active field must be true or false.'],
    ])('answers 422 for %j with errors.%s', async (body, field, message) => {
      const res = await post(body);
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ [field]: [message] });
      expect(res.body.message).toBe(message);
    });

    it('accepts a name of exactly 255 characters', async () => {
      const name = `${tag()}${'n'.repeat(247)}`;
      const res = await post({ name });
      expect(res.status).toBe(201);
      expect(res.body.name).toBe(name);
      expect(res.body.slug).toBe(name);
    });

    it('answers 422 when the name exists in another case', async () => {
      const k = tag();
      await createTenant(t.db, { name: `Dup Clinic ${k}`, slug: `dup-${k}-x` });
      const res = await post({ name: `DUP clinic ${k}`, slug: `dup-${k}-y` });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: 'A clinic with that name already exists.',
        errors: { name: ['A clinic with that name already exists.'] },
      });
    });

    it('answers 422 when the normalised slug is taken', async () => {
      const k = tag();
      await createTenant(t.db, { name: `Slug Owner ${k}`, slug: `taken-${k}` });
      const res = await post({ name: `Slug Thief ${k}`, slug: `TAKEN ${k}` });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: 'The slug has already been taken.',
        errors: { slug: ['The slug has already been taken.'] },
      });
      const derived = await post({ name: `Taken ${k}` });
      expect(derived.status).toBe(422);
      expect(derived.body.errors).toEqual({ slug: ['The slug has already been taken.'] });
    });

    it('answers 422 (never 500) to a JSON body that is not an object', async () => {
      for (const raw of ['[]', '"text"', 'null', '42']) {
        const res = await t.http.post('/api/admin/tenants', {
          token: superToken,
          raw,
          headers: { 'content-type': 'application/json' },
        });
        // Refused as a whole before field validation (security-hostile-input.e2e-spec.ts).
        expect({ raw, status: res.status, body: res.body }).toEqual({
          raw,
          status: 422,
          body: {
            message: 'The request body must be a JSON object.',
            errors: { body: ['The request body must be a JSON object.'] },
          },
        });
      }
    });

    it('answers 400 for malformed JSON', async () => {
      const res = await t.http.post('/api/admin/tenants', {
        token: superToken,
        raw: '{"name": ',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(typeof res.body.message).toBe('string');
    });

    it('lets exactly one of 20 concurrent creations of one name (in different cases) win, the rest 422', async () => {
      const k = tag();
      const variants = Array.from({ length: 20 }, (_, i) =>
        [...`Race Clinic ${k}`].map((c, j) => ((i >> (j % 5)) & 1 ? c.toUpperCase() : c.toLowerCase())).join(''),
      );
      const responses = await Promise.all(variants.map((name) => post({ name })));
      const statuses = responses.map((r) => r.status);
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 422)).toHaveLength(19);
      for (const r of responses.filter((x) => x.status === 422)) {
        expect(r.body.errors.name).toEqual(['A clinic with that name already exists.']);
      }
      const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM tenants WHERE lower(name) = lower($1)`, [
        `race clinic ${k}`,
      ]);
      expect(count).toBe(1);
    });
  });

  describe('PATCH /api/admin/tenants/{id}/status', () => {
    it('deactivates the tenant and all its units, then re-activates them, answering the Tenant', async () => {
      const tenant = await createTenant(t.db);
      const units = [await createUnit(t.db, tenant.id), await createUnit(t.db, tenant.id)];
      const other = await createTenant(t.db);
      const otherUnit = await createUnit(t.db, other.id);
      const off = await setStatus(tenant.id, { is_active: false });
      expect(off.status).toBe(200);
      expect(Object.keys(off.body).sort()).toEqual(TENANT_KEYS);
      expect(off.body).toMatchObject({ id: tenant.id, name: tenant.name, slug: tenant.slug, is_active: false, logo: null });
      const unitStates = async (id: string) =>
        (await t.db.query(`SELECT is_active FROM units WHERE tenant_id = $1`, [id])).map(
          (r: { is_active: boolean }) => r.is_active,
        );
      expect(await unitStates(tenant.id)).toEqual([false, false]);
      expect(await unitStates(other.id)).toEqual([true]);
      expect(units).toHaveLength(2);
      expect(otherUnit.tenant_id).toBe(other.id);
      const on = await setStatus(tenant.id, { is_active: true });
      expect(on.status).toBe(200);
      expect(on.body.is_active).toBe(true);
      expect(await unitStates(tenant.id)).toEqual([true, true]);
    });

    it('shuts the users out at once (login 403, tokens 401 everywhere, refresh too) and restores exactly the previous state', async () => {
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      const active = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
      const admin = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, is_tenant_admin: true });
      const dormant = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, is_active: false });
      const [token, adminToken] = await Promise.all([login(t.http, active.email), login(t.http, admin.email)]);
      expect((await t.http.get('/api/me', { token })).status).toBe(200);

      expect((await setStatus(tenant.id, { is_active: false })).status).toBe(200);

      for (const [url, tok] of [
        ['/api/me', token],
        ['/api/tenant/settings', token],
        ['/api/tenant/units', adminToken],
      ] as const) {
        const res = await t.http.get(url, { token: tok });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ message: 'Unauthenticated.' });
      }
      const refresh = await t.http.post('/api/refresh', { token });
      expect(refresh.status).toBe(401);
      for (const user of [active, admin]) {
        const res = await t.http.post('/api/login', { body: { email: user.email, password: TEST_PASSWORD } });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'Conta desativada.' });
      }
      const flags = async () =>
        (await t.db.query(`SELECT id, is_active, is_tenant_admin FROM users WHERE tenant_id = $1 ORDER BY email`, [tenant.id]))
          .map((r: { id: string; is_active: boolean; is_tenant_admin: boolean }) => r)
          .sort((a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id));
      const before = [
        { id: active.id, is_active: true, is_tenant_admin: false },
        { id: admin.id, is_active: true, is_tenant_admin: true },
        { id: dormant.id, is_active: false, is_tenant_admin: false },
      ].sort((a, b) => a.id.localeCompare(b.id));
      expect(await flags()).toEqual(before);

      expect((await setStatus(tenant.id, { is_active: true })).status).toBe(200);

      expect(await flags()).toEqual(before);
      // The token issued before the deactivation works again: the account itself never changed.
      expect((await t.http.get('/api/me', { token: adminToken })).status).toBe(200);
      expect((await t.http.post('/api/login', { body: { email: active.email, password: TEST_PASSWORD } })).status).toBe(200);
      const dormantLogin = await t.http.post('/api/login', { body: { email: dormant.email, password: TEST_PASSWORD } });
      expect(dormantLogin.status).toBe(403);
    });

    it.each([
      [{}, 'The is active field is required.'],
      [{ is_active: 'false' }, 'The is active field must be true or false.'],
      [{ is_active: null }, 'The is active field is required.'],
      [{ is_active: 1 }, 'The is active field must be true or false.'],
    ])('answers 422 for %j', async (body, message) => {
      const res = await setStatus(clinic.tenant.id, body);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message, errors: { is_active: [message] } });
    });

    it('answers 404 for an unknown tenant and for a malformed id', async () => {
      for (const id of [randomUUID(), 'not-a-uuid']) {
        const res = await setStatus(id, { is_active: false });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Tenant not found.' });
      }
    });

    it('refuses to activate the quarantine tenant but allows keeping it inactive', async () => {
      const [quarantine] = await t.db.query(`SELECT id FROM tenants WHERE slug = 'quarantine'`);
      const res = await setStatus(quarantine.id, { is_active: true });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ is_active: ['The quarantine clinic cannot be activated.'] });
      const [row] = await t.db.query(`SELECT is_active FROM tenants WHERE id = $1`, [quarantine.id]);
      expect(row.is_active).toBe(false);
      expect((await setStatus(quarantine.id, { is_active: false })).status).toBe(200);
    });
  });
});
