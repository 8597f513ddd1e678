/**
 * A tenant admin's first page of a fragment that is one piece with 50 matches or more comes from
 * study_tenant_piece_pages (migration SearchPiecePages), kept by statement triggers. These tests
 * check, on random names, dates and operations, that:
 * - every kept page is its piece's first studies in list order, 15 to 20 of them, and every piece
 *   with 50 matches in a tenant has one, after inserts ahead of and behind the pages, renames,
 *   redates, moves between tenants, deletes (a page left short, a piece falling below 50) and
 *   rebuild_list_counts();
 * - the API's first page and total for the tenant admin are the fragment's LIKE, in list order.
 */
import { DataSource } from 'typeorm';
import { likePattern } from '../../src/common/pagination';
import {
  PIECE_PAGE_KEPT_ROWS,
  PIECE_PAGE_MIN_MATCHES,
  PIECE_PAGE_ROWS,
  PIECE_PAGES_TABLE,
} from '../../src/database/migration-sql/piece-page-triggers';
import { Prng } from '../fuzz/support/prng';
import { createTestApp, TestApp } from '../support/app';
import { createClinic } from '../support/factories';

jest.setTimeout(180_000);

const SURNAMES = ['SILVA', 'Silva', 'OLIVEIRA', 'Santos'];
const GIVEN = ['MARIA DA', 'Maria de Fátima', 'JOÃO', 'Ana', 'José Carlos', 'ANTÔNIO'];

/** The pages that are not their piece's first studies, and the pieces with 50 matches and no page. */
const PAGE_DRIFT_SQL = `
  WITH expected AS (
    SELECT r.tenant_id, r.piece, r.n, r.study_id
      FROM (SELECT s.tenant_id, x.piece, s.id AS study_id,
                   row_number() OVER (PARTITION BY s.tenant_id, x.piece ORDER BY s.study_date DESC, s.created_at DESC, s.id DESC) AS n,
                   count(*) OVER (PARTITION BY s.tenant_id, x.piece) AS matches
              FROM studies s, unnest(search_page_pieces(s.search_text)) x(piece)) r
     WHERE r.n <= ${PIECE_PAGE_KEPT_ROWS} AND r.matches >= ${PIECE_PAGE_MIN_MATCHES}),
  kept AS (
    SELECT tenant_id, piece, study_id,
           row_number() OVER (PARTITION BY tenant_id, piece ORDER BY study_date DESC, created_at DESC, study_id DESC) AS n,
           count(*) OVER (PARTITION BY tenant_id, piece) AS rows
      FROM ${PIECE_PAGES_TABLE})
  SELECT (SELECT count(*) FROM kept k LEFT JOIN expected e USING (tenant_id, piece, n)
           WHERE e.study_id IS DISTINCT FROM k.study_id OR k.rows NOT BETWEEN ${PIECE_PAGE_ROWS} AND ${PIECE_PAGE_KEPT_ROWS}) AS wrong,
         (SELECT count(*) FROM expected e
           WHERE e.n = 1 AND NOT EXISTS (SELECT 1 FROM kept k WHERE k.tenant_id = e.tenant_id AND k.piece = e.piece)) AS missing,
         (SELECT count(DISTINCT (tenant_id, piece)) FROM kept) AS pages`;

