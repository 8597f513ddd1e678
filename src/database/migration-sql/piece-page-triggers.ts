// SQL of the SearchPiecePages migration, and what the list code and the tests read of it. Not in
// migrations/: TypeORM loads every function a file there exports as a migration class.

/** The kept first pages: per tenant and piece, the first studies in list order (SearchPiecePages). */
export const PIECE_PAGES_TABLE = 'study_tenant_piece_pages';

/** How many studies a kept page holds: the studies list's page (GET /api/studies, 15 per page). */
export const PIECE_PAGE_ROWS = 15;

/**
 * How many studies a page holds at most: a page holds its piece's first studies, from
 * PIECE_PAGE_ROWS to this many, so that a study leaving it (deleted, moved, renamed, redated) has
 * it refilled only once in a few times.
 */
export const PIECE_PAGE_KEPT_ROWS = 20;

/**
 * A piece's page is kept from this many matches in the tenant. Below it, a first search collects
 * its matches through the search index in about what a kept page's read costs (0.88 ms a statement
 * for fewer than 50 matches, bench/README.md "Seventeenth round"), and the pieces of so few
 * studies are most of a clinic's: keeping their pages would be a posting of every study for each.
 */
export const PIECE_PAGE_MIN_MATCHES = 50;

// The rows a changed study is handled by: what the list order and the pieces read of it.
const PAGE_ROW_TYPE = 'study_piece_page_row';
const PAGE_ROW_COLUMNS = 'id, tenant_id, study_date, created_at, search_text';

// The advisory lock class of the pages' writers (pg_advisory_xact_lock(class, tenant)).
const PAGES_LOCK_CLASS = 1_796_800;

const LIST_ORDER = (alias: string, id = 'id') => `${alias}.study_date DESC, ${alias}.created_at DESC, ${alias}.${id} DESC`;

/**
 * PL/pgSQL: the first PIECE_PAGE_KEPT_ROWS studies of a page (`key`: a record of tenant_id, piece
 * and matches) into the pages, by the fragment's LIKE: for up to a few thousand matches collected
 * through the tenant's search terms and sorted (a heap visit each: 50-600 matches took about 2 ms
 * in the first-search stream), else by a walk of the tenant's list order (its text beside each key)
 * until they are found, which a common piece ends soon.
 */
function refillPiecePageSql(key: string): string {
  const pattern = `'%' || replace(replace(replace(${key}.piece, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%'`;
  const insert = `INSERT INTO ${PIECE_PAGES_TABLE} (tenant_id, piece, study_date, created_at, study_id)
           SELECT s.tenant_id, ${key}.piece, s.study_date, s.created_at, s.id FROM studies s`;
  return `IF ${key}.matches <= ${REFILL_COLLECT_MAX} AND search_query(${key}.piece) IS NOT NULL THEN
           ${insert}
            WHERE search_tenant_lexemes(s.tenant_id, s.search_text) @@ search_tenant_query(${key}.tenant_id, ${key}.piece)
              AND s.tenant_id = ${key}.tenant_id AND s.search_text LIKE ${pattern}
            -- date + 0: an order no index provides, so the matches are collected, not walked.
            ORDER BY (s.study_date + 0) DESC, s.created_at DESC, s.id DESC LIMIT ${PIECE_PAGE_KEPT_ROWS};
         ELSE
           ${insert}
            WHERE s.tenant_id = ${key}.tenant_id AND s.search_text LIKE ${pattern}
            ORDER BY ${LIST_ORDER('s')} LIMIT ${PIECE_PAGE_KEPT_ROWS};
         END IF;`;
}

// Up to this many matches a page is refilled through the search index; past it, by a walk.
const REFILL_COLLECT_MAX = 5_000;

