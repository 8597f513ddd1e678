/**
 * The search totals of one-piece fragments come from study_piece_counts / patient_piece_counts
 * (migration SearchPieceCounts) and study_tenant_piece_counts / patient_tenant_piece_counts
 * (SearchPairPieces, SearchTenantPieces), kept by statement triggers. These tests check, on random names
 * (accents, case, repeated words, a piece twice in one name, digits), that:
 * - the kept rows always equal a recount from scratch, after inserts, renames, moves between units
 *   and tenants, multi-row statements, deletes, TRUNCATE and rebuild_list_counts();
 * - the total the list code computes (listSearchCountSql) equals `count(*) ... LIKE` for random
 *   fragments, one-piece or not, in every kind of scope; and the API reports the same.
 */
import { DataSource } from 'typeorm';
import { DataScope } from '../../src/common/auth/data-scope';
import { likePattern } from '../../src/common/pagination';
import { listCountSql, ListSpec, listSearchCountSql, listSearchSql, SqlParams } from '../../src/database/list';
import { PATIENTS_LIST } from '../../src/patients/patients.repository';
import { STUDIES_LIST } from '../../src/studies/studies.repository';
import {
  countedPiecesSql,
  PIECE_COUNT_TABLES,
  PieceCountTable,
  pieceCountsTable,
} from '../../src/database/migration-sql/piece-count-triggers';
import { Prng } from '../fuzz/support/prng';
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy, PatientRow } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser } from '../support/factories';

jest.setTimeout(120_000);

const WORDS = [
  'JOÃO',
  'Joao',
  'maria',
  'MARÍA',
  'rodrigues',
  'Rodríguez',
  'rigue',
  'da',
  'silva',
  'SILVA',
  'ana',
  'Ananias',
  'conceição',
  'São',
  'sao',
  'ção',
  'Gonçalves',
  "D'Ávila",
  'van-der-berg',
  'ÆLFRED',
  'Straße',
  'x',
];

