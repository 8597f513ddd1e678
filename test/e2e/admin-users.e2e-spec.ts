import { randomUUID } from 'crypto';
import sharp from 'sharp';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser, createTenant, createUnit, createUser, login } from '../support/factories';
import { ids, ISO, PAGE_KEYS, tag, LIST_QUERY_REFUSALS, refusal } from '../support/expectations';

const USER_KEYS = [
  'created_at',
  'crm',
  'email',
  'has_signature',
  'id',
  'is_active',
  'is_super_admin',
  'is_tenant_admin',
  'name',
  'tenant',
  'tenant_id',
  'unit',
  'unit_id',
  'updated_at',
];
const EMAIL_TAKEN = 'The email has already been taken.';
const UNIT_OUTSIDE = 'The selected unit does not belong to the selected clinic.';
const CRM_MESSAGE = 'The crm field must have the format NNNN/SS to NNNNNN/SS (4 to 6 digits, "/", 2 uppercase letters).';
const NOT_DATA_URL = 'The signature must be a data URL starting with data:image/jpeg;base64, or data:image/png;base64,.';
const NOT_IMAGE = 'The signature is not a valid image of the declared type (JPEG or PNG).';
describe('Admin: users (/api/admin/users)', () => {
  let t: TestApp;
  let superUser: { id: string };
  let superToken: string;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let PNG: string;
  let JPEG: string;
  let jpegBase64: string;

  beforeAll(async () => {
    t = await createTestApp();
    const root = await createSuperAdminUser(t.db, t.http);
    superUser = root.user;
    superToken = root.token;
    clinic = await createClinic(t.db, t.http);
    const image = sharp({ create: { width: 8, height: 4, channels: 3, background: '#204060' } });
    PNG = `data:image/png;base64,${(await image.clone().png().toBuffer()).toString('base64')}`;
    jpegBase64 = (await image.clone().jpeg().toBuffer()).toString('base64');
    JPEG = `data:image/jpeg;base64,${jpegBase64}`;
  });
  afterAll(() => t.close());

  const post = (body: unknown, token = superToken) => t.http.post('/api/admin/users', { token, body });
  const patch = (id: string, body: unknown, token = superToken) => t.http.patch(`/api/admin/users/${id}`, { token, body });
  const list = (query: Record<string, string>, token = superToken) => t.http.get('/api/admin/users', { token, query });
  const valid = (overrides: Record<string, unknown> = {}) => ({
    tenant_id: clinic.tenant.id,
    unit_id: clinic.unit1.id,
    name: `Dr. ${tag()}`,
    email: `new-${tag()}@example.test`,
    password: 'a-long-password',
    ...overrides,
  });

  describe('access', () => {
    it.each([
      ['GET', '/api/admin/users'],
      ['POST', '/api/admin/users'],
      ['PATCH', '/api/admin/users/USER'],
    ])('%s %s answers 401 without a token and 403 to a regular user or tenant admin', async (method, path) => {
      const url = path.replace('USER', clinic.user2.id);
      const body = method === 'GET' ? undefined : method === 'POST' ? valid({ name: 'Refused' }) : { name: 'Refused' };
      const anonymous = await t.http.request(method as 'GET', url, { body });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
      for (const token of [clinic.token1, clinic.adminToken]) {
        const res = await t.http.request(method as 'GET', url, { token, body });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'Forbidden' });
      }
      expect(await t.db.query(`SELECT 1 FROM users WHERE name = 'Refused'`)).toEqual([]);
    });
  });

  describe('POST /api/admin/users', () => {
    it('creates a user (201) with a lowercased email, a cost-12 hash, has_signature and never the secrets', async () => {
      const email = `  Maria.${tag()}@Example.TEST `;
      const res = await post(
        valid({ name: ' Maria Souza ', email, crm: '123456/SP', signature: PNG, is_tenant_admin: true, is_super_admin: true }),
      );
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(USER_KEYS);
      expect(res.body).toMatchObject({
        email: email.trim().toLowerCase(),
        name: 'Maria Souza',
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        is_super_admin: false,
        is_tenant_admin: true,
        is_active: true,
        crm: '123456/SP',
        has_signature: true,
        tenant: { id: clinic.tenant.id, name: clinic.tenant.name },
        unit: { id: clinic.unit1.id, name: clinic.unit1.name },
      });
      expect(res.body.created_at).toMatch(ISO);
      expect(res.body.updated_at).toMatch(ISO);
      const [row] = await t.db.query(`SELECT password, signature, is_super_admin FROM users WHERE id = $1`, [res.body.id]);
      expect(row.password).toMatch(/^\$2[aby]\$12\$/);
      expect(row.signature).toBe(PNG);
      expect(row.is_super_admin).toBe(false);
      const session = await t.http.post('/api/login', { body: { email: res.body.email, password: 'a-long-password' } });
      expect(session.status).toBe(200);
      expect(session.body.user.is_tenant_admin).toBe(true);
    });

    it('applies the defaults: not a tenant admin, active, no crm, no signature', async () => {
      const res = await post(valid({ signature: null, crm: null }));
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        is_super_admin: false,
        is_tenant_admin: false,
        is_active: true,
        crm: null,
        has_signature: false,
      });
    });

    it('accepts a JPEG signature, a 4-digit crm and an inactive user', async () => {
      const res = await post(valid({ signature: JPEG, crm: '1234/RJ', is_active: false }));
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ has_signature: true, crm: '1234/RJ', is_active: false });
    });

    it('accepts the tenant and unit ids in uppercase and answers them as stored (lowercase)', async () => {
      const res = await post(valid({ tenant_id: clinic.tenant.id.toUpperCase(), unit_id: clinic.unit1.id.toUpperCase() }));
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        tenant: { id: clinic.tenant.id, name: clinic.tenant.name },
        unit: { id: clinic.unit1.id, name: clinic.unit1.name },
      });
    });

    it('answers 422 for an email taken in another case', async () => {
      const res = await post(valid({ email: clinic.user1.email.toUpperCase() }));
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message: EMAIL_TAKEN, errors: { email: [EMAIL_TAKEN] } });
    });

    it('answers 404 for an unknown tenant or unit, and 422 (errors.unit_id) for a unit of another clinic', async () => {
      const tenant = await createTenant(t.db);
      const foreign = await createUnit(t.db, tenant.id);
      const noTenant = await post(valid({ tenant_id: randomUUID() }));
      expect(noTenant.status).toBe(404);
      expect(noTenant.body).toEqual({ message: 'Tenant not found.' });
      const noUnit = await post(valid({ unit_id: randomUUID() }));
      expect(noUnit.status).toBe(404);
      expect(noUnit.body).toEqual({ message: 'Unit not found.' });
      const outside = await post(valid({ unit_id: foreign.id }));
      expect(outside.status).toBe(422);
      expect(outside.body).toEqual({ message: UNIT_OUTSIDE, errors: { unit_id: [UNIT_OUTSIDE] } });
    });

    it.each([
      ['tenant_id', undefined, 'The tenant id field is required.'],
      ['tenant_id', 'nope', 'The tenant id field must be a valid UUID.'],
      ['unit_id', undefined, 'The unit id field is required.'],
      ['unit_id', null, 'The unit id field is required.'],
      ['name', undefined, 'The name field is required.'],
      ['name', 'a 256-character name', 'The name field must not be greater than 255 characters.'],
      ['email', undefined, 'The email field is required.'],
      ['email', 'not-an-email', 'The email field must be a valid email address.'],
      ['email', 'a 256-character email', 'The email field must not be greater than 255 characters.'],
      ['email', 42, 'The email field must be a string.'],
      ['password', undefined, 'The password field is required.'],
      ['password', 'short7!', 'The password field must be at least 8 characters.'],
      ['password', 'a 73-byte password', 'The password field must not be greater than 72 bytes.'],
      ['password', 12345678, 'The password field must be a string.'],
      ['crm', '123/SP', CRM_MESSAGE],
      ['crm', '1234567/SP', CRM_MESSAGE],
      ['crm', '123456/sp', CRM_MESSAGE],
      ['crm', '123456-SP', CRM_MESSAGE],
      ['crm', 123456, 'The crm field must be a string.'],
      ['signature', 'hello', NOT_DATA_URL],
      ['signature', 'data:image/gif;base64,R0lGODlhAQABAAAAACw=', NOT_DATA_URL],
      ['signature', 'data:image/png;base64,@@@@', 'The signature data URL does not contain valid base64.'],
      ['signature', 'a JPEG declared as PNG', NOT_IMAGE],
      ['signature', 'data:image/jpeg;base64,aGVsbG8gd29ybGQh', NOT_IMAGE],
      ['signature', 'a 2 MiB + 1 byte PNG', 'The signature must not be larger than 2 MiB.'],
      ['signature', 7, NOT_DATA_URL],
      ['is_tenant_admin', 'true', 'The is tenant admin field must be true or false.'],
      ['is_active', 0, 'The is active field must be true or false.'],
    ])('answers 422 when %s is %j', async (field, value, message) => {
      const concrete: Record<string, unknown> = {
        'a 256-character name': 'n'.repeat(256),
        'a 256-character email': `${'e'.repeat(244)}@example.com`,
        'a 73-byte password': `${'p'.repeat(71)}é`,
        'a JPEG declared as PNG': `data:image/png;base64,${jpegBase64}`,
        'a 2 MiB + 1 byte PNG': `data:image/png;base64,${Buffer.alloc(2 * 1024 * 1024 + 1, 1).toString('base64')}`,
      };
      const res = await post(valid({ [field]: typeof value === 'string' && value in concrete ? concrete[value] : value }));
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ [field]: [message] });
    });

    it('lets exactly one of 20 concurrent creations of one email (in different cases) win', async () => {
      const email = `race-${tag()}@example.test`;
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => post(valid({ email: i % 2 ? email.toUpperCase() : email }))),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 201)) {
        expect(r).toMatchObject({ status: 422, body: { errors: { email: [EMAIL_TAKEN] } } });
      }
      const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM users WHERE lower(email) = $1`, [email]);
      expect(count).toBe(1);
    }, 30_000);
  });

  describe('PATCH /api/admin/users/{id}', () => {
    async function member() {
      return createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, signature: PNG });
    }

    it('changes the given fields only and answers the User', async () => {
      const user = await member();
      const email = `Renamed.${tag()}@Example.test`;
      const res = await patch(user.id, {
        name: 'Renamed',
        email,
        crm: '98765/MG',
        is_tenant_admin: true,
        unit_id: clinic.unit2.id,
      });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(USER_KEYS);
      expect(res.body).toMatchObject({
        id: user.id,
        name: 'Renamed',
        email: email.toLowerCase(),
        crm: '98765/MG',
        is_tenant_admin: true,
        is_active: true,
        is_super_admin: false,
        has_signature: true,
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit2.id,
        unit: { id: clinic.unit2.id, name: clinic.unit2.name },
      });
    });

    it('replaces and removes the signature, and clears the crm with null', async () => {
      const user = await member();
      const jpeg = await patch(user.id, { signature: JPEG, crm: '1234/SP' });
      expect(jpeg.body.has_signature).toBe(true);
      const [row] = await t.db.query(`SELECT signature FROM users WHERE id = $1`, [user.id]);
      expect(row.signature).toBe(JPEG);
      const cleared = await patch(user.id, { signature: null, crm: null });
      expect(cleared.status).toBe(200);
      expect(cleared.body).toMatchObject({ has_signature: false, crm: null });
    });

    it('never changes is_super_admin, and refuses a password change with 422', async () => {
      const user = await member();
      const flag = await patch(user.id, { is_super_admin: true });
      expect(flag.status).toBe(200);
      expect(flag.body.is_super_admin).toBe(false);
      const demote = await patch(superUser.id, { is_super_admin: false, name: 'Still Super' });
      expect(demote.status).toBe(200);
      expect(demote.body.is_super_admin).toBe(true);
      const [hashBefore] = await t.db.query(`SELECT password FROM users WHERE id = $1`, [user.id]);
      const password = await patch(user.id, { password: 'a-new-password' });
      expect(password.status).toBe(422);
      expect(password.body.errors).toEqual({ password: ['The password cannot be changed through this endpoint.'] });
      const [hashAfter] = await t.db.query(`SELECT password FROM users WHERE id = $1`, [user.id]);
      expect(hashAfter.password).toBe(hashBefore.password);
    });

    it('accepts the user’s own email in another case and refuses another user’s', async () => {
      const user = await member();
      const own = await patch(user.id, { email: user.email.toUpperCase() });
      expect(own.status).toBe(200);
      expect(own.body.email).toBe(user.email);
      const taken = await patch(user.id, { email: clinic.user2.email.toUpperCase() });
      expect(taken.status).toBe(422);
      expect(taken.body).toEqual({ message: EMAIL_TAKEN, errors: { email: [EMAIL_TAKEN] } });
    });

    it('moves a user to another clinic with a unit of it, and refuses a unit outside the clinic', async () => {
      const user = await member();
      const other = await createTenant(t.db);
      const otherUnit = await createUnit(t.db, other.id);
      const stale = await patch(user.id, { tenant_id: other.id });
      expect(stale.status).toBe(422);
      expect(stale.body).toEqual({ message: UNIT_OUTSIDE, errors: { unit_id: [UNIT_OUTSIDE] } });
      const foreign = await patch(user.id, { unit_id: otherUnit.id });
      expect(foreign.status).toBe(422);
      expect(foreign.body.errors).toEqual({ unit_id: [UNIT_OUTSIDE] });
      const moved = await patch(user.id, { tenant_id: other.id, unit_id: otherUnit.id });
      expect(moved.status).toBe(200);
      expect(moved.body).toMatchObject({
        tenant_id: other.id,
        unit_id: otherUnit.id,
        tenant: { id: other.id, name: other.name },
        unit: { id: otherUnit.id, name: otherUnit.name },
      });
    });

    it('takes effect at once for the user’s existing token (deactivation and move)', async () => {
      const user = await member();
      const token = await login(t.http, user.email);
      const other = await createTenant(t.db);
      const otherUnit = await createUnit(t.db, other.id);
      expect((await patch(user.id, { tenant_id: other.id, unit_id: otherUnit.id })).status).toBe(200);
      const me = await t.http.get('/api/me', { token });
      expect(me.body).toMatchObject({ tenant_id: other.id, unit_id: otherUnit.id });
      expect((await patch(user.id, { is_active: false })).status).toBe(200);
      const refused = await t.http.get('/api/me', { token });
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ message: 'Unauthenticated.' });
      expect((await patch(user.id, { is_active: true })).status).toBe(200);
      expect((await t.http.get('/api/me', { token })).status).toBe(200);
    });

    // The token still claims is_tenant_admin: the role is the account's current one, not the token's.
    it('takes a tenant admin’s role away at once from their existing token, and gives it back', async () => {
      const admin = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, is_tenant_admin: true });
      const token = await login(t.http, admin.email);
      const template = () =>
        t.http.post('/api/tenant/templates', {
          token,
          body: { name: `Role ${tag()}`, unit_id: clinic.unit2.id, is_active: false },
        });
      const unit2Templates = () => t.http.get('/api/tenant/templates', { token, query: { unit_id: clinic.unit2.id } });
      expect((await template()).status).toBe(201);
      expect((await unit2Templates()).body.total).toBe(1);

      expect((await patch(admin.id, { is_tenant_admin: false })).body.is_tenant_admin).toBe(false);
      for (const res of [await template(), await t.http.patch('/api/tenant/settings', { token, body: { logo: null } })]) {
        expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: 'Forbidden' } });
      }
      // As a regular user they see their own unit's active templates only, not the inactive one of unit 2.
      expect((await unit2Templates()).body).toMatchObject({ data: [], total: 0 });
      expect((await t.http.get('/api/me', { token })).body.is_tenant_admin).toBe(false);

      expect((await patch(admin.id, { is_tenant_admin: true })).status).toBe(200);
      expect((await template()).status).toBe(201);
      expect((await unit2Templates()).body.total).toBe(2);
    });

    it('refuses to let a super admin deactivate their own account', async () => {
      const res = await patch(superUser.id, { is_active: false });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ is_active: ['You cannot deactivate your own account.'] });
    });

    it('refuses it with the same answer when the own id is spelled in uppercase', async () => {
      // A super admin of their own: were the guard skipped, the suite's would stay usable.
      const own = await createSuperAdminUser(t.db, t.http);
      const lower = await patch(own.user.id, { is_active: false }, own.token);
      const upper = await patch(own.user.id.toUpperCase(), { is_active: false }, own.token);
      const refusal = 'You cannot deactivate your own account.';
      for (const res of [lower, upper]) {
        expect(res.status).toBe(422);
        expect(res.body).toEqual({ message: refusal, errors: { is_active: [refusal] } });
      }
      const [row] = await t.db.query(`SELECT is_active FROM users WHERE id = $1`, [own.user.id]);
      expect(row.is_active).toBe(true);
    });

    it('answers 404 for an unknown or malformed user id, an unknown tenant and an unknown unit', async () => {
      const user = await member();
      for (const [id, body, message] of [
        [randomUUID(), { name: 'x' }, 'User not found.'],
        ['12345', { name: 'x' }, 'User not found.'],
        [user.id, { tenant_id: randomUUID() }, 'Tenant not found.'],
        [user.id, { unit_id: randomUUID() }, 'Unit not found.'],
      ] as const) {
        const res = await patch(id, body);
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message });
      }
    });

    it.each([
      ['name', '', 'The name field must not be empty.'],
      ['name', null, 'The name field must not be empty.'],
      ['name', 5, 'The name field must be a string.'],
      ['email', 'x@', 'The email field must be a valid email address.'],
      ['email', null, 'The email field must not be empty.'],
      ['tenant_id', null, 'The tenant id field must not be empty.'],
      ['unit_id', 'u-1', 'The unit id field must be a valid UUID.'],
      ['crm', '12/SP', CRM_MESSAGE],
      ['signature', 'data:image/png;base64,', 'The signature data URL does not contain valid base64.'],
      ['is_active', 'no', 'The is active field must be true or false.'],
      ['is_tenant_admin', null, 'The is tenant admin field must be true or false.'],
    ])('answers 422 when %s is %j', async (field, value, message) => {
      const user = await member();
      const res = await patch(user.id, { [field]: value });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ [field]: [message] });
    });
  });

  describe('GET /api/admin/users', () => {
    it('lists users by name (id as tie-break) with tenant and unit objects and has_signature only', async () => {
      const k = tag();
      const tenant = await createTenant(t.db);
      const unitA = await createUnit(t.db, tenant.id);
      const unitB = await createUnit(t.db, tenant.id);
      const twins = await Promise.all(
        [1, 2, 3].map(() => createUser(t.db, { tenant_id: tenant.id, unit_id: unitA.id, name: `Same ${k}` })),
      );
      const signed = await createUser(t.db, { tenant_id: tenant.id, unit_id: unitB.id, name: `aaa ${k}`, signature: PNG });
      const res = await list({ tenant_id: tenant.id });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(PAGE_KEYS);
      expect(res.body).toMatchObject({ current_page: 1, per_page: 50, total: 4, last_page: 1 });
      expect(ids(res.body)).toEqual([signed.id, ...twins.map((u) => u.id).sort()]);
      const first = res.body.data[0];
      expect(Object.keys(first).sort()).toEqual(USER_KEYS);
      expect(first).toMatchObject({
        id: signed.id,
        email: signed.email,
        has_signature: true,
        tenant: { id: tenant.id, name: tenant.name },
        unit: { id: unitB.id, name: unitB.name },
      });
      expect(res.body.data[1].has_signature).toBe(false);
      expect(ids((await list({ unit_id: unitB.id })).body)).toEqual([signed.id]);
      expect(ids((await list({ tenant_id: clinic.tenant.id, unit_id: unitB.id })).body)).toEqual([]);
    });

    it('shows a super admin with null tenant and unit', async () => {
      const res = await list({ search: (await t.db.query(`SELECT email FROM users WHERE id = $1`, [superUser.id]))[0].email });
      expect(res.body.data).toHaveLength(1);
      expect(res.body.data[0]).toMatchObject({
        id: superUser.id,
        is_super_admin: true,
        tenant_id: null,
        unit_id: null,
        tenant: null,
        unit: null,
      });
    });

    it('searches name and email case-insensitively and takes % and _ literally', async () => {
      const k = tag();
      const byName = await createUser(t.db, { name: `Zélia ${k} Prado` });
      const byEmail = await createUser(t.db, { email: `mail-${k}@clinic.test` });
      const percent = await createUser(t.db, { name: `${k} 100% sure` });
      await createUser(t.db, { name: `${k} 1000 sure` });
      const underscore = await createUser(t.db, { email: `${k}_x@clinic.test` });
      await createUser(t.db, { email: `${k}yx@clinic.test` });
      expect(ids((await list({ search: `ZÉLIA ${k.toUpperCase()}` })).body)).toEqual([byName.id]);
      expect(ids((await list({ search: `MAIL-${k}@CLINIC` })).body)).toEqual([byEmail.id]);
      expect(ids((await list({ search: `${k} 100%` })).body)).toEqual([percent.id]);
      expect(ids((await list({ search: `${k}_` })).body)).toEqual([underscore.id]);
    });

    it('searches regardless of accents', async () => {
      const k = tag();
      const accented = await createUser(t.db, { name: `Conceição ${k} Araújo` });
      expect(ids((await list({ search: `conceicao ${k} araujo` })).body)).toEqual([accented.id]);
    });

    it('pages 50 at a time and answers an empty page past the end', async () => {
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      const k = tag();
      await t.db.query(
        `INSERT INTO users (tenant_id, unit_id, name, email, password)
         SELECT $1, $2, 'P ' || lpad(i::text, 3, '0'), 'p' || i || '-${k}@example.test', 'x' FROM generate_series(1, 51) AS i`,
        [tenant.id, unit.id],
      );
      const [p1, p2, p5] = await Promise.all(['1', '2', '5'].map((page) => list({ tenant_id: tenant.id, page })));
      expect(p1.body).toMatchObject({ current_page: 1, per_page: 50, total: 51, last_page: 2 });
      expect(p1.body.data).toHaveLength(50);
      expect(p2.body.data.map((u: { name: string }) => u.name)).toEqual(['P 051']);
      expect(p5.body).toEqual({ data: [], current_page: 5, per_page: 50, total: 51, last_page: 2, total_exact: true });
    });

    it.each(LIST_QUERY_REFUSALS)('answers 422 for %j', async (query, field, message) => {
      const res = await list(query);
      expect(res.status).toBe(422);
      expect(res.body).toEqual(refusal(field, message));
    });
  });
});
