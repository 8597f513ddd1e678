/**
 * `npm run bench:seed -- --studies 1000000 --tenants 100 --units 400 [--database pacs_bench]`
 *
 * Recreates a dedicated database, applies the migrations and bulk-loads a clinic network:
 * tenants (the largest holds 20% of the studies, the others follow a 1/rank curve), units, users,
 * devices, patients with several studies each, 1-6 series per study, and a few 1,000-instance
 * series. Rows are generated inside PostgreSQL (INSERT ... SELECT over generate_series, with
 * hashint8 as a deterministic random source) so nothing crosses the wire but the plan; indexes,
 * primary keys and foreign keys are dropped during the load and rebuilt afterwards on two
 * connections, then the tables are vacuumed and analysed.
 */
import * as bcrypt from 'bcryptjs';
import { Command } from 'commander';
import { randomUUID } from 'crypto';
import { mkdirSync, writeFileSync } from 'fs';
import { join } from 'path';
import { Client, Pool } from 'pg';
import slugify from 'slugify';
import { openDataSource } from '../src/database/data-source-options';
import { DEFAULT_BENCH_DATABASE, databaseUrl, poolWithSettings, quoteIdent, seconds } from './lib/db';
import {
  CITIES,
  CLINIC_PREFIXES,
  expand,
  FEMALE_FIRST,
  FEMALE_MIDDLE,
  MALE_FIRST,
  MALE_MIDDLE,
  MODALITIES,
  NEIGHBOURHOODS,
  SURNAMES,
} from './lib/names';
import { afterLoad, beforeLoad } from './lib/seed-hooks';

// The list counters, vacuumed and listed with the others.
const COUNTERS = ['study_counts', 'patient_counts'];

export const BENCH_PASSWORD = 'bench-password';
export const RESULTS_DIR = join(__dirname, 'results');

interface Options {
  studies: number;
  tenants: number;
  units: number;
  database: string;
  bigSeries: number;
  bcryptCost: number;
  force: boolean;
}

interface TenantPlan {
  idx: number;
  id: string;
  name: string;
  slug: string;
  studies: number;
  patients: number;
  /** 1-based position of the tenant's first unit in the global unit list. */
  firstUnit: number;
  unitCount: number;
}

interface UnitPlan {
  idx: number;
  id: string;
  tenantIdx: number;
  name: string;
  slug: string;
}

interface UserPlan {
  id: string;
  tenantIdx: number | null;
  unitIdx: number | null;
  name: string;
  email: string;
  superAdmin: boolean;
  tenantAdmin: boolean;
}

const BIG_TABLES = ['patients', 'studies', 'series'];
const GROUP = 10_000_000; // study key g = tenant idx * GROUP + k keeps keys unique per tenant

/** Splits `total` by weights into integers that add up exactly (largest remainder). */
function apportion(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (total * w) / sum);
  const result = exact.map(Math.floor);
  let left = total - result.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => [x - Math.floor(x), i] as const).sort((a, b) => b[0] - a[0]);
  for (const [, i] of order) {
    if (left-- <= 0) break;
    result[i] += 1;
  }
  return result;
}

/** The largest tenant has 20% of the studies; the rest follow 1/rank, so a few are big and most small. */
function tenantWeights(count: number): number[] {
  if (count === 1) return [1];
  const tail = Array.from({ length: count - 1 }, (_, i) => 1 / (i + 2));
  const tailSum = tail.reduce((a, b) => a + b, 0);
  // With few tenants the 1/rank tail would outgrow the first one: then all follow 1/rank.
  if ((0.8 * tail[0]) / tailSum >= 0.2) return [1, ...tail];
  return [0.2, ...tail.map((w) => (0.8 * w) / tailSum)];
}

