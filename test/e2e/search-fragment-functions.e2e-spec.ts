/**
 * Migration SearchFragmentFunctions rewrites search_fold, search_piece and search_tenant_query in
 * PL/pgSQL for speed. What a search finds and counts depends on their answers, so each answers
 * exactly as its SQL definition (the migration's down()) does, on random fragments cut where
 * people cut them (accents, case, separators, digits, LIKE's own characters, the piece separator).
 */
import { QueryRunner } from 'typeorm';
import { SearchFragmentFunctions1796200000000 } from '../../src/database/migrations/1796200000000-SearchFragmentFunctions';
import { Prng } from '../fuzz/support/prng';
import { createTestApp, TestApp } from '../support/app';

const WORDS = ['JOÃO', 'maria', 'Rodríguez', 'conceição', 'São', "D'Ávila", 'van-der-berg', 'ÆLFRED', 'Straße', 'da'];
const ODD = ['%', '_', '\\', "'", ' ', '  ', '-', '/', '^', '\u001f', '2409', '00060453', '7', ''];

/** The SQL definitions the migration replaces, as functions of this session (pg_temp). */
async function previousDefinitions(runner: QueryRunner): Promise<void> {
  const statements: string[] = [];
  const recorder = { query: async (sql: string) => void statements.push(sql) } as unknown as QueryRunner;
  await new SearchFragmentFunctions1796200000000().down(recorder);
  expect(statements).toHaveLength(3);
  for (const sql of statements) {
    await runner.query(
      sql
        .replace(/FUNCTION search_(\w+)/, 'FUNCTION pg_temp.search_$1')
        .replace(/(?<!\.)search_fold\(/g, 'pg_temp.search_fold('),
    );
  }
}

describe('search fragment functions (PL/pgSQL) answer as their SQL definitions', () => {
  let t: TestApp;
  let runner: QueryRunner;
  const seed = Number(process.env.SEARCH_SEED ?? Date.now() % 1_000_000);
  const prng = new Prng(seed);

  beforeAll(async () => {
    t = await createTestApp();
    runner = t.db.createQueryRunner();
    await runner.connect();
    await previousDefinitions(runner);
  });

  afterAll(async () => {
    await runner?.release();
    await t?.close();
  });

  it(`agree on 3,000 random fragments (seed ${seed})`, async () => {
    const fragments = Array.from({ length: 3_000 }, () => {
      const text = Array.from({ length: 1 + Math.floor(prng.next() * 4) }, () =>
        prng.next() < 0.7 ? prng.pick(WORDS) : prng.pick(ODD),
      ).join(prng.pick([' ', '', '^', '-']));
      const start = Math.floor(prng.next() * text.length);
      return text.slice(start, start + 1 + Math.floor(prng.next() * 12));
    });
    const [row] = await runner.query(
      `SELECT count(*)::int AS fragments,
              count(*) FILTER (WHERE search_piece(f) IS NOT NULL)::int AS pieces,
              count(*) FILTER (WHERE search_query(f) IS NOT NULL)::int AS queries,
              array_agg(f) FILTER (WHERE search_fold(f) IS DISTINCT FROM pg_temp.search_fold(f)) AS folds,
              array_agg(f) FILTER (WHERE search_piece(f) IS DISTINCT FROM pg_temp.search_piece(f)) AS piece_differs,
              array_agg(f) FILTER (WHERE search_tenant_query($2, f)::text IS DISTINCT FROM pg_temp.search_tenant_query($2, f)::text) AS query_differs
         FROM unnest($1::text[]) f`,
      [fragments, '3f0c2a9e-1b7d-4c55-9a43-0d2e8f6b7c11'],
    );
    expect(row).toEqual({
      fragments: 3_000,
      pieces: expect.any(Number),
      queries: expect.any(Number),
      folds: null,
      piece_differs: null,
      query_differs: null,
    });
    // The fragments reach every branch: pieces, indexed fragments, and neither.
    expect(row.pieces).toBeGreaterThan(300);
    expect(row.queries).toBeGreaterThan(row.pieces);
    expect(row.queries).toBeLessThan(3_000);
  });

  it('are PL/pgSQL now, so that a call does not plan their bodies again', async () => {
    const languages = await runner.query(
      `SELECT p.proname AS name, l.lanname AS language FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
        WHERE p.proname IN ('search_fold', 'search_piece', 'search_tenant_query') AND p.pronamespace = 'public'::regnamespace
        ORDER BY 1`,
    );
    expect(languages).toEqual([
      { name: 'search_fold', language: 'plpgsql' },
      { name: 'search_piece', language: 'plpgsql' },
      { name: 'search_tenant_query', language: 'plpgsql' },
    ]);
  });
});
