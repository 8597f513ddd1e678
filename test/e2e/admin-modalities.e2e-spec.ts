import { randomUUID } from 'crypto';
import { DataSource } from 'typeorm';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser, createTenant, createUnit } from '../support/factories';
import { ids, ISO, PAGE_KEYS, tag, LIST_QUERY_REFUSALS, refusal } from '../support/expectations';

const MODALITY_KEYS = ['aet', 'created_at', 'id', 'ip_address', 'name', 'tenant', 'tenant_id', 'unit', 'unit_id', 'updated_at'];
const NAME_TAKEN = 'A modality with that name already exists in this unit.';
const AET_TAKEN = 'The aet has already been taken.';
/** A unique AE title of at most 16 characters. */
const aet = (prefix = 'AE') => `${prefix}${randomUUID().replace(/-/g, '').slice(0, 10)}`.toUpperCase();
async function createModality(db: DataSource, tenantId: string, unitId: string, values: { name?: string; aet?: string } = {}) {
  const [row] = await db.query(
    `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '10.0.0.1')
     RETURNING id, name, aet`,
    [tenantId, unitId, values.name ?? `Device ${tag()}`, values.aet ?? aet()],
  );
  return row as { id: string; name: string; aet: string };
}

describe('Admin: modalities (/api/admin/modalities)', () => {
  let t: TestApp;
  let superToken: string;
  let clinic: Awaited<ReturnType<typeof createClinic>>;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    clinic = await createClinic(t.db, t.http);
  });
  afterAll(() => t.close());

  const post = (body: unknown, token = superToken) => t.http.post('/api/admin/modalities', { token, body });
  const list = (query: Record<string, string>, token = superToken) => t.http.get('/api/admin/modalities', { token, query });
  const valid = (overrides: Record<string, unknown> = {}) => ({
    tenant_id: clinic.tenant.id,
    unit_id: clinic.unit1.id,
    name: `CT ${tag()}`,
    aet: aet(),
    ip_address: '10.8.0.12',
    ...overrides,
  });

  describe('access', () => {
    it.each([['GET'], ['POST']])('%s answers 401 without a token and 403 to a regular user or tenant admin', async (method) => {
      const body = method === 'POST' ? valid({ name: `Refused ${tag()}` }) : undefined;
      const anonymous = await t.http.request(method as 'GET', '/api/admin/modalities', { body });
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).toEqual({ message: 'Unauthenticated.' });
      for (const token of [clinic.token1, clinic.adminToken]) {
        const res = await t.http.request(method as 'GET', '/api/admin/modalities', { token, body });
        expect(res.status).toBe(403);
        expect(res.body).toEqual({ error: 'Forbidden' });
      }
      expect(await t.db.query(`SELECT 1 FROM modalities WHERE name LIKE 'Refused %'`)).toEqual([]);
    });
  });

  describe('POST /api/admin/modalities', () => {
    it('registers a device (201) with the aet trimmed and uppercased, in the documented shape', async () => {
      const raw = `  ct_${tag()} `;
      const res = await post(valid({ name: '  Tomógrafo 1 ', aet: raw, ip_address: ' 192.168.10.5 ' }));
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(MODALITY_KEYS);
      expect(res.body).toMatchObject({
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        name: 'Tomógrafo 1',
        aet: raw.trim().toUpperCase(),
        ip_address: '192.168.10.5',
        tenant: { id: clinic.tenant.id, name: clinic.tenant.name },
        unit: { id: clinic.unit1.id, name: clinic.unit1.name },
      });
      expect(res.body.created_at).toMatch(ISO);
      expect(res.body.updated_at).toMatch(ISO);
      const [row] = await t.db.query(`SELECT aet FROM modalities WHERE id = $1`, [res.body.id]);
      expect(row.aet).toBe(raw.trim().toUpperCase());
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

    it('accepts IPv6 addresses and a 16-character aet', async () => {
      const res = await post(valid({ ip_address: 'fd00::8:12', aet: `A${randomUUID().replace(/-/g, '').slice(0, 15)}` }));
      expect(res.status).toBe(201);
      expect(res.body.ip_address).toBe('fd00::8:12');
      expect(res.body.aet).toHaveLength(16);
    });

    it('answers 422 for an aet already used, in another case, by another clinic', async () => {
      const other = await createTenant(t.db);
      const otherUnit = await createUnit(t.db, other.id);
      const existing = await createModality(t.db, other.id, otherUnit.id);
      const res = await post(valid({ aet: ` ${existing.aet.toLowerCase()} ` }));
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message: AET_TAKEN, errors: { aet: [AET_TAKEN] } });
    });

    it('answers 422 for a name used in the unit in another case, but allows it in another unit', async () => {
      const existing = await createModality(t.db, clinic.tenant.id, clinic.unit1.id, { name: `Raio X ${tag()}` });
      const res = await post(valid({ name: existing.name.toUpperCase() }));
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message: NAME_TAKEN, errors: { name: [NAME_TAKEN] } });
      const elsewhere = await post(valid({ unit_id: clinic.unit2.id, name: existing.name }));
      expect(elsewhere.status).toBe(201);
    });

    it('reports both a taken name and a taken aet at once', async () => {
      const existing = await createModality(t.db, clinic.tenant.id, clinic.unit1.id);
      const res = await post(valid({ name: existing.name, aet: existing.aet }));
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ name: [NAME_TAKEN], aet: [AET_TAKEN] });
    });

    it('answers 404 for an unknown tenant, an unknown unit, and a unit of another clinic', async () => {
      const other = await createTenant(t.db);
      const otherUnit = await createUnit(t.db, other.id);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ tenant_id: randomUUID() }, 'Tenant not found.'],
        [{ unit_id: randomUUID() }, 'Unit not found.'],
        [{ unit_id: otherUnit.id }, 'Unit not found.'],
      ];
      for (const [overrides, message] of cases) {
        const res = await post(valid(overrides));
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message });
      }
    });

    it.each([
      ['tenant_id', undefined, 'The tenant id field is required.'],
      ['tenant_id', 'x', 'The tenant id field must be a valid UUID.'],
      ['unit_id', undefined, 'The unit id field is required.'],
      ['unit_id', 7, 'The unit id field must be a valid UUID.'],
      ['name', undefined, 'The name field is required.'],
      ['name', 'n'.repeat(256), 'The name field must not be greater than 255 characters.'],
      ['aet', undefined, 'The aet field is required.'],
      ['aet', '   ', 'The aet field is required.'],
      ['aet', 'A'.repeat(17), 'The aet field must not be greater than 16 characters.'],
      ['aet', 'BAD\\AET', 'The aet field may only contain printable ASCII characters other than a backslash.'],
      ['aet', 'ÇÃO', 'The aet field may only contain printable ASCII characters other than a backslash.'],
      ['aet', 12, 'The aet field must be a string.'],
      ['ip_address', undefined, 'The ip address field is required.'],
      ['ip_address', '999.1.1.1', 'The ip address field must be a valid IPv4 or IPv6 address.'],
      ['ip_address', 'device.local', 'The ip address field must be a valid IPv4 or IPv6 address.'],
      ['ip_address', 10, 'The ip address field must be a string.'],
    ])('answers 422 when %s is %j', async (field, value, message) => {
      const res = await post(valid({ [field]: value }));
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual({ [field]: [message] });
    });

    it('lets exactly one of 20 concurrent registrations of one aet (in different cases) win', async () => {
      const title = aet('RACE');
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => post(valid({ name: `Racer ${i}`, aet: i % 2 ? title.toLowerCase() : title }))),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
      for (const r of responses.filter((x) => x.status !== 201)) {
        expect(r).toMatchObject({ status: 422, body: { errors: { aet: [AET_TAKEN] } } });
      }
      const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM modalities WHERE aet = $1`, [title]);
      expect(count).toBe(1);
    });
  });

  describe('GET /api/admin/modalities', () => {
    it('lists devices by name with tenant and unit objects, filtered by tenant and unit', async () => {
      const k = tag();
      const a = await createTenant(t.db);
      const a1 = await createUnit(t.db, a.id);
      const a2 = await createUnit(t.db, a.id);
      const b = await createTenant(t.db);
      const b1 = await createUnit(t.db, b.id);
      const m1 = await createModality(t.db, a.id, a1.id, { name: `Dev ${k} b` });
      const m2 = await createModality(t.db, a.id, a2.id, { name: `dev ${k} A` });
      const m3 = await createModality(t.db, b.id, b1.id, { name: `Dev ${k} c` });
      const all = await list({ search: `dev ${k}` });
      expect(all.status).toBe(200);
      expect(Object.keys(all.body).sort()).toEqual(PAGE_KEYS);
      expect(all.body).toMatchObject({ current_page: 1, per_page: 50, total: 3, last_page: 1 });
      expect(ids(all.body)).toEqual([m2.id, m1.id, m3.id]);
      expect(Object.keys(all.body.data[0]).sort()).toEqual(MODALITY_KEYS);
      expect(all.body.data[0]).toMatchObject({
        id: m2.id,
        tenant_id: a.id,
        unit_id: a2.id,
        aet: m2.aet,
        ip_address: '10.0.0.1',
        tenant: { id: a.id, name: a.name },
        unit: { id: a2.id, name: a2.name },
      });
      expect(ids((await list({ search: `dev ${k}`, tenant_id: a.id })).body)).toEqual([m2.id, m1.id]);
      expect(ids((await list({ search: `dev ${k}`, unit_id: a1.id })).body)).toEqual([m1.id]);
      expect(ids((await list({ tenant_id: b.id, unit_id: a1.id })).body)).toEqual([]);
    });

    it('searches name and aet case-insensitively and takes % and _ literally', async () => {
      const k = tag();
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      const percent = await createModality(t.db, tenant.id, unit.id, { name: `${k} 100% dose` });
      await createModality(t.db, tenant.id, unit.id, { name: `${k} 1000 dose` });
      const underscore = await createModality(t.db, tenant.id, unit.id, { name: `${k} ct_1` });
      await createModality(t.db, tenant.id, unit.id, { name: `${k} ctx1` });
      const byAet = await createModality(t.db, tenant.id, unit.id, { aet: aet('FINDME') });
      expect(ids((await list({ search: `${k} 100%` })).body)).toEqual([percent.id]);
      expect(ids((await list({ search: `${k} CT_1` })).body)).toEqual([underscore.id]);
      expect(ids((await list({ search: byAet.aet.toLowerCase() })).body)).toEqual([byAet.id]);
    });

    it('searches regardless of accents', async () => {
      const k = tag();
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      const accented = await createModality(t.db, tenant.id, unit.id, { name: `${k} Tomógrafo Sala Única` });
      expect(ids((await list({ search: `${k} tomografo sala unica` })).body)).toEqual([accented.id]);
    });

    it('pages 50 at a time and answers an empty page past the end', async () => {
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      const k = tag().toUpperCase();
      await t.db.query(
        `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address)
         SELECT $1, $2, 'M ' || lpad(i::text, 3, '0'), 'P${k}' || i, '10.0.0.2' FROM generate_series(1, 51) AS i`,
        [tenant.id, unit.id],
      );
      const [p1, p2, p3] = await Promise.all(['1', '2', '3'].map((page) => list({ unit_id: unit.id, page })));
      expect(p1.body).toMatchObject({ current_page: 1, per_page: 50, total: 51, last_page: 2 });
      expect(p1.body.data).toHaveLength(50);
      expect(p2.body.data.map((m: { name: string }) => m.name)).toEqual(['M 051']);
      expect(p3.body).toEqual({ data: [], current_page: 3, per_page: 50, total: 51, last_page: 2, total_exact: true });
    });

    it.each(LIST_QUERY_REFUSALS)('answers 422 for %j', async (query, field, message) => {
      const res = await list(query);
      expect(res.status).toBe(422);
      expect(res.body).toEqual(refusal(field, message));
    });
  });
});