describe('kept first pages of one-piece fragments', () => {
  let t: TestApp;
  let db: DataSource;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  const seed = Number(process.env.SEARCH_SEED ?? Date.now() % 1_000_000);
  const prng = new Prng(seed);
  let round = 0;

  const randomName = () => `${prng.pick(SURNAMES)}^${prng.pick(GIVEN)}`;
  const randomDate = (from: number, years: number) =>
    `${from + prng.int(years)}-${String(1 + prng.int(12)).padStart(2, '0')}-${String(1 + prng.int(28)).padStart(2, '0')}`;

  /** `n` studies in one statement, in the clinic's two units, dated in `years` years from `from`. */
  const insertStudies = async (tenant: typeof clinic, n: number, from: number, years: number, name = randomName) => {
    const rows = Array.from({ length: n }, (_, i) => [
      i % 2 === 0 ? tenant.unit1.id : tenant.unit2.id,
      name(),
      `${String(prng.int(1000)).padStart(4, '0')}${prng.int(10)}`,
      `24${String(prng.int(100)).padStart(2, '0')}0${prng.int(100)}`,
      randomDate(from, years),
    ]);
    const found: Array<{ id: string }> = await db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_name, patient_id, accession_number, study_date)
       SELECT $1, r.unit_id, 'pages-' || gen_random_uuid(), '2.25.' || (random() * 1e15)::bigint, r.name, r.pid, r.acc, r.day
         FROM jsonb_to_recordset($2::jsonb) r(unit_id uuid, name text, pid text, acc text, day date)
       RETURNING id`,
      [tenant.tenant.id, JSON.stringify(rows.map(([unit_id, name, pid, acc, day]) => ({ unit_id, name, pid, acc, day })))],
    );
    return found.map((r) => r.id);
  };

  /** The ids on the clinic's kept pages, newest first: the studies an operation on a page reaches. */
  const pagedStudies = async (tenantId: string, n: number): Promise<string[]> => {
    const rows: Array<{ study_id: string }> = await db.query(
      `SELECT DISTINCT study_id, study_date, created_at FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = $1
        ORDER BY study_date DESC, created_at DESC LIMIT $2`,
      [tenantId, n],
    );
    return rows.map((r) => r.study_id);
  };

  /** A fragment as typed: its letters' case mixed differently each round, so the API's first search runs. */
  const typed = (fragment: string) =>
    [...fragment].map((c, i) => ((i + round) % (2 + (round % 3)) === 0 ? c.toUpperCase() : c.toLowerCase())).join('');

  const expectPagesExact = async (label: string) => {
    round++;
    const [drift] = await db.query(PAGE_DRIFT_SQL);
    expect({ label, seed, wrong: Number(drift.wrong), missing: Number(drift.missing) }).toEqual({
      label,
      seed,
      wrong: 0,
      missing: 0,
    });
    expect(Number(drift.pages)).toBeGreaterThan(0);

    // The fragments of the clinic whose pieces have pages, and a few that are not pieces.
    const kept: Array<{ piece: string }> = await db.query(
      `SELECT DISTINCT piece FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = $1 ORDER BY piece`,
      [clinic.tenant.id],
    );
    const pieces = kept.map((k) => k.piece);
    const fragments = new Set(['silva', 'ilva', 'a silva', ' souza^', 'maria da', 'xyz']);
    for (let i = 0; i < 12 && pieces.length > 0; i++) fragments.add(prng.pick(pieces));
    let fromPages = 0;
    for (const fragment of fragments) {
      const search = typed(fragment);
      const like: Array<{ id: string }> = await db.query(
        `SELECT id FROM studies WHERE tenant_id = $1 AND search_text LIKE search_fold($2)
          ORDER BY study_date DESC, created_at DESC, id DESC`,
        [clinic.tenant.id, likePattern(search)],
      );
      const [{ paged }] = await db.query(
        `SELECT count(*)::int AS paged FROM ${PIECE_PAGES_TABLE}
          WHERE tenant_id = $1 AND piece = coalesce(search_piece($2), search_tenant_piece($2))`,
        [clinic.tenant.id, search],
      );
      if (paged > 0) fromPages++;
      const res = await t.http.get('/api/studies', { token: clinic.adminToken, query: { search } });
      expect({ label, seed, search, status: res.status, total: res.body.total }).toEqual({
        label,
        seed,
        search,
        status: 200,
        total: like.length,
      });
      expect({ label, seed, search, ids: res.body.data.map((s: { id: string }) => s.id) }).toEqual({
        label,
        seed,
        search,
        ids: like.slice(0, PIECE_PAGE_ROWS).map((r) => r.id),
      });
    }
    expect(fromPages).toBeGreaterThan(0);

    // Page 2 of a kept fragment, asked before its page 1 (a key not seen yet): past the kept rows,
    // read by the plan.
    const search = typed('sílva');
    const second: Array<{ id: string }> = await db.query(
      `SELECT id FROM studies WHERE tenant_id = $1 AND search_text LIKE '%silva%'
        ORDER BY study_date DESC, created_at DESC, id DESC LIMIT ${PIECE_PAGE_ROWS} OFFSET ${PIECE_PAGE_ROWS}`,
      [clinic.tenant.id],
    );
    const res = await t.http.get('/api/studies', { token: clinic.adminToken, query: { search, page: '2' } });
    expect({ label, seed, search, status: res.status, ids: res.body.data?.map((s: { id: string }) => s.id) }).toEqual({
      label,
      seed,
      search,
      status: 200,
      ids: second.map((r) => r.id),
    });
  };

  beforeAll(async () => {
    t = await createTestApp();
    db = t.db;
    clinic = await createClinic(db, t.http);
    other = await createClinic(db, t.http);
  });
  afterAll(() => t.close());

  it('stay the first studies of their pieces through every change, and the API reads them', async () => {
    await insertStudies(clinic, 140, 2015, 8);
    // A piece that will fall below 50 matches and come back.
    await insertStudies(clinic, 60, 2015, 8, () => `${prng.pick(['SOUZA', 'Souza'])}^${prng.pick(GIVEN)}`);
    await insertStudies(other, 70, 2015, 8);
    await expectPagesExact('inserts');

    // One at a time, ahead of every page (the newest) and behind them (the oldest).
    for (let i = 0; i < 4; i++) await insertStudies(clinic, 1, 2030, 1);
    for (let i = 0; i < 3; i++) await insertStudies(clinic, 1, 1990, 1);
    await expectPagesExact('single inserts');

    const [renamed, redated, older, ...rest] = await pagedStudies(clinic.tenant.id, 12);
    await db.query(`UPDATE studies SET patient_name = 'Pereira^Lucas' WHERE id = $1`, [renamed]);
    await db.query(`UPDATE studies SET study_date = '1985-02-03' WHERE id = $1`, [redated]);
    await db.query(`UPDATE studies SET study_date = study_date - 400, patient_id = patient_id || '7' WHERE id = $1`, [older]);
    // A report's status changes nothing a page holds.
    await db.query(`UPDATE studies SET report_status = 'final' WHERE tenant_id = $1`, [clinic.tenant.id]);
    await expectPagesExact('renames and redates');

    await db.query(`UPDATE studies SET tenant_id = $1, unit_id = $2 WHERE id = ANY($3)`, [
      other.tenant.id,
      other.unit1.id,
      rest.slice(0, 4),
    ]);
    await expectPagesExact('moves');

    await db.query(`DELETE FROM studies WHERE id = ANY($1)`, [rest.slice(4)]);
    // A piece of the clinic falls below 50 matches: its page goes.
    const [{ n }] = await db.query(
      `SELECT count(*)::int AS n FROM studies WHERE tenant_id = $1 AND search_text LIKE '%souza%'`,
      [clinic.tenant.id],
    );
    expect(n).toBeGreaterThanOrEqual(PIECE_PAGE_MIN_MATCHES);
    await db.query(
      `DELETE FROM studies WHERE id IN (SELECT id FROM studies WHERE tenant_id = $1 AND search_text LIKE '%souza%' LIMIT $2)`,
      [clinic.tenant.id, n - PIECE_PAGE_MIN_MATCHES + 1],
    );
    const [{ pages }] = await db.query(
      `SELECT count(*)::int AS pages FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = $1 AND piece = 'souza'`,
      [clinic.tenant.id],
    );
    expect(pages).toBe(0);
    await expectPagesExact('deletes');

    // Back to 50 matches: the page comes back whole.
    await insertStudies(clinic, 1, 2016, 1, () => 'SOUZA^Rita');
    const [{ back }] = await db.query(
      `SELECT count(*)::int AS back FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = $1 AND piece = 'souza'`,
      [clinic.tenant.id],
    );
    expect(back).toBe(PIECE_PAGE_KEPT_ROWS);
    await expectPagesExact('a piece reaching 50 again');

    await db.query(`SELECT rebuild_list_counts()`);
    await expectPagesExact('rebuilt');
  });

  it("never shows a row a page names outside the caller's clinic: the page is read by the plan instead", async () => {
    const [{ piece }] = await db.query(
      `SELECT piece FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = $1 AND piece = 'silva' LIMIT 1`,
      [clinic.tenant.id],
    );
    const [{ id: foreign }] = await db.query(`SELECT id FROM studies WHERE tenant_id = $1 LIMIT 1`, [other.tenant.id]);
    // As a page gone wrong would: the other clinic's study at the top of this clinic's page.
    await db.query(
      `INSERT INTO ${PIECE_PAGES_TABLE} (tenant_id, piece, study_date, created_at, study_id) VALUES ($1, $2, '2099-01-01', now(), $3)`,
      [clinic.tenant.id, piece, foreign],
    );
    try {
      const like: Array<{ id: string }> = await db.query(
        `SELECT id FROM studies WHERE tenant_id = $1 AND search_text LIKE '%silva%'
          ORDER BY study_date DESC, created_at DESC, id DESC LIMIT ${PIECE_PAGE_ROWS}`,
        [clinic.tenant.id],
      );
      const res = await t.http.get('/api/studies', { token: clinic.adminToken, query: { search: 'SÍLVA' } });
      expect(res.status).toBe(200);
      expect(res.body.data.map((s: { id: string }) => s.id)).toEqual(like.map((r) => r.id));
    } finally {
      await db.query(`DELETE FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = $1 AND study_id = $2`, [clinic.tenant.id, foreign]);
    }
  });
});