function plan(options: Options): { tenants: TenantPlan[]; units: UnitPlan[]; users: UserPlan[] } {
  const weights = tenantWeights(options.tenants);
  const studies = apportion(options.studies, weights);
  const extraUnits = apportion(options.units - options.tenants, weights);
  const tenants: TenantPlan[] = [];
  const units: UnitPlan[] = [];
  const users: UserPlan[] = [];
  let unitIdx = 1;
  for (let i = 0; i < options.tenants; i++) {
    const idx = i + 1;
    const name =
      i === 0
        ? 'Rede Imagem Brasil'
        : `${CLINIC_PREFIXES[i % CLINIC_PREFIXES.length]} ${CITIES[Math.floor(i / CLINIC_PREFIXES.length) % CITIES.length]}` +
          (i >= CLINIC_PREFIXES.length * CITIES.length ? ` ${idx}` : '');
    const slug = slugify(name, { lower: true, strict: true });
    const unitCount = 1 + extraUnits[i];
    tenants.push({
      idx,
      id: randomUUID(),
      name,
      slug,
      studies: studies[i],
      // About three studies per patient; a patient drawn by no study is simply not created.
      patients: Math.max(1, Math.round(studies[i] / 3)),
      firstUnit: unitIdx,
      unitCount,
    });
    for (let j = 0; j < unitCount; j++) {
      const round = Math.floor(j / NEIGHBOURHOODS.length);
      units.push({
        idx: unitIdx,
        id: randomUUID(),
        tenantIdx: idx,
        name: `Unidade ${NEIGHBOURHOODS[j % NEIGHBOURHOODS.length]}${round ? ` ${round + 1}` : ''}`,
        slug: `${slug}-u${j + 1}`,
      });
      users.push({
        id: randomUUID(),
        tenantIdx: idx,
        unitIdx,
        name: `Médico ${slug} ${j + 1}`,
        email: `user${j + 1}@${slug}.bench`,
        superAdmin: false,
        tenantAdmin: false,
      });
      unitIdx++;
    }
    users.push({
      id: randomUUID(),
      tenantIdx: idx,
      unitIdx: tenants[i].firstUnit,
      name: `Administrador ${name}`,
      email: `admin@${slug}.bench`,
      superAdmin: false,
      tenantAdmin: true,
    });
  }
  users.push({
    id: randomUUID(),
    tenantIdx: null,
    unitIdx: null,
    name: 'Super Admin',
    email: 'super@pacs.bench',
    superAdmin: true,
    tenantAdmin: false,
  });
  return { tenants, units, users };
}

// ---- SQL fragments shared by the studies and series statements ----------------------------------

/** A deterministic pseudo-random non-negative int from a bigint key and a salt. */
const h = (key: string, salt: number) => `(hashint8((${key}) * 1031 + ${salt}) & 2147483647)`;
/** An md5 turned into a version-4-shaped uuid. */
const uuidOf = (text: string) => `overlay(overlay(md5(${text}) placing '4' from 13) placing 'a' from 17)::uuid`;
/** Orthanc's identifier shape: five groups of eight hex digits. */
const orthancId = (text: string) =>
  `overlay(overlay(overlay(md5(${text}) placing '-' from 9 for 0) placing '-' from 18 for 0)` +
  ` placing '-' from 27 for 0) || '-' || left(md5(${text} || '#'), 8)`;

interface Lists {
  femaleFirst: string[];
  maleFirst: string[];
  femaleMiddle: string[];
  maleMiddle: string[];
  surnames: string[];
  modCodes: string[];
  modDescriptions: string[];
  modManufacturers: string[];
}

function lists(): Lists {
  const mods = MODALITIES.flatMap((m) => {
    const share = Math.max(1, Math.round((m.weight * 12) / m.descriptions.length));
    return m.descriptions.flatMap((d) => Array.from({ length: share }, () => ({ code: m.code, d, man: m.manufacturer })));
  });
  return {
    femaleFirst: expand(FEMALE_FIRST),
    maleFirst: expand(MALE_FIRST),
    femaleMiddle: expand(FEMALE_MIDDLE),
    maleMiddle: expand(MALE_MIDDLE),
    surnames: expand(SURNAMES),
    modCodes: mods.map((m) => m.code),
    modDescriptions: mods.map((m) => m.d),
    modManufacturers: mods.map((m) => m.man),
  };
}

/**
 * One row per study with its generated key `g` and the values both the studies and the series
 * statements need. Parameters: $1 tenant idx[], $2 tenant id[], $3 studies[], $4 patients[],
 * $5 first unit[], $6 unit count[], $7 unit ids (global order), $8 modality codes.
 */
