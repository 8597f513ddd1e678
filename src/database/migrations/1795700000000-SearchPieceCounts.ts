import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Exact search totals without visiting a row per match (bench/README.md, "Search totals").
 *
 * A fragment typed without a break ("rigue", "ilva", "0006") matches a record exactly when it is a
 * substring of one of the record's words (runs of letters and digits, as search_lexemes splits
 * them): `search_text LIKE '%rigue%'` cannot match across a separator when the fragment has none.
 * So the number of records of a scope that match it is the number of records that have it among the
 * distinct substrings of their words: a count kept per (piece, tenant, unit) answers the total
 * with an index-only read of one row per unit, where the search index had to visit a heap block per
 * match (PostgreSQL 15 has no index-only bitmap count).
 *
 * - `search_pieces(search_text)`: the distinct pieces of a record: every substring of 3 or 4
 *   characters of every word, and every longer one that holds no digit. Ids and accession numbers
 *   (digits, nearly unique) would otherwise add tens of unique pieces per record; a fragment of 5+
 *   characters with a digit in it matches few records and keeps the search index's count.
 * - `search_piece(fragment)`: the folded fragment when it is such a piece, else NULL (then the
 *   total is counted through the search index, as before).
 * - `study_piece_counts (piece, tenant_id, unit_id, studies)` and `patient_piece_counts (piece,
 *   tenant_id, patients)`, kept by statement-level triggers with transition tables as study_counts
 *   and patient_counts are (ListCounters): one upsert per statement and per key touched, keys in
 *   order so concurrent writers lock them in the same order. They change in the same statements
 *   as those counters, whose version bumps (any change of a name, id, accession number, unit or
 *   tenant) keep ListTotals' kept totals exact. Rows that fall to zero stay (a later record with
 *   the piece reuses them); rebuild_list_counts() drops them.
 * - The primary key INCLUDEs the count, so a sum over a scope is an index-only scan.
 * No foreign keys: a row-level check per upserted piece would cost more than the upsert, and a
 * deleted tenant or unit deletes its studies, whose trigger brings the counts to zero.
 */
// The body of rebuild_list_counts() as ListCounters created it (restored by down()).
const REBUILD_LIST_COUNTS = `
        -- Writers wait while the recount runs, so the result is exact.
        LOCK TABLE studies, patients IN SHARE MODE;
        DELETE FROM study_counts;
        INSERT INTO study_counts (tenant_id, unit_id, studies, version)
        SELECT tenant_id, unit_id, count(*), nextval('list_counts_version')
          FROM studies GROUP BY tenant_id, unit_id;
        DELETE FROM patient_counts;
        INSERT INTO patient_counts (tenant_id, patients, version)
        SELECT tenant_id, count(*), nextval('list_counts_version') FROM patients GROUP BY tenant_id;
`;

/**
 * The pieces of one word (`word`, `len`) appended to `pieces`: every substring of 3 or 4
 * characters, and every longer one without a digit (SearchEdgePieces keeps the same rule).
 */
export const PIECES_INSIDE_WORD = `            digits := word ~ '[[:digit:]]';
            FOR i IN 1 .. len - 2 LOOP
              FOR n IN 3 .. len - i + 1 LOOP
                piece := substr(word, i, n);
                EXIT WHEN digits AND n > 4 AND piece ~ '[[:digit:]]';
                pieces := pieces || piece;
              END LOOP;
            END LOOP;`;

/**
 * search_pieces() and search_piece() as this migration created them, exported for the down() of
 * the migration that widens them (SearchEdgePieces) to restore exactly.
 *
 * A loop, not a query: a set-returning query over regexp_split_to_table and generate_series is
 * estimated at millions of rows, and JIT then compiled it on every call (1 s each). A piece of 5+
 * characters with a digit ends the longer pieces from that start (they hold it too).
 */
export const SEARCH_PIECES_BY_WORD = `
      CREATE OR REPLACE FUNCTION search_pieces(folded text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          word text;
          piece text;
          pieces text[] := '{}';
          len int;
          digits boolean;
        BEGIN
          FOREACH word IN ARRAY regexp_split_to_array(folded, '[^[:alnum:]]+') LOOP
            len := length(word);
            CONTINUE WHEN len < 3;
${PIECES_INSIDE_WORD}
          END LOOP;
          RETURN ARRAY(SELECT DISTINCT unnest(pieces));
        END
        $$`;
export const SEARCH_PIECE_BY_WORD = `
      CREATE OR REPLACE FUNCTION search_piece(fragment text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        SELECT CASE WHEN search_fold(fragment) ~ '^[[:alnum:]]{3,}$'
                     AND (length(search_fold(fragment)) <= 4 OR search_fold(fragment) !~ '[[:digit:]]')
                    THEN search_fold(fragment) END
        $$`;

export class SearchPieceCounts1795700000000 implements MigrationInterface {
  name = 'SearchPieceCounts1795700000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(SEARCH_PIECES_BY_WORD);
    await q.query(SEARCH_PIECE_BY_WORD);

    await q.query(`
      CREATE TABLE study_piece_counts (
        piece text NOT NULL,
        tenant_id uuid NOT NULL,
        unit_id uuid NOT NULL,
        studies integer NOT NULL,
        PRIMARY KEY (piece, tenant_id, unit_id) INCLUDE (studies)
      )`);
    await q.query(`
      CREATE TABLE patient_piece_counts (
        piece text NOT NULL,
        tenant_id uuid NOT NULL,
        patients integer NOT NULL,
        PRIMARY KEY (piece, tenant_id) INCLUDE (patients)
      )`);

