// SQL shared by migrations. Not in migrations/: TypeORM loads every function a file there exports
// as a migration class.

/**
 * A table of exact match counts per search piece, kept by statement-level triggers on the table
 * it counts (SearchPieceCounts, SearchPairPieces, SearchTenantPieces, SearchLongPairPieces,
 * SearchParticlePieces).
 */
export interface PieceCountTable {
  /** The counted table: `studies` or `patients`. */
  table: string;
  /** The counted record, in function names: `study` or `patient`. */
  record: string;
  /**
   * What the tables, functions and triggers are named after: `piece_counts`, `pair_piece_counts`,
   * `tenant_piece_counts`.
   */
  kind: string;
  /** The count column: `studies` or `patients`. */
  count: string;
  /** The columns a count is kept per, after the piece: `['tenant_id', 'unit_id']`. */
  place: string[];
  /** The SQL function giving a record's distinct pieces from its `search_text`. */
  pieces: string;
}

/** The counts table of `t`: `study_piece_counts`. */
export const pieceCountsTable = (t: PieceCountTable): string => `${t.record}_${t.kind}`;

const EVENTS = [
  ['insert', 'INSERT', 'NEW TABLE AS new_rows'],
  ['delete', 'DELETE', 'OLD TABLE AS old_rows'],
  ['update', 'UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
] as const;

/**
 * The trigger functions of `t`, one per event. `delta` rows: -1 per piece of a row that went, +1 per
 * piece of a row that came; an update counts only rows whose text or place changed (EXCEPT ALL of
 * the old and new versions), and pieces whose sum is zero are not written. One upsert per statement,
 * keys in order, so concurrent writers lock them in the same order.
 */
export function pieceCountFunctionsSql(t: PieceCountTable): string[] {
  const counts = pieceCountsTable(t);
  const key = ['piece', ...t.place];
  const delta = (rows: string) => `
        INSERT INTO ${counts} AS c (${key.join(', ')}, ${t.count})
        SELECT ${key.map((k) => `d.${k}`).join(', ')}, sum(d.delta)
          FROM (${rows}) d
         GROUP BY ${key.map((k) => `d.${k}`).join(', ')}
        HAVING sum(d.delta) <> 0
         ORDER BY ${key.map((k) => `d.${k}`).join(', ')}
        ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${t.count} = c.${t.count} + EXCLUDED.${t.count}`;
  const pieces = (from: string, sign: number) =>
    `SELECT x.piece, ${t.place.map((k) => `r.${k}`).join(', ')}, ${sign} AS delta
           FROM ${from} r, unnest(${t.pieces}(r.search_text)) x(piece)`;
  const columns = ['id', ...t.place, 'search_text'].join(', ');
  const changed = (from: string, other: string) =>
    `(SELECT ${columns} FROM ${from} EXCEPT ALL SELECT ${columns} FROM ${other})`;
  const rows = {
    insert: pieces('new_rows', 1),
    delete: pieces('old_rows', -1),
    update: `${pieces(changed('old_rows', 'new_rows'), -1)} UNION ALL ${pieces(changed('new_rows', 'old_rows'), 1)}`,
  };
  return EVENTS.map(
    ([event]) => `
          CREATE FUNCTION ${counts}_on_${event}() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            ${delta(rows[event])};
            RETURN NULL;
          END $$`,
  );
}

/** The triggers of `t` on its table, but TRUNCATE's (`truncate` names that function). */
export function pieceCountTriggersSql(t: PieceCountTable, truncate: string): string[] {
  const counts = pieceCountsTable(t);
  return [
    ...EVENTS.map(
      ([event, upper, transition]) =>
        `CREATE TRIGGER ${t.table}_${t.kind}_${event} AFTER ${upper} ON ${t.table}
             REFERENCING ${transition} FOR EACH STATEMENT EXECUTE FUNCTION ${counts}_on_${event}()`,
    ),
    `CREATE TRIGGER ${t.table}_${t.kind}_truncate AFTER TRUNCATE ON ${t.table}
           FOR EACH STATEMENT EXECUTE FUNCTION ${truncate}()`,
  ];
}

/** What undoes pieceCountFunctionsSql and pieceCountTriggersSql. */
export function dropPieceCountTriggersSql(t: PieceCountTable): string[] {
  return [
    ...[...EVENTS.map(([event]) => event), 'truncate'].map(
      (event) => `DROP TRIGGER ${t.table}_${t.kind}_${event} ON ${t.table}`,
    ),
    ...EVENTS.map(([event]) => `DROP FUNCTION ${pieceCountsTable(t)}_on_${event}()`),
  ];
}

/**
 * The rows `t` holds when exact: every record's distinct pieces counted per piece and place, from
 * scratch (`piece`, the place's columns, `count(*)`), in key order.
 */
export function countedPiecesSql(t: PieceCountTable): string {
  const alias = t.table.charAt(0);
  const place = t.place.map((k) => `${alias}.${k}`).join(', ');
  const groups = Array.from({ length: t.place.length + 1 }, (_, i) => i + 1).join(', ');
  return `SELECT x.piece, ${place}, count(*)
          FROM ${t.table} ${alias}, unnest(${t.pieces}(${alias}.search_text)) x(piece)
         GROUP BY ${groups} ORDER BY ${groups}`;
}

/** The INSERT that recounts `t` from scratch (its table emptied first). */
export function recountPiecesSql(t: PieceCountTable): string {
  return `INSERT INTO ${pieceCountsTable(t)} (piece, ${t.place.join(', ')}, ${t.count})
        ${countedPiecesSql(t)};`;
}

/**
 * rebuild_search_piece_counts(): every table of `tables` recounted from scratch, writers waiting
 * (a SHARE lock on the counted tables) so the result is exact.
 */
export function rebuildPieceCountsSql(tables: PieceCountTable[], replace = false): string {
  const counted = [...new Set(tables.map((t) => t.table))].join(', ');
  return `
      CREATE ${replace ? 'OR REPLACE ' : ''}FUNCTION rebuild_search_piece_counts() RETURNS void LANGUAGE plpgsql AS $$
      BEGIN
        -- Writers wait while the recount runs, so the result is exact.
        LOCK TABLE ${counted} IN SHARE MODE;
        TRUNCATE ${tables.map(pieceCountsTable).join(', ')};
        ${tables.map(recountPiecesSql).join('\n        ')}
      END $$`;
}

const PIECES_OF_WORDS = 'search_pieces';
const PIECES_ACROSS_WORDS = 'search_pair_pieces';
const PIECES_PER_TENANT = 'search_tenant_pieces';

/** Studies per piece inside a word or at its edge, per tenant and unit (SearchPieceCounts). */
export const STUDY_PIECE_COUNTS: PieceCountTable = {
  table: 'studies',
  record: 'study',
  kind: 'piece_counts',
  count: 'studies',
  place: ['tenant_id', 'unit_id'],
  pieces: PIECES_OF_WORDS,
};
/** Patients per piece inside a word or at its edge, per tenant (SearchPieceCounts). */
export const PATIENT_PIECE_COUNTS: PieceCountTable = {
  table: 'patients',
  record: 'patient',
  kind: 'piece_counts',
  count: 'patients',
  place: ['tenant_id'],
  pieces: PIECES_OF_WORDS,
};
/** Studies per piece across a separator or of a whole word, per tenant (SearchPairPieces). */
export const STUDY_PAIR_PIECE_COUNTS: PieceCountTable = {
  ...STUDY_PIECE_COUNTS,
  kind: 'pair_piece_counts',
  place: ['tenant_id'],
  pieces: PIECES_ACROSS_WORDS,
};
/** Patients per piece across a separator or of a whole word, per tenant (SearchPairPieces). */
export const PATIENT_PAIR_PIECE_COUNTS: PieceCountTable = {
  ...PATIENT_PIECE_COUNTS,
  kind: 'pair_piece_counts',
  pieces: PIECES_ACROSS_WORDS,
};
/**
 * Studies per piece kept per tenant (SearchTenantPieces): the pair pieces, and pieces of 5-6
 * characters with a digit. The pair table renamed.
 */
export const STUDY_TENANT_PIECE_COUNTS: PieceCountTable = {
  ...STUDY_PAIR_PIECE_COUNTS,
  kind: 'tenant_piece_counts',
  pieces: PIECES_PER_TENANT,
};
/** Patients per piece kept per tenant (SearchTenantPieces). */
export const PATIENT_TENANT_PIECE_COUNTS: PieceCountTable = {
  ...PATIENT_PAIR_PIECE_COUNTS,
  kind: 'tenant_piece_counts',
  pieces: PIECES_PER_TENANT,
};

/**
 * PL/pgSQL statements splitting `folded` into `words` (runs of letters and digits) and `runs` (the
 * characters between them): runs[k] is the run before words[k], runs[last + 1] the one after the
 * last word. Declares nothing: the function declares `words text[] := '{}'`, `runs text[] := '{}'`,
 * `found text[]` and `last int`.
 */
const SPLIT_WORDS_AND_RUNS = `          -- runs[k]: the run of other characters before words[k]; runs[last + 1]: after the last word.
          FOR found IN SELECT regexp_matches(folded, '([^[:alnum:]]*)([[:alnum:]]+)', 'g') LOOP
            runs := runs || found[1];
            words := words || found[2];
          END LOOP;
          last := coalesce(array_length(words, 1), 0);
          runs := runs || substring(folded from '[^[:alnum:]]*$');`;

/**
 * A function `name(folded text)` listing pieces of a folded text, distinct: `body` fills `pieces`
 * from `words` and `runs` (SPLIT_WORDS_AND_RUNS, `last` words), with `variables` declared besides;
 * CREATE OR REPLACE when `replace`.
 */
export function wordPiecesFunctionSql(name: string, variables: string[], body: string, replace = false): string {
  return `
      CREATE ${replace ? 'OR REPLACE ' : ''}FUNCTION ${name}(folded text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          words text[] := '{}';
          runs text[] := '{}';
          found text[];
          piece text;
          pieces text[] := '{}';
          last int;
${variables.map((v) => `          ${v};`).join('\n')}
        BEGIN
${SPLIT_WORDS_AND_RUNS}
${body}
          RETURN ARRAY(SELECT DISTINCT unnest(pieces));
        END
        $$`;
}

/**
 * A function `name(fragment text)` answering the folded fragment when it has one of `shapes` (a
 * regular expression's alternatives), no U+001F and, past 4 characters, no digit; else NULL.
 */
export function searchPieceFunctionSql(name: string, shapes: string, replace: boolean): string {
  return `
      CREATE ${replace ? 'OR REPLACE ' : ''}FUNCTION ${name}(fragment text) RETURNS text
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$
        DECLARE
          folded text := search_fold(fragment);
        BEGIN
          RETURN CASE WHEN folded ~ '^(${shapes})$'
                           AND strpos(folded, chr(31)) = 0
                           AND (length(folded) <= 4 OR folded !~ '[[:digit:]]')
                      THEN folded END;
        END
        $$`;
}

/**
 * The TRUNCATE trigger function of the studies' and patients' tables of one kind, named after it:
 * `piece_counts_on_truncate`.
 */
export const truncateFunctionName = (t: PieceCountTable): string => `${t.kind}_on_truncate`;

/** The TRUNCATE trigger function `name`: empties `studies` or `patients`, as the table truncated. */
export function truncatePieceCountsSql(name: string, studies: PieceCountTable, patients: PieceCountTable): string {
  return `
      CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_TABLE_NAME = 'studies' THEN
          TRUNCATE ${pieceCountsTable(studies)};
        ELSE
          TRUNCATE ${pieceCountsTable(patients)};
        END IF;
        RETURN NULL;
      END $$`;
}

/**
 * The triggers of the studies' and patients' tables of one kind, their trigger functions made
 * (pieceCountFunctionsSql): the TRUNCATE function (truncateFunctionName), then every trigger of
 * `studies`, then every trigger of `patients`.
 */
export function pieceCountTriggerSetSql(studies: PieceCountTable, patients: PieceCountTable): string[] {
  const truncate = truncateFunctionName(studies);
  return [
    truncatePieceCountsSql(truncate, studies, patients),
    ...pieceCountTriggersSql(studies, truncate),
    ...pieceCountTriggersSql(patients, truncate),
  ];
}

/**
 * The piece count tables the list code reads now (ListSpec.pieceCounts), for whatever checks or
 * maintains them all (the bench's seed, the tests). Migrations name their own.
 */
export const PIECE_COUNT_TABLES: PieceCountTable[] = [
  STUDY_PIECE_COUNTS,
  PATIENT_PIECE_COUNTS,
  STUDY_TENANT_PIECE_COUNTS,
  PATIENT_TENANT_PIECE_COUNTS,
];

/** search_tenant_pieces(): the pieces of the functions named in `parts`, one after the other. */
export const searchTenantPiecesSql = (parts: string[]): string => `
      CREATE OR REPLACE FUNCTION search_tenant_pieces(folded text) RETURNS text[]
        LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
        AS $$ BEGIN RETURN ${parts.map((f) => `${f}(folded)`).join(' || ')}; END $$`;

/**
 * The statements that recount the tenant piece tables from scratch with the functions now defined,
 * writers waiting until the migration commits.
 */
export function recountTenantPiecesSql(): string[] {
  const tables = [STUDY_TENANT_PIECE_COUNTS, PATIENT_TENANT_PIECE_COUNTS];
  return [
    `LOCK TABLE studies, patients IN SHARE MODE`,
    `TRUNCATE ${tables.map(pieceCountsTable).join(', ')}`,
    ...tables.flatMap((t) => [recountPiecesSql(t), `ANALYZE ${pieceCountsTable(t)}`]),
  ];
}