function studyKeysSql(tenantFilter = 'TRUE'): string {
  return `
    SELECT b.*,
           ($7::uuid[])[b.first_unit + ${h('b.g', 1)} % b.n_units] AS unit_id,
           b.idx::bigint * ${GROUP} + ${h('b.g', 2)} % b.n_patients AS pkey,
           ${h('b.g', 2)} % b.n_patients AS pidx,
           1 + ${h('b.g', 11)} % cardinality($8::text[]) AS mi,
           1 + ${h('b.g', 10)} % 6 AS nseries,
           (current_date - 3650 + floor(3650 * (sqrt(1 + 8 * ${h('b.g', 8)}::float8 / 2147483648) - 1) / 2)::int) AS study_date
      FROM (
        SELECT t.idx, t.tenant_id, t.n_patients, t.first_unit, t.n_units, k, t.idx::bigint * ${GROUP} + k AS g
          FROM unnest($1::int[], $2::uuid[], $3::int[], $4::int[], $5::int[], $6::int[])
                 AS t(idx, tenant_id, n_studies, n_patients, first_unit, n_units)
         CROSS JOIN LATERAL generate_series(1, t.n_studies) AS k
         WHERE ${tenantFilter}
      ) b`;
}

// Study dates: ten years up to today, three times as many per day now as ten years ago (the
// network grew); the density 1 + 2x has the inverse CDF (sqrt(1 + 8u) - 1) / 2.

/** Acquisition time on the study date (07:00-19:00), ingested a few minutes later; never in the future. */
const createdAtSql = (g: string, date: string) =>
  `LEAST(now(), (${date} + time '07:00')::timestamptz + ((${h(g, 9)} % 43200) + 60 + ${h(g, 12)} % 600) * interval '1 second')`;
const studyUidSql = (alias: string) =>
  `'1.2.826.0.1.3680043.10.1087.' || ${alias}.idx || '.' || ${alias}.k || '.' || to_char(${alias}.study_date, 'YYYYMMDD')`;

function studiesSql(tenantFilter: string): string {
  // $9 female first, $10 male first, $11 female middle, $12 male middle, $13 surnames,
  // $14 descriptions, parallel to $8 codes.
  const sexF = `${h('x.pkey', 3)} % 100 < 52`;
  const pickFrom = (param: string, key: string, salt: number) => `(${param})[1 + ${h(key, salt)} % cardinality(${param})]`;
  return `
    INSERT INTO studies (id, tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id,
                         patient_name, patient_birth_date, patient_sex, accession_number, study_date,
                         study_description, modalities, report_status, reported_at, created_at, updated_at)
    SELECT y.id, y.tenant_id, y.unit_id, y.patient_uuid, y.imgsrv_study_id, y.study_instance_uid, y.patient_id,
           y.patient_name, y.patient_birth_date, y.patient_sex, y.accession_number, y.study_date,
           y.study_description, y.modalities, y.report_status,
           CASE WHEN y.report_status = 'final' THEN y.created_at + (1 + y.r % 72) * interval '1 hour' END,
           y.created_at, y.created_at
      FROM (
      SELECT ${uuidOf(`'s' || x.g`)} AS id,
             x.tenant_id,
             x.unit_id,
             ${uuidOf(`'p' || x.pkey`)} AS patient_uuid,
             ${orthancId(`'o' || x.g`)} AS imgsrv_study_id,
             ${studyUidSql('x')} AS study_instance_uid,
             lpad((x.pidx + 1)::text, 8, '0') AS patient_id,
             CASE WHEN ${sexF} THEN ${pickFrom('$9::text[]', 'x.pkey', 4)} ELSE ${pickFrom('$10::text[]', 'x.pkey', 4)} END
               || CASE WHEN ${h('x.pkey', 5)} % 100 < 35
                       THEN ' ' || CASE WHEN ${sexF} THEN ${pickFrom('$11::text[]', 'x.pkey', 6)}
                                        ELSE ${pickFrom('$12::text[]', 'x.pkey', 6)} END
                       ELSE '' END
               || ' ' || ${pickFrom('$13::text[]', 'x.pkey', 7)} || ' ' || ${pickFrom('$13::text[]', 'x.pkey', 13)} AS patient_name,
             date '1935-01-01' + ${h('x.pkey', 14)} % 29000 AS patient_birth_date,
             CASE WHEN ${sexF} THEN 'F' ELSE 'M' END AS patient_sex,
             CASE WHEN ${h('x.g', 15)} % 100 < 3 THEN NULL
                  ELSE to_char(x.study_date, 'YYMM') || lpad(x.k::text, 7, '0') END AS accession_number,
             x.study_date,
             ($14::text[])[x.mi] AS study_description,
             CASE WHEN x.nseries >= 4 THEN ARRAY[($8::text[])[x.mi], 'SR'] ELSE ARRAY[($8::text[])[x.mi]] END AS modalities,
             CASE WHEN x.study_date > current_date - 30
                  THEN (ARRAY['pending', 'pending', 'pending', 'pending', 'draft', 'draft', 'final', 'final', 'final', 'final'])[1 + ${h('x.g', 16)} % 10]
                  ELSE (ARRAY['pending', 'draft', 'final', 'final', 'final', 'final', 'final', 'final', 'final', 'final',
                              'final', 'final', 'final', 'final', 'final', 'final', 'final', 'final', 'final', 'final'])[1 + ${h('x.g', 16)} % 20]
             END AS report_status,
             ${h('x.g', 18)} AS r,
             ${createdAtSql('x.g', 'x.study_date')} AS created_at
        FROM (${studyKeysSql(tenantFilter)}) x
    ) y
    ORDER BY y.created_at`;
}

