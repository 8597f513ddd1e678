import { createTestApp, TestApp } from '../support/app';
import { PAGE_KEYS } from '../support/expectations';
import { createClinic, createSuperAdminUser } from '../support/factories';

const PRESET_KEYS = [
  'created_at',
  'findings',
  'id',
  'impression',
  'indication',
  'modality',
  'name',
  'technique',
  'tenant_id',
  'unit_id',
  'updated_at',
];
const URL = '/api/tenant/report-presets';
const NOT_FOUND = { message: 'Preset not found.' };
const UNIT_INVALID = 'The selected unit id is invalid.';
/** A 422 body with one message for one field. */
const invalid = (field: string, message: string) => ({ message, errors: { [field]: [message] } });

describe('Report presets (/api/tenant/report-presets)', () => {
  let t: TestApp;
  let superToken: string;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
  });
  afterAll(() => t.close());

  async function clinicWithPresets() {
    const c = await createClinic(t.db, t.http);
    const make = async (body: Record<string, unknown>) => {
      const res = await t.http.post(URL, { token: c.adminToken, body });
      expect(res.status).toBe(201);
      return res.body as { id: string; name: string };
    };
    const unit1Ct = await make({ name: 'CT crânio normal', modality: 'ct', unit_id: c.unit1.id, findings: 'Sem alterações.' });
    const unit2Ct = await make({ name: 'CT unit 2', modality: 'CT', unit_id: c.unit2.id });
    const clinicMr = await make({ name: 'MR joelho', modality: 'MR', impression: 'Normal.' });
    const anyModality = await make({ name: 'Any modality' });
    return { c, unit1Ct, unit2Ct, clinicMr, anyModality };
  }
  const names = (body: { data: Array<{ name: string }> }) => body.data.map((p) => p.name);

  it('creates presets in the Preset shape (modality upper-cased)', async () => {
    const c = await createClinic(t.db, t.http);
    const res = await t.http.post(URL, {
      token: c.adminToken,
      body: {
        name: '  Tórax  ',
        modality: 'cr',
        unit_id: c.unit1.id,
        indication: 'Tosse',
        technique: 'PA',
        findings: 'f',
        impression: 'i',
      },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(PRESET_KEYS);
    expect(res.body).toMatchObject({
      name: 'Tórax',
      modality: 'CR',
      tenant_id: c.tenant.id,
      unit_id: c.unit1.id,
      indication: 'Tosse',
      technique: 'PA',
      findings: 'f',
      impression: 'i',
    });
  });

  it('a regular user reads their unit’s and the whole clinic’s presets, by name; modality and search filter', async () => {
    const { c, unit1Ct, clinicMr } = await clinicWithPresets();
    const other = await clinicWithPresets();
    const list = await t.http.get(URL, { token: c.token1 });
    expect(list.status).toBe(200);
    expect(Object.keys(list.body).sort()).toEqual(expect.arrayContaining(PAGE_KEYS));
    expect(names(list.body)).toEqual(['Any modality', 'CT crânio normal', 'MR joelho']);
    expect(list.body).toMatchObject({ per_page: 50, total: 3, current_page: 1, last_page: 1 });
    expect(names((await t.http.get(URL, { token: c.token2 })).body)).toEqual(['Any modality', 'CT unit 2', 'MR joelho']);
    expect(names((await t.http.get(URL, { token: c.token1, query: { modality: 'CT' } })).body)).toEqual([
      'Any modality',
      'CT crânio normal',
    ]);
    expect(names((await t.http.get(URL, { token: c.token1, query: { search: 'joelho' } })).body)).toEqual(['MR joelho']);
    // Regardless of case and accents, as every search.
    expect(names((await t.http.get(URL, { token: c.token1, query: { search: 'CRANIO' } })).body)).toEqual(['CT crânio normal']);
    // A tenant admin sees the clinic's; with unit_id that unit's and the clinic's.
    expect((await t.http.get(URL, { token: c.adminToken })).body.total).toBe(4);
    expect(names((await t.http.get(URL, { token: c.adminToken, query: { unit_id: c.unit2.id } })).body)).toEqual([
      'Any modality',
      'CT unit 2',
      'MR joelho',
    ]);
    const theirs = (await t.http.get(URL, { token: other.c.token1 })).body.data.map((p: { id: string }) => p.id);
    expect(theirs).toHaveLength(3);
    expect(theirs).not.toContain(unit1Ct.id);
    expect(theirs).not.toContain(clinicMr.id);
  });

  it('a super admin with unit_id reads that unit’s presets and its own clinic’s, not another clinic’s whole-clinic presets', async () => {
    const { c, unit2Ct, clinicMr, anyModality } = await clinicWithPresets();
    await clinicWithPresets();
    const res = await t.http.get(URL, { token: superToken, query: { unit_id: c.unit2.id } });
    expect(res.status).toBe(200);
    expect(res.body.data.map((p: { id: string }) => p.id)).toEqual([anyModality.id, unit2Ct.id, clinicMr.id]);
    expect(res.body.total).toBe(3);
  });

  it('PATCH and DELETE (soft) by the tenant admin; the deleted preset is gone from every read but kept', async () => {
    const { c, unit1Ct } = await clinicWithPresets();
    const patched = await t.http.patch(`${URL}/${unit1Ct.id}`, {
      token: c.adminToken,
      body: { name: 'CT renamed', unit_id: null, modality: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'CT renamed', unit_id: null, modality: null });
    const deleted = await t.http.delete(`${URL}/${unit1Ct.id}`, { token: c.adminToken });
    expect([deleted.status, deleted.raw.length]).toEqual([204, 0]);
    for (const res of [
      await t.http.get(`${URL}/${unit1Ct.id}`, { token: c.adminToken }),
      await t.http.patch(`${URL}/${unit1Ct.id}`, { token: c.adminToken, body: { name: 'again' } }),
      await t.http.delete(`${URL}/${unit1Ct.id}`, { token: c.adminToken }),
    ]) {
      expect([res.status, res.body]).toEqual([404, NOT_FOUND]);
    }
    expect(names((await t.http.get(URL, { token: c.adminToken })).body)).not.toContain('CT renamed');
    const [row] = await t.db.query(`SELECT deleted_at FROM report_presets WHERE id = $1`, [unit1Ct.id]);
    expect(row.deleted_at).toBeInstanceOf(Date);
  });

  it('no session: 401 {message: "Unauthenticated."} on every path', async () => {
    const { c, unit1Ct } = await clinicWithPresets();
    for (const [method, path, body] of [
      ['GET', '', undefined],
      ['GET', `/${unit1Ct.id}`, undefined],
      ['POST', '', { name: 'x' }],
      ['PATCH', `/${unit1Ct.id}`, { name: 'x' }],
      ['DELETE', `/${unit1Ct.id}`, undefined],
    ] as const) {
      const res = await t.http.request(method, `${URL}${path}`, { body });
      expect({ method, path, status: res.status, body: res.body }).toEqual({
        method,
        path,
        status: 401,
        body: { message: 'Unauthenticated.' },
      });
    }
    expect((await t.http.get(`${URL}/${unit1Ct.id}`, { token: c.adminToken })).body.name).toBe('CT crânio normal');
  });

  it('regular users may not write (403)', async () => {
    const { c, unit1Ct } = await clinicWithPresets();
    for (const res of [
      await t.http.post(URL, { token: c.token1, body: { name: 'x' } }),
      await t.http.patch(`${URL}/${unit1Ct.id}`, { token: c.token1, body: { name: 'x' } }),
      await t.http.delete(`${URL}/${unit1Ct.id}`, { token: c.token1 }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Forbidden' });
    }
  });

  it('another clinic’s preset is 404 for reads and writes; another unit’s preset is 404 for a regular user', async () => {
    const { c, unit2Ct } = await clinicWithPresets();
    const other = await clinicWithPresets();
    for (const res of [
      await t.http.get(`${URL}/${other.unit1Ct.id}`, { token: c.adminToken }),
      await t.http.patch(`${URL}/${other.unit1Ct.id}`, { token: c.adminToken, body: { name: 'x' } }),
      await t.http.delete(`${URL}/${other.unit1Ct.id}`, { token: c.adminToken }),
      await t.http.get(`${URL}/${unit2Ct.id}`, { token: c.token1 }),
      await t.http.get(`${URL}/not-a-uuid`, { token: c.token1 }),
    ]) {
      expect(res).toMatchObject({ status: 404, body: NOT_FOUND });
    }
    expect((await t.http.get(`${URL}/${other.unit1Ct.id}`, { token: superToken })).status).toBe(200);
  });

  it('422: a unit of another clinic, a missing or long name, a long modality, a bad page', async () => {
    const { c } = await clinicWithPresets();
    const other = await createClinic(t.db, t.http);
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ name: 'x', unit_id: other.unit1.id }, 'unit_id', UNIT_INVALID],
      [{ name: 'x', unit_id: 'nope' }, 'unit_id', 'The unit id field must be a valid UUID.'],
      [{}, 'name', 'The name field is required.'],
      [{ name: '   ' }, 'name', 'The name field is required.'],
      [{ name: 'x'.repeat(256) }, 'name', 'The name field must not be greater than 255 characters.'],
      [{ name: 'x', modality: 'M'.repeat(17) }, 'modality', 'The modality field must not be greater than 16 characters.'],
      [{ name: 'x', findings: 5 }, 'findings', 'The findings field must be a string.'],
    ];
    for (const [body, field, message] of cases) {
      const res = await t.http.post(URL, { token: c.adminToken, body });
      expect({ body, status: res.status, answer: res.body }).toEqual({ body, status: 422, answer: invalid(field, message) });
    }
    // PATCH takes a unit of the preset's clinic only, as POST does, and changes nothing else then.
    const preset = (await t.http.get(URL, { token: c.token1 })).body.data.find(
      (p: { name: string }) => p.name === 'CT crânio normal',
    );
    for (const unit_id of [other.unit1.id, '00000000-0000-4000-8000-000000000000']) {
      const res = await t.http.patch(`${URL}/${preset.id}`, { token: c.adminToken, body: { name: 'moved', unit_id } });
      expect([res.status, res.body]).toEqual([422, invalid('unit_id', UNIT_INVALID)]);
    }
    expect((await t.http.get(`${URL}/${preset.id}`, { token: c.adminToken })).body).toMatchObject({
      name: 'CT crânio normal',
      unit_id: c.unit1.id,
    });
    // A super admin names the clinic through a unit of it.
    expect((await t.http.post(URL, { token: superToken, body: { name: 'x' } })).status).toBe(422);
    expect((await t.http.post(URL, { token: superToken, body: { name: 'x', unit_id: c.unit1.id } })).body.tenant_id).toBe(
      c.tenant.id,
    );
    const queries: Array<[Record<string, string>, string, string]> = [
      [{ page: '0' }, 'page', 'The page field must be at least 1.'],
      [{ page: 'x' }, 'page', 'The page field must be an integer.'],
      [{ modality: 'M'.repeat(17) }, 'modality', 'The modality field must not be greater than 16 characters.'],
      [{ unit_id: 'nope' }, 'unit_id', 'The unit id field must be a valid UUID.'],
    ];
    for (const [query, field, message] of queries) {
      const res = await t.http.get(URL, { token: c.token1, query });
      expect({ query, status: res.status, answer: res.body }).toEqual({ query, status: 422, answer: invalid(field, message) });
    }
  });

  it('modality is checked as it is stored (upper-cased): 16 ß become 32 characters, 422 on POST and PATCH, never 500', async () => {
    const { c, unit1Ct } = await clinicWithPresets();
    const tooLong = 'The modality field must not be greater than 16 characters.';
    for (const modality of ['ß'.repeat(16), '\uFB03'.repeat(6)]) {
      for (const res of [
        await t.http.post(URL, { token: c.adminToken, body: { name: 'x', modality } }),
        await t.http.patch(`${URL}/${unit1Ct.id}`, { token: c.adminToken, body: { modality } }),
      ]) {
        expect({ modality, status: res.status, body: res.body }).toEqual({
          modality,
          status: 422,
          body: { message: tooLong, errors: { modality: [tooLong] } },
        });
      }
    }
    // Within 16 characters once upper-cased, it is stored as such.
    const created = await t.http.post(URL, { token: c.adminToken, body: { name: 'x', modality: ' ' + 'ß'.repeat(8) + ' ' } });
    expect([created.status, created.body.modality]).toEqual([201, 'S'.repeat(16)]);
    const patched = await t.http.patch(`${URL}/${unit1Ct.id}`, { token: c.adminToken, body: { modality: '\uFB03'.repeat(5) } });
    expect([patched.status, patched.body.modality]).toEqual([200, 'FFI'.repeat(5)]);
  });

  it('the modality filter takes what create takes, normalised alike, and matches it', async () => {
    const { c } = await clinicWithPresets();
    for (const modality of ['ct-sr', 'C%', 'ß']) {
      const res = await t.http.post(URL, { token: c.adminToken, body: { name: `Preset ${modality}`, modality } });
      expect(res.status).toBe(201);
    }
    const filtered = async (modality: string) => {
      const res = await t.http.get(URL, { token: c.token1, query: { modality } });
      expect(res.status).toBe(200);
      return names(res.body);
    };
    expect(await filtered(' ct-sr ')).toEqual(['Any modality', 'Preset ct-sr']);
    expect(await filtered('CT-SR')).toEqual(['Any modality', 'Preset ct-sr']);
    expect(await filtered('c%')).toEqual(['Any modality', 'Preset C%']);
    expect(await filtered('ß')).toEqual(['Any modality', 'Preset ß']);
    expect(await filtered('SS')).toEqual(['Any modality', 'Preset ß']);
    // A blank filter is no filter.
    expect((await t.http.get(URL, { token: c.token1, query: { modality: ' ' } })).body.total).toBe(6);
    const tooLong = await t.http.get(URL, { token: c.token1, query: { modality: 'ß'.repeat(9) } });
    const message = 'The modality field must not be greater than 16 characters.';
    expect([tooLong.status, tooLong.body]).toEqual([422, { message, errors: { modality: [message] } }]);
  });

  it("a search's total is exact up to 1,000 matches, as every search: past that 1000, total_exact false, no page past it", async () => {
    const c = await createClinic(t.db, t.http);
    await t.db.query(
      `INSERT INTO report_presets (tenant_id, name) SELECT $1, 'Cap ' || lpad(i::text, 4, '0') FROM generate_series(1, 1001) AS i`,
      [c.tenant.id],
    );
    const page = async (query: string) => {
      const res = await t.http.get(`${URL}?${query}`, { token: c.adminToken });
      expect(res.status).toBe(200);
      return { ...res.body, data: res.body.data.map((p: { name: string }) => p.name) };
    };
    const capped = { per_page: 50, total: 1000, last_page: 20, total_exact: false };
    expect(await page('search=cap&page=20')).toEqual({
      ...capped,
      current_page: 20,
      data: expect.arrayContaining(['Cap 1000']),
    });
    expect((await page('search=cap&page=20')).data).toHaveLength(50);
    expect(await page('search=cap&page=21')).toEqual({ ...capped, current_page: 21, data: [] });
    // Without a search the same 1,001 presets are counted exactly.
    expect(await page('page=21')).toEqual({
      per_page: 50,
      total: 1001,
      last_page: 21,
      total_exact: true,
      current_page: 21,
      data: ['Cap 1001'],
    });
  });
});