/** The functions and the type the pages are kept with (read the migration's comment first). */
export const PIECE_PAGE_FUNCTIONS_SQL: string[] = [
  `CREATE TYPE ${PAGE_ROW_TYPE} AS (id uuid, tenant_id uuid, study_date date, created_at timestamptz, search_text text)`,
  // A study's pieces of both kinds: the fragments whose total a piece count holds, and so whose
  // matches are exactly the studies with that piece.
  `CREATE FUNCTION search_page_pieces(folded text) RETURNS text[]
     LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
     AS $$ SELECT ARRAY(SELECT DISTINCT unnest(search_pieces(folded) || search_tenant_pieces(folded))) $$`,
  // A piece's matches in a tenant, as the list code reads them (listSearchCountSql): a piece of one
  // word summed over the tenant's units, or a tenant piece. A piece is of one kind only; greatest()
  // would still be exact if one text were both, as both would count the same studies.
  `CREATE FUNCTION search_piece_tenant_matches(tenant uuid, piece text) RETURNS bigint
     LANGUAGE sql STABLE PARALLEL SAFE
     AS $$ SELECT greatest(
             (SELECT coalesce(sum(c.studies), 0) FROM study_piece_counts c WHERE c.piece = $2 AND c.tenant_id = $1),
             (SELECT coalesce(sum(c.studies), 0) FROM study_tenant_piece_counts c WHERE c.piece = $2 AND c.tenant_id = $1)) $$`,
  // Every page a statement touches, one at a time: the studies of `gone` leave it; a page left
  // shorter than a page, or of a piece that reached enough matches, gets its first studies again
  // (refillPiecePageSql); else the studies of `came` join it where they are ahead of its last row,
  // and it keeps at most PIECE_PAGE_KEPT_ROWS; a piece with too few matches now loses its page.
  // Each statement reads one page by its key: with the pages' statistics those of an empty table
  // (a new install, a test's database), a join chose to scan the whole table for every row
  // (a 10,500-study insert took 171 s), so a plan never scans it (enable_seqscan off). Called by
  // the triggers after the piece counts' own (trigger names fire in alphabetical order), so the
  // counts are this statement's.
  `CREATE FUNCTION study_tenant_piece_pages_keep(gone ${PAGE_ROW_TYPE}[], came ${PAGE_ROW_TYPE}[]) RETURNS void
     LANGUAGE plpgsql SET enable_seqscan = off AS $$
     DECLARE
       page record;
       rows int;
     BEGIN
       IF cardinality(gone) = 0 AND cardinality(came) = 0 THEN
         RETURN;
       END IF;
       -- One writer at a time per tenant keeps its pages, until it commits: two units' writers of
       -- one piece of one word lock no count row in common, and would trim or refill a page each
       -- from what the other had not committed yet. Tenants in order, as every writer takes them.
       PERFORM pg_advisory_xact_lock(${PAGES_LOCK_CLASS}, hashtext(t.tenant_id::text))
          FROM (SELECT DISTINCT r.tenant_id FROM (SELECT * FROM unnest(gone) UNION ALL SELECT * FROM unnest(came)) r
                 ORDER BY 1) t;
       -- Each study's pieces listed once (about 0.1 ms a study), grouped by page.
       FOR page IN
         SELECT r.tenant_id, x.piece, search_piece_tenant_matches(r.tenant_id, x.piece) AS matches,
                array_agg(r.id) FILTER (WHERE NOT r.came) AS gone_ids,
                array_agg(r.study_date) FILTER (WHERE r.came) AS came_dates,
                array_agg(r.created_at) FILTER (WHERE r.came) AS came_created,
                array_agg(r.id) FILTER (WHERE r.came) AS came_ids
           FROM (SELECT g.*, false AS came FROM unnest(gone) g UNION ALL SELECT c.*, true FROM unnest(came) c) r,
                unnest(search_page_pieces(r.search_text)) x(piece)
          GROUP BY r.tenant_id, x.piece
          ORDER BY r.tenant_id, x.piece
       LOOP
         IF page.matches < ${PIECE_PAGE_MIN_MATCHES} THEN
           -- Only a study that went can take a piece below: no page for the others.
           IF page.gone_ids IS NOT NULL THEN
             DELETE FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = page.tenant_id AND piece = page.piece;
           END IF;
           CONTINUE;
         END IF;
         IF page.gone_ids IS NOT NULL THEN
           DELETE FROM ${PIECE_PAGES_TABLE}
            WHERE tenant_id = page.tenant_id AND piece = page.piece AND study_id = ANY(page.gone_ids);
           SELECT count(*) INTO rows FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = page.tenant_id AND piece = page.piece;
         ELSE
           -- Only studies came: the page is whole, unless the piece had too few matches before them.
           rows := CASE WHEN page.matches - cardinality(page.came_ids) < ${PIECE_PAGE_MIN_MATCHES} THEN 0 END;
         END IF;
         IF rows < ${PIECE_PAGE_ROWS} THEN
           -- The studies are this statement's: the refilled page has whichever came that belong on it.
           DELETE FROM ${PIECE_PAGES_TABLE} WHERE tenant_id = page.tenant_id AND piece = page.piece;
           ${refillPiecePageSql('page')}
           CONTINUE;
         END IF;
         CONTINUE WHEN page.came_ids IS NULL;
         -- A page is its piece's first studies up to its last row: a study ahead of that row is one
         -- of them, and one behind it may have others before it.
         INSERT INTO ${PIECE_PAGES_TABLE} (tenant_id, piece, study_date, created_at, study_id)
         SELECT page.tenant_id, page.piece, c.study_date, c.created_at, c.id
           FROM unnest(page.came_dates, page.came_created, page.came_ids) c(study_date, created_at, id)
          WHERE (c.study_date, c.created_at, c.id) > (
                  SELECT q.study_date, q.created_at, q.study_id FROM ${PIECE_PAGES_TABLE} q
                   WHERE q.tenant_id = page.tenant_id AND q.piece = page.piece
                   ORDER BY q.study_date, q.created_at, q.study_id LIMIT 1)
         ON CONFLICT DO NOTHING;
         IF FOUND THEN
           DELETE FROM ${PIECE_PAGES_TABLE}
            WHERE tenant_id = page.tenant_id AND piece = page.piece
              AND (study_date, created_at, study_id) < (
                    SELECT q.study_date, q.created_at, q.study_id FROM ${PIECE_PAGES_TABLE} q
                     WHERE q.tenant_id = page.tenant_id AND q.piece = page.piece
                     ORDER BY ${LIST_ORDER('q', 'study_id')} OFFSET ${PIECE_PAGE_KEPT_ROWS - 1} LIMIT 1);
         END IF;
       END LOOP;
     END $$`,
  `CREATE FUNCTION ${PIECE_PAGES_TABLE}_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       PERFORM study_tenant_piece_pages_keep('{}', ARRAY(SELECT (${PAGE_ROW_COLUMNS})::${PAGE_ROW_TYPE} FROM new_rows));
       RETURN NULL;
     END $$`,
  `CREATE FUNCTION ${PIECE_PAGES_TABLE}_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       PERFORM study_tenant_piece_pages_keep(ARRAY(SELECT (${PAGE_ROW_COLUMNS})::${PAGE_ROW_TYPE} FROM old_rows), '{}');
       RETURN NULL;
     END $$`,
  // Only the rows whose order, tenant or text changed (a report's status changes none of them).
  `CREATE FUNCTION ${PIECE_PAGES_TABLE}_on_update() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       PERFORM study_tenant_piece_pages_keep(
         ARRAY(SELECT (${PAGE_ROW_COLUMNS})::${PAGE_ROW_TYPE}
                 FROM (SELECT ${PAGE_ROW_COLUMNS} FROM old_rows EXCEPT ALL SELECT ${PAGE_ROW_COLUMNS} FROM new_rows) r),
         ARRAY(SELECT (${PAGE_ROW_COLUMNS})::${PAGE_ROW_TYPE}
                 FROM (SELECT ${PAGE_ROW_COLUMNS} FROM new_rows EXCEPT ALL SELECT ${PAGE_ROW_COLUMNS} FROM old_rows) r));
       RETURN NULL;
     END $$`,
  `CREATE FUNCTION ${PIECE_PAGES_TABLE}_on_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       TRUNCATE ${PIECE_PAGES_TABLE};
       RETURN NULL;
     END $$`,
];