function seriesSql(tenantFilter: string): string {
  // $9 manufacturers, parallel to $8 codes.
  const key = `(x.g * 8 + j)`;
  return `
    INSERT INTO series (study_id, imgsrv_series_id, series_instance_uid, modality, series_number, manufacturer,
                        instance_count, created_at, updated_at)
    SELECT z.study_id, z.imgsrv_series_id, z.series_instance_uid, z.modality, z.series_number,
           CASE WHEN z.modality = 'SR' THEN NULL ELSE z.manufacturer END,
           CASE WHEN z.modality = 'SR' THEN 1
                WHEN z.modality IN ('CT', 'MR', 'PT', 'NM', 'XA') THEN 20 + z.r % 480
                ELSE 1 + z.r % 4 END,
           z.created_at, z.created_at
      FROM (
        SELECT ${uuidOf(`'s' || x.g`)} AS study_id,
               ${orthancId(`'e' || ${key}`)} AS imgsrv_series_id,
               ${studyUidSql('x')} || '.' || j AS series_instance_uid,
               CASE WHEN x.nseries >= 4 AND j = x.nseries THEN 'SR' ELSE ($8::text[])[x.mi] END AS modality,
               j AS series_number,
               ($9::text[])[x.mi] AS manufacturer,
               ${h(key, 17)} AS r,
               ${createdAtSql('x.g', 'x.study_date')} + j * interval '1 second' AS created_at
          FROM (${studyKeysSql(tenantFilter)}) x
         CROSS JOIN LATERAL generate_series(1, x.nseries) AS j
      ) z`;
}

// ---- DDL kept aside during the load --------------------------------------------------------------

interface Ddl {
  foreignKeys: Array<{ table: string; name: string; def: string }>;
  primaryKeys: Array<{ table: string; name: string; def: string }>;
  indexes: Array<{ table: string; name: string; def: string }>;
}

async function captureDdl(db: Pool, tables: string[]): Promise<Ddl> {
  const foreignKeys = await db.query(
    `SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS def
       FROM pg_constraint
      WHERE contype = 'f' AND (conrelid = ANY($1::text[]::regclass[]) OR confrelid = ANY($1::text[]::regclass[]))`,
    [tables],
  );
  const primaryKeys = await db.query(
    `SELECT conrelid::regclass::text AS table, conname AS name, pg_get_constraintdef(oid) AS def
       FROM pg_constraint WHERE contype IN ('p', 'u') AND conrelid = ANY($1::text[]::regclass[])`,
    [tables],
  );
  const indexes = await db.query(
    `SELECT i.indrelid::regclass::text AS table, c.relname AS name, pg_get_indexdef(i.indexrelid) AS def
       FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
      WHERE i.indrelid = ANY($1::text[]::regclass[])
        AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = i.indrelid AND k.conindid = i.indexrelid
                           AND k.contype IN ('p', 'u', 'x'))
      ORDER BY pg_relation_size(i.indrelid) DESC`,
    [tables],
  );
  return { foreignKeys: foreignKeys.rows, primaryKeys: primaryKeys.rows, indexes: indexes.rows };
}