describe('search piece counts stay exact', () => {
  let t: TestApp;
  let db: DataSource;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superToken: string;
  const seed = Number(process.env.SEARCH_SEED ?? Date.now() % 1_000_000);
  const prng = new Prng(seed);
  const random = () => prng.next();
  const pick = <T>(list: T[]) => prng.pick(list);
  const digits = (n: number) => Array.from({ length: n }, () => String(Math.floor(random() * 3))).join('');

  const randomName = () => {
    const words = Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick(WORDS));
    if (random() < 0.2) words.push(words[0]); // a word twice
    // Separators at the ends too: a piece at a word's edge must never take the field's U+001F.
    return pick(['', '', '', ' ', '-']) + words.join(pick([' ', '^', ' ', '  ', ', '])) + pick(['', '', '', ' ', '.']);
  };
  const randomFields = () => ({
    patient_name: randomName(),
    patient_id: random() < 0.5 ? digits(3 + Math.floor(random() * 6)) : `P${digits(4)}-${pick(WORDS)}`,
    accession_number: random() < 0.2 ? null : `${digits(2)}${pick(['', 'A', '.'])}${digits(5)}`,
  });

  /** Rows of each piece table that differ from a recount from scratch. */
  const drift = async (runner: { query: DataSource['query'] } = db) => {
    const differing = (t: PieceCountTable) => {
      const kept = `SELECT piece, ${t.place.join(', ')}, ${t.count}::bigint FROM ${pieceCountsTable(t)} WHERE ${t.count} <> 0`;
      const recounted = `SELECT * FROM (${countedPiecesSql(t)}) r`;
      return `(SELECT count(*) FROM ((${kept} EXCEPT ALL ${recounted}) UNION ALL (${recounted} EXCEPT ALL ${kept})) d)`;
    };
    const [row] = await runner.query(
      `SELECT ${PIECE_COUNT_TABLES.map((t) => `${differing(t)} AS ${pieceCountsTable(t)}`).join(', ')}`,
    );
    return Object.fromEntries(PIECE_COUNT_TABLES.map((t) => [pieceCountsTable(t), Number(row[pieceCountsTable(t)])]));
  };
  const NO_DRIFT = Object.fromEntries(PIECE_COUNT_TABLES.map((t) => [pieceCountsTable(t), 0]));

  /** A total as the list code computes it, and count(*) ... LIKE, for a scope. */
  const totals = async (spec: ListSpec, table: string, scope: DataScope, fragment: string) => {
    const p = new SqlParams();
    const alias = spec.from.split(' ')[1];
    const scopeSql =
      scope.kind === 'all'
        ? 'TRUE'
        : `${alias}.tenant_id = ${p.add(scope.kind === 'none' ? null : scope.tenantId)}` +
          (scope.kind === 'unit' && spec.scope.unit ? ` AND ${alias}.unit_id = ${p.add(scope.unitId)}` : '');
    // As the repositories count: through the search index when it can serve the fragment.
    const [{ indexed }] = await db.query(`SELECT search_query($1) IS NOT NULL AS indexed`, [fragment]);
    const where = `${scopeSql} AND ${listSearchSql(spec, fragment, p, indexed ? 'index' : 'walk')}`;
    const counted = listSearchCountSql(spec, scope, fragment, listCountSql(spec, where), p);
    const like = p.add(likePattern(fragment));
    const [row] = await db.query(
      `SELECT ${counted} AS counted,
              (SELECT count(*) FROM ${table} ${alias} WHERE ${scopeSql} AND ${alias}.search_text LIKE search_fold(${like})) AS liked,
              search_piece(${p.add(fragment)}) IS NOT NULL AS piece,
              search_tenant_piece(${p.add(fragment)}) IS NOT NULL AS per_tenant`,
      p.values,
    );
    return {
      counted: Number(row.counted),
      liked: Number(row.liked),
      piece: row.piece as boolean,
      perTenant: row.per_tenant as boolean,
    };
  };

  const fragmentsOf = (texts: string[], n: number) => {
    const out = new Set<string>([
      'rigue',
      'ção',
      'cao',
      'SAO',
      'ana',
      'aa',
      '000',
      '0000',
      '00000',
      "d'av",
      '%',
      '_a',
      'a\\',
      'ss',
      // At a word's edge (SearchEdgePieces): an end and a separator, a separator and a start, 1-2
      // characters each side of one separator; and the same shapes the pieces do not hold.
      'lva ',
      ' sil',
      'ão ',
      'a s',
      'o s',
      'as si',
      'a^',
      '^ro',
      ' da',
      'a  s',
      'lva s',
      'a silva',
      ', s',
      '0 ',
      ' 00',
      '00 a',
      // Across one separator or a whole word (SearchPairPieces), and near shapes they do not hold.
      'a silv',
      'o rodr',
      'ues^j',
      ' silva ',
      '^joão^',
      ' da ',
      '-der-',
      'a  silva',
      'ana silva',
      ' silva s',
      // Across one separator with 3+ characters each side, a word whole with a separator after it,
      // or after a separator and before a start (SearchLongPairPieces); and near shapes they do not hold.
      'ria silv',
      // In every run's data: the multi-row insert's names start 'RIGUE rodrigues da Silva '.
      'rigue rodr',
      'igue rodrigues ',
      'rodrigues silva',
      'ana silva ',
      'a silva ',
      'ria da ',
      ' silva ro',
      ' da silv',
      '^joão^s',
      'ues^jo',
      'a da silva ',
      'ana  silv',
      ' da  s',
      '00 000',
      '0 000 ',
      // Across three words with 1-3 characters between (SearchParticlePieces), and near shapes they
      // do not hold. The first four match the multi-row insert's names in every run.
      'ues da sil',
      'rodrigues da silva ',
      ' rodrigues da s',
      ' rodrigues da silva ',
      'a ana silv',
      'o^da^s',
      'ria da ana ',
      'a da  silva',
      'a  da silva',
      'a da silva s',
      'a joão silv',
      'a 00 rod',
      // 5-6 characters with a digit (SearchTenantPieces), and longer ones they do not hold.
      '00000',
      '000000',
      '01201',
      'p0120',
      '0000000',
    ]);
    // n fragments cut from the data, beside the fixed ones.
    const wanted = out.size + n;
    while (out.size < wanted) {
      const text = pick(texts);
      const start = Math.floor(random() * text.length);
      let fragment = text.slice(start, start + 2 + Math.floor(random() * 14));
      if (random() < 0.5) fragment = fragment.toLowerCase();
      if (random() < 0.3) fragment = fragment.normalize('NFD').replace(/[\u0300-\u036f]/g, '');
      if (fragment.trim().length >= 2) out.add(fragment);
    }
    return [...out];
  };

  const expectTotalsExact = async (label: string) => {
    expect({ label, seed, drift: await drift() }).toEqual({ label, seed, drift: NO_DRIFT });
    const rows: Array<{ t: string }> = await db.query(
      `SELECT patient_name || ' ' || coalesce(patient_id, '') || ' ' || coalesce(accession_number, '') AS t
         FROM studies WHERE tenant_id = ANY($1)`,
      [[clinic.tenant.id, other.tenant.id]],
    );
    const scopes: DataScope[] = [
      { kind: 'all' },
      { kind: 'tenant', tenantId: clinic.tenant.id },
      { kind: 'unit', tenantId: clinic.tenant.id, unitId: clinic.unit1.id },
      { kind: 'unit', tenantId: other.tenant.id, unitId: other.unit2.id },
    ];
    let pieces = 0;
    let edges = 0;
    let perTenant = 0;
    let longPairs = 0;
    let particles = 0;
    for (const fragment of fragmentsOf(
      rows.map((r) => r.t),
      30,
    )) {
      for (const scope of scopes) {
        for (const [spec, table] of [
          [STUDIES_LIST, 'studies'],
          [PATIENTS_LIST, 'patients'],
        ] as const) {
          const found = await totals(spec, table, scope, fragment);
          if (found.piece) pieces++;
          if (found.piece && /[^\p{L}\p{N}]/u.test(fragment)) edges++;
          if (found.perTenant && scope.kind !== 'unit') perTenant++;
          // Two words with 3+ characters each side of one separator, or a word whole and more.
          if (
            found.perTenant &&
            found.liked > 0 &&
            scope.kind !== 'unit' &&
            /^[^\p{L}\p{N}]?[\p{L}\p{N}]{3,}[^\p{L}\p{N}][\p{L}\p{N}]{3,}/u.test(fragment)
          ) {
            longPairs++;
          }
          // Three words with 1-3 characters between.
          if (
            found.perTenant &&
            found.liked > 0 &&
            scope.kind !== 'unit' &&
            /[\p{L}\p{N}][^\p{L}\p{N}][\p{L}\p{N}]{1,3}[^\p{L}\p{N}][\p{L}\p{N}]/u.test(fragment)
          ) {
            particles++;
          }
          expect({ label, seed, table, fragment, scope, total: found.counted }).toEqual({
            label,
            seed,
            table,
            fragment,
            scope,
            total: found.liked,
          });
        }
      }
    }
    expect(pieces).toBeGreaterThan(0);
    expect(edges).toBeGreaterThan(0);
    expect(perTenant).toBeGreaterThan(0);
    expect(longPairs).toBeGreaterThan(0);
    expect(particles).toBeGreaterThan(0);
  };

  beforeAll(async () => {
    t = await createTestApp();
    db = t.db;
    clinic = await createClinic(db, t.http);
    other = await createClinic(db, t.http);
    superToken = (await createSuperAdminUser(db, t.http)).token;
  });
  afterAll(() => t.close());

  it('after inserts, renames, moves, multi-row statements and deletes', async () => {
    const units = [
      [clinic.tenant.id, clinic.unit1.id],
      [clinic.tenant.id, clinic.unit2.id],
      [other.tenant.id, other.unit1.id],
      [other.tenant.id, other.unit2.id],
    ];
    const patients: PatientRow[] = [];
    for (let i = 0; i < 12; i++) {
      const fields = randomFields();
      const [tenantId] = pick(units);
      patients.push(
        await createPatient(db, tenantId, { patient_name: fields.patient_name, patient_id: `${fields.patient_id}.${i}` }),
      );
    }
    const studies: Array<{ id: string }> = [];
    for (let i = 0; i < 40; i++) {
      const [tenant_id, unit_id] = pick(units);
      studies.push(await createStudy(db, { tenant_id, unit_id, ...randomFields() }));
    }
    // One statement inserting several studies with the same pieces.
    await db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, accession_number, study_date)
       SELECT $1, $2, 'multi-' || g || $3::text, '2.25.999' || g || $3::text, '0000' || g, 'RIGUE rodrigues da Silva ' || $4::text, NULL, '2024-01-01'
         FROM generate_series(1, 5) g`,
      [clinic.tenant.id, clinic.unit1.id, Date.now(), randomName()],
    );
    await expectTotalsExact('inserts');

    for (const study of studies.slice(0, 10)) {
      await db.query(`UPDATE studies SET patient_name = $1, patient_id = $2, accession_number = $3 WHERE id = $4`, [
        ...Object.values(randomFields()),
        study.id,
      ]);
    }
    for (const patient of patients.slice(0, 6)) {
      await db.query(`UPDATE patients SET patient_name = $1 WHERE id = $2`, [randomName(), patient.id]);
    }
    // Updates that change no search field, and one that changes a field back and forth in one statement.
    await db.query(`UPDATE studies SET report_status = 'final' WHERE tenant_id = $1`, [clinic.tenant.id]);
    await expectTotalsExact('renames');

    for (const study of studies.slice(10, 20)) {
      const [tenant_id, unit_id] = pick(units);
      await db.query(`UPDATE studies SET tenant_id = $1, unit_id = $2 WHERE id = $3`, [tenant_id, unit_id, study.id]);
    }
    // A multi-row move and rename, and a patient moved to the other tenant.
    await db.query(`UPDATE studies SET unit_id = $1, patient_name = patient_name || ' Silva' WHERE unit_id = $2`, [
      clinic.unit2.id,
      clinic.unit1.id,
    ]);
    await db.query(`UPDATE patients SET tenant_id = $1 WHERE id = $2`, [other.tenant.id, patients[7].id]);
    await expectTotalsExact('moves');

    await db.query(`DELETE FROM studies WHERE id = ANY($1)`, [studies.slice(20, 30).map((s) => s.id)]);
    await db.query(`DELETE FROM patients WHERE id = ANY($1)`, [patients.slice(8, 10).map((p) => p.id)]);
    await expectTotalsExact('deletes');
  });

  it('the API reports the same totals as count(*) ... LIKE for every role', async () => {
    await createStudy(db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit1.id,
      patient_name: 'RODRIGUES^JOÃO^rodrigues',
      patient_id: '00060453',
      accession_number: '2401000604',
    });
    await createPatient(db, clinic.tenant.id, { patient_name: 'RODRIGUES^Conceição', patient_id: '0006' });
    const callers: Array<[string, string, string]> = [
      [clinic.adminToken, 's.tenant_id = $2', 'p.tenant_id = $2'],
      [clinic.token1, 's.tenant_id = $2 AND s.unit_id = $3', ''],
      [superToken, 'TRUE', 'TRUE'],
    ];
    for (const fragment of [
      'rigue',
      'RIGUE',
      'joao',
      'ção',
      'cao',
      '0006',
      '00060',
      '000604',
      'ues jo',
      'ues^j',
      's^joao',
      '^joão^',
      'ao^rodr',
      'ues^',
      '^jo',
      's^j',
      'a%',
      'x_',
    ]) {
      for (const [token, studiesScope, patientsScope] of callers) {
        const params = [likePattern(fragment), clinic.tenant.id, clinic.unit1.id];
        const used = (sql: string) => params.slice(0, sql.includes('$3') ? 3 : sql.includes('$2') ? 2 : 1);
        const studiesLike = `SELECT count(*) AS n FROM studies s WHERE ${studiesScope} AND s.search_text LIKE search_fold($1)`;
        const studies = await t.http.get('/api/studies', { token, query: { search: fragment } });
        expect({ fragment, total: studies.body.total }).toEqual({
          fragment,
          total: Number((await db.query(studiesLike, used(studiesLike)))[0].n),
        });
        if (!patientsScope) continue;
        const patientsLike = `SELECT count(*) AS n FROM patients p WHERE ${patientsScope} AND p.search_text LIKE search_fold($1)`;
        const patients = await t.http.get('/api/patients', { token, query: { search: fragment } });
        expect({ fragment, total: patients.body.total }).toEqual({
          fragment,
          total: Number((await db.query(patientsLike, used(patientsLike)))[0].n),
        });
      }
    }
  });

  it('the search index narrows a fragment that starts with the last letters of a word to its matches', async () => {
    // SearchShortPairs: "io sil" pairs the end "io" with the next word; before, its only term was
    // "sil" anywhere (every row below), and "a nu" had none at all (the whole scope).
    const { tenant, unit1 } = await createClinic(db, t.http);
    const names = [
      'Antonio SILVA',
      'Mario Silveira',
      'Maria Silva',
      'Silvio Antonio',
      'Ana Nunes',
      'Ana Costa Nunes',
      'Anita Bruna',
    ];
    for (const patient_name of names) await createStudy(db, { tenant_id: tenant.id, unit_id: unit1.id, patient_name });
    const found = async (fragment: string) => {
      const [row] = await db.query(
        `SELECT count(*) FILTER (WHERE search_lexemes(search_text) @@ search_query($2)) AS candidates,
                count(*) FILTER (WHERE search_text LIKE search_fold($3)) AS matches
           FROM studies WHERE tenant_id = $1`,
        [tenant.id, fragment, likePattern(fragment)],
      );
      return { fragment, candidates: Number(row.candidates), matches: Number(row.matches) };
    };
    expect(await found('io sil')).toEqual({ fragment: 'io sil', candidates: 2, matches: 2 });
    expect(await found('o silv')).toEqual({ fragment: 'o silv', candidates: 2, matches: 2 });
    expect(await found('a nu')).toEqual({ fragment: 'a nu', candidates: 2, matches: 2 });
    expect(await found('A SILVA')).toEqual({ fragment: 'A SILVA', candidates: 1, matches: 1 });
    const admin = await t.http.get('/api/studies', { token: superToken, query: { search: 'io sil' } });
    expect(
      admin.body.data
        .filter((s: { tenant_id: string }) => s.tenant_id === tenant.id)
        .map((s: { patient_name: string }) => s.patient_name)
        .sort(),
    ).toEqual(['Antonio SILVA', 'Mario Silveira']);
  });

  /** What `fn` answers for each fragment of `shapes`, compared with what the shape says. */
  const expectPieces = async (
    fn: 'search_piece' | 'search_pair_piece' | 'search_tenant_piece',
    shapes: Array<[string, string | null]>,
  ) => {
    const [{ found }] = await db.query(
      `SELECT array_agg(${fn}(f) ORDER BY n) AS found FROM unnest($1::text[]) WITH ORDINALITY x(f, n)`,
      [shapes.map(([fragment]) => fragment)],
    );
    expect(shapes.map(([fragment], n) => [fragment, found[n]])).toEqual(shapes);
  };

  it('search_piece() names the fragments the kept pieces answer', async () => {
    const shapes: Array<[string, string | null]> = [
      ['Rigue', 'rigue'],
      ['lva ', 'lva '],
      ['SÃO ', 'sao '],
      [' oliv', ' oliv'],
      ['^Jo', '^jo'],
      ['o s', 'o s'],
      ['as si', 'as si'],
      ['a-b', 'a-b'],
      // Not kept: too short, two separators, 3+ characters on both sides of one, a run of two,
      // the fields' separator, 5+ characters with a digit.
      ['ab', null],
      ['a ', null],
      [' a', null],
      [' silva ', null],
      ['lva s', null],
      ['ana silva', null],
      ['a  s', null],
      ['ab\u001f', null],
      ['a\u001fb', null],
      ['00046', null],
      ['0046 ', null],
      ['046 ', '046 '],
      ['1 2', '1 2'],
      ['12 34', null],
    ];
    await expectPieces('search_piece', shapes);
  });

  it('search_pair_piece() names the fragments the kept pair pieces answer, none of search_piece()', async () => {
    const shapes: Array<[string, string | null]> = [
      ['A SIL', 'a sil'],
      ['ão^rodr', 'ao^rodr'],
      ['ilva s', 'ilva s'],
      ['gues-jo', 'gues-jo'],
      [' Silva ', ' silva '],
      ['^da^', '^da^'],
      [' 12 ', ' 12 '],
      // SearchLongPairPieces: 3+ characters on both sides of one separator, a word whole with a
      // separator after it, or after a separator and before the next word's start.
      ['ana silva', 'ana silva'],
      ['Rodrigues SILVA', 'rodrigues silva'],
      ['a SILVA ', 'a silva '],
      ['ana da-', 'ana da-'],
      [' Silva Ro', ' silva ro'],
      ['-da^s', '-da^s'],
      ['a 1 ', 'a 1 '],
      // SearchParticlePieces: three words with 1-3 characters between, each separator one character.
      ['a da silva', 'a da silva'],
      ['A de FATI', 'a de fati'],
      ['ria de fátima ', 'ria de fatima '],
      [' Maria de F', ' maria de f'],
      [' maria de fatima ', ' maria de fatima '],
      ['a e lima', 'a e lima'],
      ['o^da-s', 'o^da-s'],
      ['ana ana ana', 'ana ana ana'],
      // Not kept: search_piece()'s shapes, a run of two, two separators around two words, three
      // words, the fields' separator, 5+ characters with a digit.
      ['o s', null],
      ['lva ', null],
      ['rigue', null],
      ['a  silva', null],
      ['a dede fa', null],
      ['a da  silva', null],
      ['a da silva s', null],
      ['a d1 fa', null],
      ['a da s1', null],
      ['a\u001fda silva', null],
      ['ana  silva ', null],
      [' da silva ', null],
      [' silva  ', null],
      ['a\u001fsilva', null],
      ['\u001fsilva ', null],
      [' 123 ', null],
      ['1 234', null],
      ['ana 12 ', null],
      [' 12 ab', null],
    ];
    await expectPieces('search_pair_piece', shapes);
  });

  it('search_tenant_piece() names the pair pieces and the pieces of 5-6 characters with a digit', async () => {
    const shapes: Array<[string, string | null]> = [
      ['A SIL', 'a sil'],
      [' Silva ', ' silva '],
      ['00020', '00020'],
      ['000203', '000203'],
      ['P0120', 'p0120'],
      ['ab1de', 'ab1de'],
      // Not kept here: no digit, too long, search_piece()'s, two words, the fields' separator.
      ['silva', null],
      ['0002034', null],
      ['0002', null],
      ['00 020', null],
      ['000\u001f20', null],
      ['rigue', null],
    ];
    await expectPieces('search_tenant_piece', shapes);
  });

  it('TRUNCATE empties the counts and rebuild_list_counts() recounts them', async () => {
    const runner = db.createQueryRunner();
    await runner.connect();
    try {
      // In a transaction that is rolled back: other test files share this database.
      await runner.startTransaction();
      await runner.query(`DELETE FROM study_piece_counts WHERE piece LIKE 'r%'`);
      await runner.query(`UPDATE patient_piece_counts SET patients = patients + 1 WHERE piece LIKE 's%'`);
      await runner.query(`DELETE FROM study_tenant_piece_counts WHERE piece LIKE '%s%' OR piece LIKE '%0%'`);
      await runner.query(`UPDATE patient_tenant_piece_counts SET patients = patients + 1`);
      const drifted = await drift(runner);
      expect(Object.values(drifted).every((rows) => rows > 0)).toBe(true);
      await runner.query(`SELECT rebuild_list_counts()`);
      expect(await drift(runner)).toEqual(NO_DRIFT);
      await runner.query(`TRUNCATE studies, patients CASCADE`);
      const [left] = await runner.query(
        `SELECT ${PIECE_COUNT_TABLES.map((t) => `(SELECT count(*) FROM ${pieceCountsTable(t)}) AS ${pieceCountsTable(t)}`).join(', ')}`,
      );
      expect(
        Object.fromEntries(PIECE_COUNT_TABLES.map((t) => [pieceCountsTable(t), Number(left[pieceCountsTable(t)])])),
      ).toEqual(NO_DRIFT);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });
});
