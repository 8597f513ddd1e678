/**
 * The searched lists against their oracle, plain `LIKE` over the folded text in list order: for
 * random fragments cut from random names (accents, case, separators, digits, LIKE's own
 * characters, their fullwidth forms), in every kind of scope, every page up to the cap holds the
 * oracle's rows in the oracle's order, and the total is exact up to 1,000 matches, else 1000 with
 * `total_exact: false`. Large sets exercise both plans: matches collected through the search index,
 * matches met by a walk in list order, and matches that sit together far down the list order (the
 * walk comes back short and the page is collected).
 */
import { SMALL_SCOPE_ROWS } from '../../src/database/list/list-query';
import { Prng } from '../fuzz/support/prng';
import { createTestApp, TestApp } from '../support/app';
import { createStudy } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createTenant, createUnit } from '../support/factories';

jest.setTimeout(300_000);

const WORDS = [
  'JOÃO',
  'Joao',
  'maria',
  'MARÍA',
  'Rodríguez',
  'rigue',
  'da',
  'silva',
  'ana',
  'conceição',
  'São',
  "D'Ávila",
  'Straße',
  'x',
];
const STUDY_ORDER = 's.study_date DESC, s.created_at DESC, s.id DESC';
const PATIENT_ORDER = 'p.patient_name ASC, p.created_at DESC, p.id ASC';
// The oracle's pattern: the fragment folded, then `\`, `%` and `_` escaped by plain replace().
const ORACLE_PATTERN = `'%' || replace(replace(replace(search_fold($1), '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;
// The contract's match: the fragment in one of the fields (a fragment across two never matches).
const oracleMatch = (fields: string[]) =>
  `(${fields.map((field) => `search_fold(coalesce(${field}, '')) LIKE ${ORACLE_PATTERN}`).join(' OR ')})`;

describe('search: exact up to the cap, LIKE as the oracle', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superToken: string;
  const seed = Number(process.env.SEARCH_SEED ?? Date.now() % 1_000_000);
  const prng = new Prng(seed);
  const pick = <T>(list: T[]) => prng.pick(list);
  const digits = (n: number) => Array.from({ length: n }, () => String(Math.floor(prng.next() * 3))).join('');
  const randomName = () =>
    Array.from({ length: 1 + Math.floor(prng.next() * 3) }, () => pick(WORDS)).join(pick([' ', '^', ', ', '-'])) +
    pick(['', '', '%', '_1', '\\']);

  /** The ids the oracle finds, in list order, for a scope (SQL over `s` or `p`, params from $2). */
  const oracle = async (list: 'studies' | 'patients', scopeSql: string, params: unknown[], fragment: string) => {
    const sql =
      list === 'studies'
        ? `SELECT s.id FROM studies s WHERE ${scopeSql} AND ${oracleMatch(['s.patient_name', 's.patient_id', 's.accession_number'])} ORDER BY ${STUDY_ORDER}`
        : `SELECT p.id FROM patients p WHERE ${scopeSql} AND ${oracleMatch(['p.patient_name', 'p.patient_id'])} ORDER BY ${PATIENT_ORDER}`;
    return ((await t.db.query(sql, [fragment, ...params])) as Array<{ id: string }>).map((row) => row.id);
  };

  /** Every page the API gives up to its last_page, checked against the oracle's rows. */
  const expectPages = async (
    url: string,
    token: string,
    fragment: string,
    expected: string[],
    perPage: number,
    pages?: number[],
  ) => {
    const capped = expected.slice(0, 1000);
    const last = Math.max(1, Math.ceil(capped.length / perPage));
    for (const page of pages ?? Array.from({ length: last + 1 }, (_, i) => i + 1)) {
      const response = await t.http.get(url, { token, query: { search: fragment, page: String(page) } });
      expect(response.status).toBe(200);
      const context = `${url} "${fragment}" page ${page} (SEARCH_SEED=${seed})`;
      expect({ context, total: response.body.total, exact: response.body.total_exact, last: response.body.last_page }).toEqual({
        context,
        total: capped.length,
        exact: expected.length <= 1000,
        last,
      });
      expect({ context, ids: response.body.data.map((row: { id: string }) => row.id) }).toEqual({
        context,
        ids: capped.slice((page - 1) * perPage, page * perPage),
      });
    }
  };

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    const rows: unknown[][] = [];
    for (let n = 0; n < 240; n++) {
      const tenant = n % 5 === 4 ? other : clinic;
      rows.push([
        tenant.tenant.id,
        n % 2 ? tenant.unit1.id : tenant.unit2.id,
        `${pick(['P', '', 'ID'])}${digits(5)}`,
        randomName(),
        n,
      ]);
    }
    for (const [tenantId, unitId, patientId, name, n] of rows) {
      await t.db.query(
        `WITH p AS (INSERT INTO patients (tenant_id, patient_id, patient_name) VALUES ($1, $3 || '-' || $5, $4) RETURNING id)
         INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
                              accession_number, study_date)
         SELECT $1, $2, p.id, 'ex-' || $5, '1.2.77.' || $5, $3 || '-' || $5, $4, 'AC' || $3, date '2024-01-01' - ($5::int % 30)
           FROM p`,
        [tenantId, unitId, patientId, name, n],
      );
    }
    // Studies and patients few fragments find (the studies older than the others), so that the
    // clinic and the super admin's whole archive are larger than SMALL_SCOPE_ROWS and searched
    // through the search index, while a unit's studies are walked whole.
    await t.db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date)
       SELECT $1, $2, 'fill-' || n, '1.2.79.' || n, 'QQQ', 'Qqq Qqq', date '2010-01-01' FROM generate_series(1, $3::int) AS n`,
      [clinic.tenant.id, clinic.unit2.id, SMALL_SCOPE_ROWS],
    );
    await t.db.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name)
       SELECT $1, 'QQQ' || translate(n::text, '0123456789', 'BCDFGHJKLM'), 'Qqq Qqq' FROM generate_series(1, $2::int) AS n`,
      [clinic.tenant.id, SMALL_SCOPE_ROWS],
    );
  });
  afterAll(() => t.close());

  it('random fragments, every page, every scope, studies and patients', async () => {
    const texts = (
      (await t.db.query(
        `SELECT patient_name || ' ' || patient_id AS text FROM studies WHERE imgsrv_study_id LIKE 'ex-%'`,
      )) as Array<{
        text: string;
      }>
    ).map((row) => row.text);
    const fragments = new Set(['ção', 'cao', 'SAO', 'ana', '%', '_1', 'a\\', '％', '＿1', 'ｓｉｌｖａ', 'xyzzy', '\u001f']);
    // The end of a name and the start of its patient id, across search_text's separator.
    const [{ across }] = await t.db.query(
      `SELECT right(search_fold(patient_name), 2) || chr(31) || left(search_fold(patient_id), 2) AS across
         FROM studies WHERE imgsrv_study_id LIKE 'ex-%' LIMIT 1`,
    );
    fragments.add(across);
    while (fragments.size < 40) {
      const text = pick(texts);
      const start = Math.floor(prng.next() * text.length);
      fragments.add(text.slice(start, start + 1 + Math.floor(prng.next() * 8)));
    }
    const scopes = [
      { token: superToken, studies: 'TRUE', patients: 'TRUE', params: [] as unknown[] },
      { token: clinic.adminToken, studies: 's.tenant_id = $2', patients: 'p.tenant_id = $2', params: [clinic.tenant.id] },
      {
        token: clinic.token1,
        studies: 's.tenant_id = $2 AND s.unit_id = $3',
        patients: 'p.tenant_id = $2 AND EXISTS (SELECT 1 FROM studies s WHERE s.patient_uuid = p.id AND s.unit_id = $3)',
        params: [clinic.tenant.id, clinic.unit1.id],
      },
    ];
    for (const fragment of fragments) {
      for (const scope of scopes) {
        await expectPages(
          '/api/studies',
          scope.token,
          fragment,
          await oracle('studies', scope.studies, scope.params, fragment),
          15,
        );
        await expectPages(
          '/api/patients',
          scope.token,
          fragment,
          await oracle('patients', scope.patients, scope.params, fragment),
          20,
        );
      }
    }
  });

  it('fullwidth ％ and ＿ are literal characters, not wildcards', async () => {
    const [{ n }] = await t.db.query(`SELECT count(*)::int AS n FROM studies WHERE tenant_id = $1`, [clinic.tenant.id]);
    const percent = await t.http.get('/api/studies', { token: clinic.adminToken, query: { search: '％％％' } });
    expect(percent.status).toBe(200);
    expect(n).toBeGreaterThan(0);
    expect(percent.body).toMatchObject({ total: 0, total_exact: true, data: [] });
    const underscore = await t.http.get('/api/studies', { token: clinic.adminToken, query: { search: '＿＿＿' } });
    expect(underscore.body).toMatchObject({ total: 0, total_exact: true, data: [] });
  });

  it('past 1,000 matches: total 1000, total_exact false, pages exact and in order up to the cap, walked or collected', async () => {
    // 1,300 recent matches among 400 newer non-matches (walked), and 1,101 matches that sit under
    // 2,600 newer non-matches (a walk comes back short: collected, then walked from the first match,
    // which is a year newer than the others).
    const insert = (from: number, count: number, name: string, day: string) =>
      t.db.query(
        `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, accession_number, study_date, created_at)
         SELECT $1, $2, 'cap-' || n, '1.2.78.' || n, 'CAP' || n, $3, NULL, date '${day}' - (n % 3), timestamptz '2024-06-01' + (n % 5) * interval '1 second'
           FROM generate_series(${from}, ${from + count - 1}) AS n`,
        [other.tenant.id, other.unit1.id, name],
      );
    await insert(1, 1300, 'Many Zebrafinch', '2025-05-01');
    await insert(2000, 400, 'Nobody Else', '2025-06-01');
    await insert(3000, 1100, 'Deep Quokkasson', '2015-01-01');
    await insert(4500, 1, 'Deep Quokkasson', '2016-06-01');
    await insert(5000, 2600, 'Newer Person', '2020-01-01');
    // Older rows that make the unit larger than SMALL_SCOPE_ROWS, which is walked whole.
    await insert(8000, SMALL_SCOPE_ROWS - 5000, 'Older Person', '2010-01-01');
    const unit = ['s.tenant_id = $2 AND s.unit_id = $3', [other.tenant.id, other.unit1.id]] as const;
    for (const fragment of ['zebrafin', 'quokkas']) {
      const expected = await oracle('studies', unit[0], [...unit[1]], fragment);
      expect(expected.length).toBeGreaterThan(1000);
      for (const token of [other.token1, other.adminToken]) {
        await expectPages('/api/studies', token, fragment, expected, 15, [1, 2, 3, 34, 66, 67, 68]);
        // Asked again (the count kept, pages 1-3 read by the ids their walks met): the same pages.
        await expectPages('/api/studies', token, fragment, expected, 15, [1, 2, 3, 4, 67]);
      }
    }
    const exactly = await t.http.get('/api/studies', { token: other.token1, query: { search: 'nobody else' } });
    expect(exactly.body).toMatchObject({ total: 400, total_exact: true, last_page: 27 });

    // Patients in name order: 1,101 matches after 2,600 names that come first (collected, then
    // walked from the first match, whose name comes before the others'), in a clinic of 10,101.
    const patients = (from: number, count: number, name: string) =>
      t.db.query(
        `INSERT INTO patients (tenant_id, patient_id, patient_name)
         SELECT $1, 'QP' || n, $2 FROM generate_series(${from}, ${from + count - 1}) AS n`,
        [other.tenant.id, name],
      );
    await patients(1, 1, 'Yak Quokkapat');
    await patients(2, 1100, 'Zed Quokkapat');
    await patients(2000, 2600, 'Newer Person');
    await patients(5000, SMALL_SCOPE_ROWS - 3700, 'Older Person');
    const expected = await oracle('patients', 'p.tenant_id = $2', [other.tenant.id], 'quokkapat');
    expect(expected.length).toBeGreaterThan(1000);
    await expectPages('/api/patients', other.adminToken, 'quokkapat', expected, 20, [1, 2, 3, 25, 50, 51]);
    await expectPages('/api/patients', other.adminToken, 'quokkapat', expected, 20, [1, 2, 3, 4, 50]);
  });

  it("a study whose date moves after a search walked from its date is still on the search's pages", async () => {
    // 1,101 matches under 2,600 newer non-matches in a unit of 10,101: page 1 is collected and the
    // later pages walk from the first match's date (2016-06-01). Ingesting that study again with a
    // newer date moves it to the top of the list order, above where the walk starts.
    const moved = await createClinic(t.db, t.http);
    const insert = (from: number, count: number, name: string, day: string) =>
      t.db.query(
        `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date)
         SELECT $1, $2, 'moved-' || n, '1.2.82.' || n, 'MV' || n, $3, date '${day}' - (n % 3)
           FROM generate_series(${from}, ${from + count - 1}) AS n`,
        [moved.tenant.id, moved.unit1.id, name],
      );
    await insert(1, 1, 'Deep Walrusson', '2016-06-01');
    await insert(2, 1100, 'Deep Walrusson', '2015-01-01');
    await insert(2000, 2600, 'Newer Person', '2020-01-01');
    await insert(5000, SMALL_SCOPE_ROWS - 3600, 'Older Person', '2010-01-01');
    const unit = ['s.tenant_id = $2 AND s.unit_id = $3', [moved.tenant.id, moved.unit1.id]] as const;
    const tokens = [moved.token1, moved.adminToken];
    const before = await oracle('studies', unit[0], [...unit[1]], 'walruss');
    for (const token of tokens) await expectPages('/api/studies', token, 'walruss', before, 15, [1, 2]);

    // As ingestion saves a study it already has: the upsert on imgsrv_study_id with the new date.
    await t.db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date)
       VALUES ($1, $2, 'moved-1', '1.2.82.1', 'MV1', 'Deep Walrusson', date '2024-01-01')
       ON CONFLICT (imgsrv_study_id) DO UPDATE SET study_date = EXCLUDED.study_date, updated_at = now()`,
      [moved.tenant.id, moved.unit1.id],
    );
    const after = await oracle('studies', unit[0], [...unit[1]], 'walruss');
    const [{ id: first }] = await t.db.query(`SELECT id FROM studies WHERE imgsrv_study_id = 'moved-1'`);
    expect(after[0]).toBe(first);
    for (const token of tokens) await expectPages('/api/studies', token, 'walruss', after, 15, [1, 2, 67, 68]);
  });

  it("a clinic whose id starts like another's (the terms' key) finds only its own studies and patients", async () => {
    // The search terms carry the first 8 hex digits of the clinic's id; two clinics that share them
    // share terms, and the scope's own condition must still keep each to its own rows.
    const twinId = `${clinic.tenant.id.slice(0, 8)}-0000-4000-8000-${String(seed).padStart(12, '0')}`;
    await t.db.query(`INSERT INTO tenants (id, name, slug, is_active) VALUES ($1, $2, $2, true)`, [twinId, `twin-${seed}`]);
    const [unit] = await t.db.query(`INSERT INTO units (tenant_id, name, slug) VALUES ($1, 'Twin', 'twin') RETURNING id`, [
      twinId,
    ]);
    await t.db.query(
      `WITH p AS (INSERT INTO patients (tenant_id, patient_id, patient_name)
                  SELECT $1, 'TW' || n, 'Twinkle Mirrorson' FROM generate_series(1, 30) AS n RETURNING id, patient_id)
       INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date)
       SELECT $1, $2, p.id, 'twin-' || p.patient_id, '1.2.80.' || substr(p.patient_id, 3), p.patient_id, 'Twinkle Mirrorson', date '2025-01-01'
         FROM p`,
      [twinId, unit.id],
    );
    await t.db.query(
      `WITH p AS (INSERT INTO patients (tenant_id, patient_id, patient_name) VALUES ($1, 'OWN-TW', 'Twinkle Mirrorson') RETURNING id)
       INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date)
       SELECT $1, $2, p.id, 'own-twin', '1.2.81.1', 'OWN-TW', 'Twinkle Mirrorson', date '2025-01-01' FROM p`,
      [clinic.tenant.id, clinic.unit1.id],
    );
    for (const fragment of ['twinkle', 'le mirr', 'mirrorson']) {
      for (const url of ['/api/studies', '/api/patients']) {
        const own = await t.http.get(url, { token: clinic.adminToken, query: { search: fragment } });
        expect({ url, fragment, total: own.body.total }).toEqual({ url, fragment, total: 1 });
        expect(own.body.data[0].patient_id).toBe('OWN-TW');
      }
      const everyone = await t.http.get('/api/studies', { token: superToken, query: { search: fragment } });
      expect(everyone.body.total).toBe(31);
    }
  });

  it('every paginated list carries total_exact: true without a search', async () => {
    for (const url of ['/api/studies', '/api/patients', '/api/tenant/units']) {
      const response = await t.http.get(url, { token: clinic.adminToken });
      expect(response.status).toBe(200);
      expect(response.body.total_exact).toBe(true);
    }
    const admin = await t.http.get('/api/admin/tenants', { token: superToken, query: { search: 'a' } });
    expect(admin.status).toBe(200);
    expect(admin.body.total_exact).toBe(true);
  });

  it("the super admin's later pages: a match in another clinic after the count is found", async () => {
    const word = `Kv${Array.from({ length: 8 }, () => pick(WORDS)[0]).join('')}${seed}`;
    // Page 1 holds the clinic's matches only; page 2 the other clinic's one.
    for (let n = 0; n < 16; n++) {
      await createStudy(t.db, {
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        patient_name: `Ana ${word}`,
        study_date: '2025-06-01',
      });
    }
    await createStudy(t.db, {
      tenant_id: other.tenant.id,
      unit_id: other.unit2.id,
      patient_name: `Rui ${word}`,
      study_date: '2001-01-01',
    });
    await expectPages('/api/studies', superToken, word, await oracle('studies', 'TRUE', [], word), 15);

    const third = await createTenant(t.db);
    const unit = await createUnit(t.db, third.id);
    await createStudy(t.db, { tenant_id: third.id, unit_id: unit.id, patient_name: `Eva ${word}`, study_date: '2000-01-01' });
    const expected = await oracle('studies', 'TRUE', [], word);
    expect(expected).toHaveLength(18);
    await expectPages('/api/studies', superToken, word, expected, 15, [2, 1, 2]);
  });
});