async function dropDdl(db: Pool, ddl: Ddl): Promise<void> {
  for (const fk of ddl.foreignKeys) await db.query(`ALTER TABLE ${fk.table} DROP CONSTRAINT ${quoteIdent(fk.name)}`);
  for (const index of ddl.indexes) await db.query(`DROP INDEX ${quoteIdent(index.name)}`);
  for (const pk of ddl.primaryKeys) await db.query(`ALTER TABLE ${pk.table} DROP CONSTRAINT ${quoteIdent(pk.name)}`);
}

/** Runs the statements on `workers` connections at once, longest first; logs each one's time. */
async function runParallel(db: Pool, statements: Array<{ label: string; sql: string }>, workers = 2): Promise<void> {
  const queue = [...statements];
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const started = Date.now();
      await db.query(next.sql);
      console.log(`    ${next.label.padEnd(48)} ${seconds(started)}`);
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
}

// The search-term indexes of the big tables are the slowest builds: start them first.
const isGin = (def: string) => def.includes('USING gin');
const buildWeight = (def: string) => (isGin(def) ? 2 : 1) * (/ON public\.(studies|series) /.test(def) ? 2 : 1);

// A GIN build gathers its terms in an in-memory tree of up to maintenance_work_mem before writing
// them, and spends most of its time comparing terms in that tree (perf: 70% of the samples), which
// a large tree makes slower: the studies' terms at 1,000,000 studies took 283 s with 1 GB, 239 s
// with 256 MB, 207 s with 64 MB, 192 s with 32 MB and 230 s with 16 MB (two builds at a time on
// 2 cores, as here). The btree builds sort, and keep the session's 1 GB.
const GIN_BUILD_MEMORY = '64MB';
const withGinMemory = (def: string) =>
  isGin(def) ? `SET maintenance_work_mem = '${GIN_BUILD_MEMORY}'; ${def}; RESET maintenance_work_mem` : def;

async function restoreDdl(db: Pool, ddl: Ddl): Promise<void> {
  // Primary keys alone first: ADD CONSTRAINT locks its table whole, so a key queued behind a
  // table's search-term index waited for it (4 minutes at 1,000,000 studies) and every other index
  // of that table waited behind the key. Indexes of one table build side by side.
  await runParallel(
    db,
    ddl.primaryKeys.map((pk) => ({
      label: `${pk.table}.${pk.name}`,
      sql: `ALTER TABLE ${pk.table} ADD CONSTRAINT ${quoteIdent(pk.name)} ${pk.def}`,
    })),
  );
  await runParallel(
    db,
    ddl.indexes
      .map((index) => ({ label: `${index.table}.${index.name}`, sql: withGinMemory(index.def), w: buildWeight(index.def) }))
      .sort((a, b) => b.w - a.w),
  );
  await runParallel(
    db,
    ddl.foreignKeys.map((fk) => ({
      label: `${fk.table}.${fk.name}`,
      sql: `ALTER TABLE ${fk.table} ADD CONSTRAINT ${quoteIdent(fk.name)} ${fk.def}`,
    })),
  );
}

// ---- main ----------------------------------------------------------------------------------------

async function recreateDatabase(url: string, name: string): Promise<void> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
  const dataSource = await openDataSource(url, { migrate: true });
  await dataSource.destroy();
}