    // One function per table and event. `delta` rows: -1 per piece of a row that went, +1 per
    // piece of a row that came; an update counts only rows whose text or place changed (EXCEPT ALL
    // of the old and new versions), and pieces whose sum is zero are not written.
    for (const { prefix, counts, count, place } of [
      { prefix: 'study', counts: 'study_piece_counts', count: 'studies', place: ['tenant_id', 'unit_id'] },
      { prefix: 'patient', counts: 'patient_piece_counts', count: 'patients', place: ['tenant_id'] },
    ]) {
      const key = ['piece', ...place];
      const delta = (rows: string) => `
        INSERT INTO ${counts} AS c (${key.join(', ')}, ${count})
        SELECT ${key.map((k) => `d.${k}`).join(', ')}, sum(d.delta)
          FROM (${rows}) d
         GROUP BY ${key.map((k) => `d.${k}`).join(', ')}
        HAVING sum(d.delta) <> 0
         ORDER BY ${key.map((k) => `d.${k}`).join(', ')}
        ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${count} = c.${count} + EXCLUDED.${count}`;
      const pieces = (from: string, sign: number) =>
        `SELECT x.piece, ${place.map((k) => `r.${k}`).join(', ')}, ${sign} AS delta
           FROM ${from} r, unnest(search_pieces(r.search_text)) x(piece)`;
      const columns = ['id', ...place, 'search_text'].join(', ');
      const changed = (from: string, other: string) =>
        `(SELECT ${columns} FROM ${from} EXCEPT ALL SELECT ${columns} FROM ${other})`;
      for (const [event, rows] of [
        ['insert', pieces('new_rows', 1)],
        ['delete', pieces('old_rows', -1)],
        ['update', `${pieces(changed('old_rows', 'new_rows'), -1)} UNION ALL ${pieces(changed('new_rows', 'old_rows'), 1)}`],
      ]) {
        await q.query(`
          CREATE FUNCTION ${prefix}_piece_counts_on_${event}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            ${delta(rows)};
            RETURN NULL;
          END $$`);
      }
    }
    await q.query(`
      CREATE FUNCTION piece_counts_on_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_TABLE_NAME = 'studies' THEN
          TRUNCATE study_piece_counts;
        ELSE
          TRUNCATE patient_piece_counts;
        END IF;
        RETURN NULL;
      END $$`);

    for (const [table, prefix] of [
      ['studies', 'study'],
      ['patients', 'patient'],
    ]) {
      for (const [event, transition] of [
        ['INSERT', 'NEW TABLE AS new_rows'],
        ['DELETE', 'OLD TABLE AS old_rows'],
        ['UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
      ]) {
        await q.query(
          `CREATE TRIGGER ${table}_piece_counts_${event.toLowerCase()} AFTER ${event} ON ${table}
             REFERENCING ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${prefix}_piece_counts_on_${event.toLowerCase()}()`,
        );
      }
      await q.query(
        `CREATE TRIGGER ${table}_piece_counts_truncate AFTER TRUNCATE ON ${table}
           FOR EACH STATEMENT EXECUTE FUNCTION piece_counts_on_truncate()`,
      );
    }

    await q.query(`
      CREATE FUNCTION rebuild_search_piece_counts() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        -- Writers wait while the recount runs, so the result is exact.
        LOCK TABLE studies, patients IN SHARE MODE;
        TRUNCATE study_piece_counts, patient_piece_counts;
        INSERT INTO study_piece_counts (piece, tenant_id, unit_id, studies)
        SELECT x.piece, s.tenant_id, s.unit_id, count(*)
          FROM studies s, unnest(search_pieces(s.search_text)) x(piece)
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
        INSERT INTO patient_piece_counts (piece, tenant_id, patients)
        SELECT x.piece, p.tenant_id, count(*)
          FROM patients p, unnest(search_pieces(p.search_text)) x(piece)
         GROUP BY 1, 2 ORDER BY 1, 2;
      END $$`);
    // rebuild_list_counts() (ListCounters), which bulk loads call after loading with triggers off,
    // now recounts the pieces too.
    await q.query(`
      CREATE OR REPLACE FUNCTION rebuild_list_counts() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        ${REBUILD_LIST_COUNTS}
        PERFORM rebuild_search_piece_counts();
      END $$`);
    await q.query(`SELECT rebuild_search_piece_counts()`);
    await q.query(`ANALYZE study_piece_counts`);
    await q.query(`ANALYZE patient_piece_counts`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE OR REPLACE FUNCTION rebuild_list_counts() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        ${REBUILD_LIST_COUNTS}
      END $$`);
    await q.query(`DROP FUNCTION rebuild_search_piece_counts()`);
    for (const table of ['studies', 'patients']) {
      for (const event of ['insert', 'update', 'delete', 'truncate']) {
        await q.query(`DROP TRIGGER ${table}_piece_counts_${event} ON ${table}`);
      }
    }
    await q.query(`DROP FUNCTION piece_counts_on_truncate()`);
    for (const prefix of ['study', 'patient']) {
      for (const event of ['insert', 'update', 'delete']) await q.query(`DROP FUNCTION ${prefix}_piece_counts_on_${event}()`);
    }
    await q.query(`DROP TABLE patient_piece_counts`);
    await q.query(`DROP TABLE study_piece_counts`);
    await q.query(`DROP FUNCTION search_piece(text)`);
    await q.query(`DROP FUNCTION search_pieces(text)`);
  }
}