/**
 * The triggers: named after the piece counts' (studies_tenant_piece_counts_*), so they fire after
 * both piece counts' triggers of the statement and read its counts.
 */
export const PIECE_PAGE_TRIGGERS_SQL: string[] = [
  ...(
    [
      ['insert', 'INSERT', 'NEW TABLE AS new_rows'],
      ['delete', 'DELETE', 'OLD TABLE AS old_rows'],
      ['update', 'UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
    ] as const
  ).map(
    ([event, upper, transition]) =>
      `CREATE TRIGGER studies_tenant_piece_pages_${event} AFTER ${upper} ON studies
         REFERENCING ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${PIECE_PAGES_TABLE}_on_${event}()`,
  ),
  `CREATE TRIGGER studies_tenant_piece_pages_truncate AFTER TRUNCATE ON studies
     FOR EACH STATEMENT EXECUTE FUNCTION ${PIECE_PAGES_TABLE}_on_truncate()`,
];

// Studies read at a time per tenant while the pages are built (rebuild_study_tenant_piece_pages).
const REBUILD_CHUNK = 5_000;

/**
 * rebuild_study_tenant_piece_pages(): every page from scratch, from the piece counts (rebuilt
 * first). Per tenant, its studies are read in list order a chunk at a time and their pieces that
 * still want rows take them, until none wants more or the studies end: each study's pieces are
 * listed once, and only the rows of pieces still wanted are sorted, where ranking every piece of
 * every study at once sorted a posting per piece and study.
 */
export const REBUILD_PIECE_PAGES_SQL = `
  CREATE FUNCTION rebuild_study_tenant_piece_pages() RETURNS void LANGUAGE plpgsql AS $$
  DECLARE
    tenant uuid;
    last_date date;
    last_created timestamptz;
    last_id uuid;
    walked int;
  BEGIN
    -- Writers wait while the pages are built, so they are exact.
    LOCK TABLE studies IN SHARE MODE;
    TRUNCATE ${PIECE_PAGES_TABLE};
    PERFORM set_config('work_mem', '64MB', true);
    DROP TABLE IF EXISTS pg_temp.piece_pages_wanted, pg_temp.piece_pages_chunk;
    CREATE TEMP TABLE piece_pages_wanted (tenant_id uuid, piece text, missing int NOT NULL, PRIMARY KEY (tenant_id, piece));
    CREATE TEMP TABLE piece_pages_chunk (id uuid, study_date date, created_at timestamptz, search_text text);
    INSERT INTO piece_pages_wanted (tenant_id, piece, missing)
    SELECT c.tenant_id, c.piece, ${PIECE_PAGE_KEPT_ROWS}
      FROM (SELECT tenant_id, piece, sum(studies) AS matches FROM study_piece_counts GROUP BY 1, 2
            UNION ALL
            SELECT tenant_id, piece, studies FROM study_tenant_piece_counts) c
     GROUP BY 1, 2 HAVING max(c.matches) >= ${PIECE_PAGE_MIN_MATCHES};
    ANALYZE piece_pages_wanted;
    FOR tenant IN SELECT DISTINCT w.tenant_id FROM piece_pages_wanted w ORDER BY 1 LOOP
      last_date := 'infinity';
      last_created := 'infinity';
      last_id := 'ffffffff-ffff-ffff-ffff-ffffffffffff';
      LOOP
        TRUNCATE piece_pages_chunk;
        INSERT INTO piece_pages_chunk
        SELECT s.id, s.study_date, s.created_at, s.search_text FROM studies s
         WHERE s.tenant_id = tenant AND (s.study_date, s.created_at, s.id) < (last_date, last_created, last_id)
         ORDER BY ${LIST_ORDER('s')} LIMIT ${REBUILD_CHUNK};
        GET DIAGNOSTICS walked = ROW_COUNT;
        EXIT WHEN walked = 0;
        WITH kept AS (
          INSERT INTO ${PIECE_PAGES_TABLE} (tenant_id, piece, study_date, created_at, study_id)
          SELECT tenant, r.piece, r.study_date, r.created_at, r.id
            FROM (SELECT x.piece, c.study_date, c.created_at, c.id, w.missing,
                         row_number() OVER (PARTITION BY x.piece ORDER BY ${LIST_ORDER('c')}) AS n
                    FROM piece_pages_chunk c, unnest(search_page_pieces(c.search_text)) x(piece), piece_pages_wanted w
                   WHERE w.tenant_id = tenant AND w.piece = x.piece) r
           WHERE r.n <= r.missing
          RETURNING piece)
        UPDATE piece_pages_wanted w SET missing = w.missing - k.rows
          FROM (SELECT piece, count(*) AS rows FROM kept GROUP BY piece) k
         WHERE w.tenant_id = tenant AND w.piece = k.piece;
        DELETE FROM piece_pages_wanted w WHERE w.tenant_id = tenant AND w.missing <= 0;
        EXIT WHEN walked < ${REBUILD_CHUNK} OR NOT EXISTS (SELECT 1 FROM piece_pages_wanted w WHERE w.tenant_id = tenant);
        SELECT c.study_date, c.created_at, c.id INTO last_date, last_created, last_id
          FROM piece_pages_chunk c ORDER BY c.study_date, c.created_at, c.id LIMIT 1;
      END LOOP;
    END LOOP;
    DROP TABLE piece_pages_wanted, piece_pages_chunk;
  END $$`;

/**
 * The ids of a kept page, `limit` of them from `offset`, named `id`, for a tenant and a piece (SQL
 * expressions): a range of the pages' primary key read backwards, the list order.
 */
export const piecePageIdsSql = (tenant: string, piece: string, limit: number, offset: number): string =>
  `SELECT pg.study_id AS id FROM ${PIECE_PAGES_TABLE} pg WHERE pg.tenant_id = ${tenant} AND pg.piece = ${piece}
    ORDER BY ${LIST_ORDER('pg', 'study_id')} LIMIT ${limit} OFFSET ${offset}`;