async function main(): Promise<void> {
  const program = new Command('bench:seed')
    .option('--studies <n>', 'number of studies', (v) => Number(v), 1_000_000)
    .option('--tenants <n>', 'number of tenants', (v) => Number(v), 100)
    .option('--units <n>', 'number of units over all tenants (at least one per tenant)', (v) => Number(v), 400)
    .option('--database <name>', 'database to (re)create', DEFAULT_BENCH_DATABASE)
    .option('--big-series <n>', 'series of 1,000 instances, in the largest tenant', (v) => Number(v), 5)
    .option('--bcrypt-cost <n>', "bcrypt cost of the users' password hash", (v) => Number(v), 10)
    .option('--force', 'allow a database name without "bench" in it', false)
    .parse(process.argv);
  const options = program.opts<Options>();
  for (const key of ['studies', 'tenants', 'units', 'bigSeries', 'bcryptCost'] as const) {
    if (!Number.isInteger(options[key]) || options[key] < 0) throw new Error(`--${key} must be a non-negative integer`);
  }
  if (options.tenants < 1 || options.studies < options.tenants)
    throw new Error('need at least one tenant and one study per tenant');
  options.units = Math.max(options.units, options.tenants);
  if (!options.database.includes('bench') && !options.force) {
    throw new Error(`refusing to drop "${options.database}": the name must contain "bench" (or pass --force)`);
  }

  const url = databaseUrl(options.database);
  const totalStarted = Date.now();
  const timings: Record<string, number> = {};
  const step = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    process.stdout.write(`${label} ...\n`);
    const result = await fn();
    timings[label] = Date.now() - started;
    console.log(`  ${label}: ${seconds(started)}`);
    return result;
  };

  console.log(`Seeding ${options.database}: ${options.studies} studies, ${options.tenants} tenants, ${options.units} units`);
  await step('database + migrations', () => recreateDatabase(url, options.database));

  // Bulk-load session: no WAL flush per commit, big sort memory, no JIT (planning cost only).
  const db = poolWithSettings(url, 2, {
    synchronous_commit: 'off',
    maintenance_work_mem: '1GB',
    work_mem: '256MB',
    max_parallel_maintenance_workers: '0',
    jit: 'off',
  });
  try {
    const { tenants, units, users } = plan(options);
    const l = lists();
    const ddl = await captureDdl(db, BIG_TABLES);
    await step('drop keys and indexes', async () => {
      await dropDdl(db, ddl);
      await beforeLoad(db);
    });

    await step('tenants, units, users, modalities', async () => {
      await db.query(
        `INSERT INTO tenants (id, name, slug, is_active) SELECT id, name, slug, true FROM unnest($1::uuid[], $2::text[], $3::text[]) AS t(id, name, slug)`,
        [tenants.map((t) => t.id), tenants.map((t) => t.name), tenants.map((t) => t.slug)],
      );
      await db.query(
        `INSERT INTO units (id, tenant_id, name, slug, is_active)
         SELECT id, tenant_id, name, slug, true FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[]) AS u(id, tenant_id, name, slug)`,
        [
          units.map((u) => u.id),
          units.map((u) => tenants[u.tenantIdx - 1].id),
          units.map((u) => u.name),
          units.map((u) => u.slug),
        ],
      );
      const hash = bcrypt.hashSync(BENCH_PASSWORD, options.bcryptCost);
      await db.query(
        `INSERT INTO users (id, tenant_id, unit_id, name, email, password, is_super_admin, is_tenant_admin, is_active)
         SELECT id, tenant_id, unit_id, name, email, $6, sa, ta, true
           FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $7::bool[], $8::bool[])
                AS x(id, tenant_id, unit_id, name, email, sa, ta)`,
        [
          users.map((u) => u.id),
          users.map((u) => (u.tenantIdx ? tenants[u.tenantIdx - 1].id : null)),
          users.map((u) => (u.unitIdx ? units[u.unitIdx - 1].id : null)),
          users.map((u) => u.name),
          users.map((u) => u.email),
          hash,
          users.map((u) => u.superAdmin),
          users.map((u) => u.tenantAdmin),
        ],
      );
      const devices = units.flatMap((u) =>
        ['CR', u.idx % 2 ? 'CT' : 'US'].map((code, n) => ({
          tenantId: tenants[u.tenantIdx - 1].id,
          unitId: u.id,
          name: `${code} Sala ${n + 1}`,
          aet: `BU${u.idx}${code}`,
          ip: `10.${u.tenantIdx % 256}.${Math.floor(u.idx / 256) % 256}.${(u.idx % 256) + n}`,
        })),
      );
      await db.query(
        `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address)
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[])`,
        [
          devices.map((d) => d.tenantId),
          devices.map((d) => d.unitId),
          devices.map((d) => d.name),
          devices.map((d) => d.aet),
          devices.map((d) => d.ip),
        ],
      );
    });

    const planParams = [
      tenants.map((t) => t.idx),
      tenants.map((t) => t.id),
      tenants.map((t) => t.studies),
      tenants.map((t) => t.patients),
      tenants.map((t) => t.firstUnit),
      tenants.map((t) => t.unitCount),
      units.map((u) => u.id),
      l.modCodes,
    ];
    await step('studies', async () => {
      await db.query(studiesSql('TRUE'), [
        ...planParams,
        l.femaleFirst,
        l.maleFirst,
        l.femaleMiddle,
        l.maleMiddle,
        l.surnames,
        l.modDescriptions,
      ]);
    });
    // Two halves on two connections: the generation is CPU-bound.
    await step('series', () =>
      Promise.all(['k % 2 = 0', 'k % 2 = 1'].map((filter) => db.query(seriesSql(filter), [...planParams, l.modManufacturers]))),
    );
    // A patient row per patient that has studies, created with its first study.
    await step('patients', () =>
      db.query(`
        INSERT INTO patients (id, tenant_id, patient_id, patient_name, patient_birth_date, patient_sex, created_at, updated_at)
        SELECT patient_uuid, tenant_id, patient_id, patient_name, patient_birth_date, patient_sex, min(created_at), max(created_at)
          FROM studies GROUP BY patient_uuid, tenant_id, patient_id, patient_name, patient_birth_date, patient_sex
         ORDER BY min(created_at)`),
    );

    await step('primary keys, indexes, foreign keys', () => restoreDdl(db, ddl));

    const largest = tenants[0];
    const bigSeries = await step('1,000-instance series', async () => {
      const picked = await db.query<{ id: string }>(
        `SELECT se.id FROM studies s JOIN series se ON se.study_id = s.id
          WHERE s.tenant_id = $1 AND se.modality IN ('CT', 'MR')
          ORDER BY s.study_date DESC, se.series_number LIMIT $2`,
        [largest.id, options.bigSeries],
      );
      const ids = picked.rows.map((r) => r.id);
      await db.query(`UPDATE series SET instance_count = 1000 WHERE id = ANY($1::uuid[])`, [ids]);
      await db.query(
        `INSERT INTO instances (series_id, imgsrv_instance_id, sop_instance_uid, instance_number, rows, columns,
                                slice_thickness, created_at, updated_at)
         SELECT se.id, ${orthancId(`'i' || se.id || '.' || n`)}, se.series_instance_uid || '.' || n, n, 512, 512, 1.25,
                se.created_at + n * interval '10 milliseconds', se.created_at + n * interval '10 milliseconds'
           FROM series se CROSS JOIN generate_series(1, 1000) AS n
          WHERE se.id = ANY($1::uuid[])`,
        [ids],
      );
      return ids;
    });

    await step('after-load hooks (list counters)', () => afterLoad(db));
    await step('vacuum analyze', () =>
      runParallel(
        db,
        ['studies', 'series', 'patients', ...COUNTERS, 'instances', 'users', 'units', 'tenants', 'modalities'].map((table) => ({
          label: table,
          sql: `VACUUM (ANALYZE) ${table}`,
        })),
      ),
    );

    const counts = await db.query<{ table: string; rows: string; size: string }>(
      `SELECT relname AS table, reltuples::bigint::text AS rows,
              pg_size_pretty(pg_total_relation_size(oid)) AS size
         FROM pg_class WHERE relname = ANY($1)
        ORDER BY relname`,
      [['tenants', 'units', 'users', 'patients', 'studies', 'series', 'instances', ...COUNTERS]],
    );
    console.table(counts.rows);
    console.log(`Total: ${seconds(totalStarted)}`);

    mkdirSync(RESULTS_DIR, { recursive: true });
    const usersOut = {
      database: options.database,
      password: BENCH_PASSWORD,
      super_admin: users.find((u) => u.superAdmin)?.email,
      tenants: tenants.map((t) => ({
        id: t.id,
        name: t.name,
        slug: t.slug,
        studies: t.studies,
        units: t.unitCount,
        tenant_admin: users.find((u) => u.tenantIdx === t.idx && u.tenantAdmin)?.email,
        users: users.filter((u) => u.tenantIdx === t.idx && !u.tenantAdmin).map((u) => u.email),
      })),
    };
    writeFileSync(join(RESULTS_DIR, 'users.json'), JSON.stringify(usersOut, null, 2));
    writeFileSync(
      join(RESULTS_DIR, 'seed.json'),
      JSON.stringify(
        {
          database: options.database,
          options,
          finished_at: new Date().toISOString(),
          total_ms: Date.now() - totalStarted,
          timings_ms: timings,
          rows: Object.fromEntries(counts.rows.map((r) => [r.table, Number(r.rows)])),
          largest_tenant: {
            id: largest.id,
            name: largest.name,
            studies: largest.studies,
            tenant_admin: `admin@${largest.slug}.bench`,
          },
          big_series: bigSeries,
        },
        null,
        2,
      ),
    );
    console.log(`Users (password "${BENCH_PASSWORD}") written to ${join(RESULTS_DIR, 'users.json')}`);
  } finally {
    await db.end();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
