/**
 * `npm run schema:sync`: writes what the migrations make and the list statements the API runs, as
 * files a reviewer reads in a diff:
 * - schema.sql: `pg_dump --schema-only` of a database migrated from nothing (tables, indexes,
 *   functions, triggers), normalised;
 * - src/database/queries/*.sql: the SQL of every list and search statement, as the repositories
 *   build it for each kind of scope and plan (recorded from the real repository code).
 * `npm run schema:check` (CI) builds both again and fails when a checked-in file differs.
 */
import { execFileSync } from 'child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'fs';
import { join } from 'path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { DataScope } from '../src/common/auth/data-scope';
import { openDataSource } from '../src/database/data-source-options';
import { ListSearch, ListTotals, PreparedQueries } from '../src/database/list';
import { PatientsRepository } from '../src/patients/patients.repository';
import { StudiesRepository, StudyFilter } from '../src/studies/studies.repository';

const ROOT = join(__dirname, '..');
const SCHEMA_FILE = join(ROOT, 'schema.sql');
const QUERIES_DIR = join(ROOT, 'src/database/queries');
const BASE_URL = process.env.SCHEMA_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** pg_dump's text without what changes from run to run or machine to machine. */
function normalise(dump: string): string {
  return `${dump
    .split('\n')
    .filter((line) => !/^(--|SET |SELECT pg_catalog\.set_config|\\restrict|\\unrestrict)/.test(line))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;
}

async function dumpSchema(): Promise<string> {
  const url = new URL(BASE_URL);
  const name = `pacs_schema_${process.pid}_${Date.now().toString(36)}`;
  url.pathname = `/${name}`;
  const admin = new Client({ connectionString: BASE_URL });
  await admin.connect();
  try {
    const db = await openDataSource(url.toString(), { migrate: true });
    await db.destroy();
    const dump = execFileSync('pg_dump', ['--schema-only', '--no-owner', '--no-privileges', '--no-comments', url.toString()], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    return normalise(dump);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
    await admin.end();
  }
}

const TENANT = '00000000-0000-4000-8000-00000000000a';
const UNIT = '00000000-0000-4000-8000-00000000000b';
const SCOPES: Array<[string, DataScope]> = [
  ['super admin', { kind: 'all' }],
  ['clinic admin', { kind: 'tenant', tenantId: TENANT }],
  ['unit user', { kind: 'unit', tenantId: TENANT, unitId: UNIT }],
];

/** The id of every row the recorder answers (16 bytes of 0x11, as the kept ids it answers are). */
const RECORDED_ID = '11111111-1111-1111-1111-111111111111';

/**
 * PreparedQueries that records each statement and answers as the database would for a scenario:
 * `matches` is what a search's capped count finds, and every page comes back full, except the next
 * `shortWalks` walks (their matches far down the list order).
 */
class Recorder {
  statements: Array<{ text: string; values: unknown[] }> = [];
  matches = 0;
  shortWalks = 0;

  query<T>(text: string, values: unknown[]): Promise<T[]> {
    this.statements.push({ text, values });
    if (/ LIMIT \$\d+\) [ps] WHERE /.test(text) && this.shortWalks > 0) {
      this.shortWalks--;
      return Promise.resolve([]);
    }
    if (/ AS indexed$/.test(text)) return Promise.resolve([{ walked: '100000', clinic: '100000', indexed: true }] as T[]);
    if (/^EXPLAIN /.test(text)) return Promise.resolve([{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': this.matches } }] }] as T[]);
    if (/^WITH _matches /.test(text)) {
      const first = { _total: String(this.matches), _version: '1.1' };
      if (this.matches > 1000) return Promise.resolve([{ ...first, id: null, _ids: null }] as T[]);
      // Up to the cap, one row carries every match's id (KeptSearch.ids).
      const ids = Buffer.alloc(16 * this.matches, 0x11);
      const rows = Array.from({ length: Number(values[values.length - 2]) }, (_, n) => ({
        ...first,
        id: RECORDED_ID,
        _ids: n === 0 ? ids : null,
      }));
      return Promise.resolve(rows as T[]);
    }
    if (/ AS total, /.test(text)) return Promise.resolve([{ total: '100', version: '1.1' }] as T[]);
    if (/ AS version$/.test(text)) return Promise.resolve([{ version: '1.1' }] as T[]);
    const limit = Number(values[values.length - 2]) || 15;
    const row = { id: RECORDED_ID, study_date: '2015-01-01', patient_name: 'SILVA', _total: '100', _version: '1.1' };
    return Promise.resolve(Array.from({ length: limit }, () => row) as T[]);
  }
}

async function recordQueries(): Promise<Record<string, string>> {
  const recorder = new Recorder();
  const prepared = recorder as unknown as PreparedQueries;
  // The repositories' statements; each scenario runs with an empty cache (a first request).
  const repositories = () => {
    const totals = new ListTotals();
    const searches = new ListSearch(totals, prepared);
    return {
      studies: new StudiesRepository({} as DataSource, totals, prepared, searches),
      patients: new PatientsRepository({} as DataSource, totals, prepared, searches),
    };
  };
  const files: Record<string, string[]> = { studies: [], patients: [] };
  /**
   * Records `run`'s statements; `before`: a call made first, unrecorded (its count kept), or true
   * for the same call.
   */
  const record = async (
    file: 'studies' | 'patients',
    title: string,
    matches: number,
    run: () => Promise<unknown>,
    before: boolean | (() => Promise<unknown>) = false,
  ) => {
    recorder.matches = matches;
    if (before) await (before === true ? run : before)();
    recorder.statements = [];
    await run();
    files[file].push(
      `-- ${title}\n` +
        recorder.statements
          .map(({ text, values }) => `-- values: ${JSON.stringify(values)}\n${text.replace(/\n\s+/g, '\n  ')};\n`)
          .join('\n'),
    );
  };
  const studyFilters: Array<[string, StudyFilter]> = [
    ['the list', {}],
    ['a patient, one study left out', { patientUuid: UNIT, excludeId: TENANT }],
    ['report_status', { reportStatus: 'pending' }],
  ];
  for (const [who, scope] of SCOPES) {
    for (const [what, filter] of studyFilters) {
      await record('studies', `${who}: ${what}, page 1`, 0, () => repositories().studies.listStudies(scope, filter, 0, 15));
    }
    await record('studies', `${who}: the list, page 30 (ids first)`, 0, () =>
      repositories().studies.listStudies(scope, {}, 435, 15),
    );
    await record('studies', `${who}: search with up to 1,000 matches (collected, their ids sorted)`, 40, () =>
      repositories().studies.listStudies(scope, { search: 'silva' }, 0, 15),
    );
    await record('studies', `${who}: search of a fragment in 5 %+ of the scope (counted in list order)`, 6000, () =>
      repositories().studies.listStudies(scope, { search: 'sil' }, 0, 15),
    );
    await record('studies', `${who}: search with more than 1,000 matches (walked)`, 1001, () =>
      repositories().studies.listStudies(scope, { search: 'silva', reportStatus: 'final' }, 0, 15),
    );
    for (const [matches, plan] of [
      [40, 'read by the ids kept'],
      [1001, 'walked'],
    ] as const) {
      const again = repositories();
      await record(
        'studies',
        `${who}: the same search again, page 2 (${plan}, its count kept)`,
        matches,
        () => again.studies.listStudies(scope, { search: 'silva' }, 15, 15),
        true,
      );
    }
    const walked = repositories();
    await record(
      'studies',
      `${who}: a search with more than 1,000 matches again, page 1 (read by the ids its walk met)`,
      1001,
      () => walked.studies.listStudies(scope, { search: 'silva' }, 0, 15),
      true,
    );
    const bunched = repositories();
    recorder.shortWalks = 1;
    await record(
      'studies',
      `${who}: the same search, page 2, its matches far down the list (walked from its first match)`,
      1001,
      () => bunched.studies.listStudies(scope, { search: 'silva' }, 15, 15),
      () => bunched.studies.listStudies(scope, { search: 'silva' }, 0, 15),
    );
    await record('patients', `${who}: the list, page 1`, 0, () =>
      repositories().patients.listPatients(scope, undefined, 0, 20),
    );
    await record('patients', `${who}: search with up to 1,000 matches (collected, their ids sorted)`, 40, () =>
      repositories().patients.listPatients(scope, 'silva', 0, 20),
    );
    await record('patients', `${who}: search with more than 1,000 matches (walked)`, 1001, () =>
      repositories().patients.listPatients(scope, 'silva', 20, 20),
    );
  }
  const header = (name: string) =>
    `-- Generated by \`npm run schema:sync\` from src/${name}/${name}.repository.ts and src/database/list: do not edit.\n\n`;
  return Object.fromEntries(Object.entries(files).map(([name, parts]) => [`${name}.sql`, header(name) + parts.join('\n')]));
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check');
  const wanted: Record<string, string> = { [SCHEMA_FILE]: await dumpSchema() };
  for (const [name, text] of Object.entries(await recordQueries())) wanted[join(QUERIES_DIR, name)] = text;
  const stale: string[] = [];
  for (const [file, text] of Object.entries(wanted)) {
    let current: string | null = null;
    try {
      current = readFileSync(file, 'utf8');
    } catch {
      current = null;
    }
    if (current === text) continue;
    if (check) stale.push(file);
    else {
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, text);
      console.log(`wrote ${file.slice(ROOT.length + 1)}`);
    }
  }
  if (stale.length > 0) {
    console.error(`Out of date (run npm run schema:sync and commit): ${stale.map((f) => f.slice(ROOT.length + 1)).join(', ')}`);
    process.exit(1);
  }
  if (check) console.log('schema.sql and src/database/queries match the migrations and the code.');
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
