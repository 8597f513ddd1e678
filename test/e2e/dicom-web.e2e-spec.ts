/**
 * GET /api/dicom-web/studies: the QIDO-RS study search of the doctors' worklist, answered from the
 * archive's index for a user session, scoped as GET /api/studies.
 */
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createSeries, createStudy, StudyRow } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';
import { tag } from '../support/expectations';
import { TestResponse } from '../support/http';
import { foldLatinLetter, LATIN_RANGES } from '../../src/studies/dicom-web/latin-fold';

jest.setTimeout(30_000);

const URL = '/api/dicom-web/studies';
/** Unique to this run's rows: the database is shared with other test files. */
const T = tag().toUpperCase();
const UNAUTHENTICATED = { status: 401, body: { message: 'Unauthenticated.' } };

describe('QIDO-RS study search (GET /api/dicom-web/studies)', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superToken: string;
  let otherUserToken: string;
  /** Unit 1 of the clinic: newest first. */
  let a1: StudyRow;
  let a2: StudyRow;
  let a3: StudyRow;
  /** Unit 2 of the same clinic, and the other clinic: same patient id as a1. */
  let b1: StudyRow;
  let c1: StudyRow;

  const search = (token: string, query: string, headers: Record<string, string> = {}) =>
    t.http.get(`${URL}${query ? `?${query}` : ''}`, { token, headers });
  /** The study UIDs of an answer, in its order. */
  const uids = (res: TestResponse) => {
    expect(res.status).toBe(200);
    return (JSON.parse(res.raw.toString()) as Array<Record<string, { Value: string[] }>>).map((s) => s['0020000D'].Value[0]);
  };
  const ours = (query = '') => `00100020=${T}*${query ? `&${query}` : ''}`;

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    const otherUser = await createUser(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
    otherUserToken = await login(t.http, otherUser.email);

    const joao = await createPatient(t.db, clinic.tenant.id, {
      patient_id: `${T}-P1`,
      patient_name: 'JOÃO^SILVA',
      patient_birth_date: '1970-05-31',
      patient_sex: 'M',
    });
    a1 = await createStudy(t.db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit1.id,
      patient: joao,
      accession_number: `${T}-ACC1`,
      study_date: '2024-03-10',
      study_description: 'Crânio sem contraste',
      modalities: ['CT', 'SR'],
    });
    await createSeries(t.db, a1.id, { modality: 'CT', series_number: 1, instance_count: 3 });
    await createSeries(t.db, a1.id, { modality: 'SR', series_number: 2, instance_count: 1 });
    a2 = await createStudy(t.db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit1.id,
      patient_id: `${T}-P2`,
      patient_name: 'MARIA^SOUZA',
      accession_number: `${T}-ACC2`,
      study_date: '2024-01-05',
      study_description: 'Knee',
      modalities: ['MR'],
    });
    a3 = await createStudy(t.db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit1.id,
      patient_id: `${T}-P1`,
      patient_name: 'Joao^Pereira',
      accession_number: null,
      study_date: '2023-12-31',
      study_description: null,
      modalities: ['CT'],
    });
    b1 = await createStudy(t.db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit2.id,
      patient: joao,
      accession_number: `${T}-ACC3`,
      study_date: '2024-02-01',
      modalities: ['CT'],
    });
    c1 = await createStudy(t.db, {
      tenant_id: other.tenant.id,
      unit_id: other.unit1.id,
      patient_id: `${T}-P1`,
      patient_name: 'JOÃO^SILVA',
      accession_number: `${T}-ACC1`,
      study_date: '2024-03-11',
      modalities: ['CT'],
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('the answer', () => {
    it('is application/dicom+json: an array of study objects with the attributes the worklist needs', async () => {
      const res = await search(clinic.token1, `StudyInstanceUID=${a1.study_instance_uid}`, { host: 'archive.example:8443' });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/dicom+json');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(JSON.parse(res.raw.toString())).toEqual([
        {
          '00080020': { vr: 'DA', Value: ['20240310'] },
          '00080030': { vr: 'TM' },
          '00080050': { vr: 'SH', Value: [`${T}-ACC1`] },
          '00080061': { vr: 'CS', Value: ['CT', 'SR'] },
          '00081030': { vr: 'LO', Value: ['Crânio sem contraste'] },
          '00081190': { vr: 'UR', Value: [`http://archive.example:8443/dicom-web/studies/${a1.study_instance_uid}`] },
          '00100010': { vr: 'PN', Value: [{ Alphabetic: 'JOÃO^SILVA' }] },
          '00100020': { vr: 'LO', Value: [`${T}-P1`] },
          '00100030': { vr: 'DA', Value: ['19700531'] },
          '00100040': { vr: 'CS', Value: ['M'] },
          '0020000D': { vr: 'UI', Value: [a1.study_instance_uid] },
          '00201206': { vr: 'IS', Value: [2] },
          '00201208': { vr: 'IS', Value: [4] },
        },
      ]);
    });

    it('leaves attributes the study lacks present without a value, and counts zero series as 0', async () => {
      const res = await search(clinic.token1, `StudyInstanceUID=${a3.study_instance_uid}`);
      const [study] = JSON.parse(res.raw.toString());
      expect(study['00080050']).toEqual({ vr: 'SH' });
      expect(study['00081030']).toEqual({ vr: 'LO' });
      expect(study['00100030']).toEqual({ vr: 'DA' });
      expect(study['00100040']).toEqual({ vr: 'CS' });
      expect(study['00080061']).toEqual({ vr: 'CS', Value: ['CT'] });
      expect(study['00201206']).toEqual({ vr: 'IS', Value: [0] });
      expect(study['00201208']).toEqual({ vr: 'IS', Value: [0] });
    });

    it('builds the retrieve URL from the host the client reached, and never echoes a forged one', async () => {
      const url = async (host: string) => {
        const res = await search(clinic.token1, `StudyInstanceUID=${a1.study_instance_uid}`, { host });
        return JSON.parse(res.raw.toString())[0]['00081190'].Value[0];
      };
      expect(await url('127.0.0.1:18080')).toBe(`http://127.0.0.1:18080/dicom-web/studies/${a1.study_instance_uid}`);
      expect(await url('evil.example/x?')).toBe(`/dicom-web/studies/${a1.study_instance_uid}`);
      expect(await url('a b')).toBe(`/dicom-web/studies/${a1.study_instance_uid}`);
    });

    it('is an empty array when nothing matches', async () => {
      const res = await search(clinic.token1, 'PatientName=nobody-at-all');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/dicom+json');
      expect(JSON.parse(res.raw.toString())).toEqual([]);
    });
  });

  describe('scope, as GET /api/studies', () => {
    const byUid = () => `StudyInstanceUID=${[a1, b1, c1].map((s) => s.study_instance_uid).join(',')}`;
    /** [what is asked, the caller's token, the query, the studies answered in order] */
    const cases: Array<[string, () => string, () => string, () => StudyRow[]]> = [
      ["a regular user gets their unit's studies only, newest first", () => clinic.token1, ours, () => [a1, a2, a3]],
      ["a regular user of the clinic's other unit gets that unit's only", () => clinic.token2, ours, () => [b1]],
      ["a regular user of another clinic gets that clinic's only", () => otherUserToken, ours, () => [c1]],
      ["a tenant admin gets the clinic's studies", () => clinic.adminToken, ours, () => [a1, b1, a2, a3]],
      ["another clinic's tenant admin gets that clinic's only", () => other.adminToken, ours, () => [c1]],
      ["a super admin gets every clinic's", () => superToken, ours, () => [c1, a1, b1, a2, a3]],
      ["another unit's or clinic's study stays absent when asked for by UID (unit 1)", () => clinic.token1, byUid, () => [a1]],
      ["another unit's or clinic's study stays absent when asked for by UID (unit 2)", () => clinic.token2, byUid, () => [b1]],
      ["another clinic's study stays absent when asked for by UID (other clinic)", () => other.adminToken, byUid, () => [c1]],
      [
        "the viewer's 'other studies of this patient' (exact PatientID, as a tag), a regular user",
        () => clinic.token1,
        () => `00100020=${T}-P1`,
        () => [a1, a3],
      ],
      [
        "the viewer's 'other studies of this patient' (exact PatientID), a tenant admin",
        () => clinic.adminToken,
        () => `PatientID=${T}-P1`,
        () => [a1, b1, a3],
      ],
    ];
    it.each(cases)('%s', async (_name, caller, query, expected) => {
      expect(uids(await search(caller(), query()))).toEqual(expected().map((s) => s.study_instance_uid));
    });

    it('a regular user without a unit gets no study, even by UID (decisions.md 2)', async () => {
      const loose = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: null });
      const token = await login(t.http, loose.email);
      expect(uids(await search(token, ours()))).toEqual([]);
      expect(uids(await search(token, byUid()))).toEqual([]);
    });
  });

  describe('matching', () => {
    const cases: Array<[string, string, () => StudyRow[]]> = [
      ['PatientName with * wildcards, accent- and case-insensitive', 'PatientName=*joao*', () => [a1, a3]],
      ['PatientName typed with the accent', 'PatientName=*JOÃO*', () => [a1, a3]],
      ['PatientName exact (case and accents folded)', `PatientName=${encodeURIComponent('joão^silva')}`, () => [a1]],
      ['PatientName exact is not a fragment', 'PatientName=joao', () => []],
      ['PatientName with ?', 'PatientName=J%3FAO*', () => [a1, a3]],
      ['PatientName as a tag', '00100010=*souza', () => [a2]],
      ['PatientName of only *', 'PatientName=*', () => [a1, a2, a3]],
      ['PatientName with LIKE metacharacters taken literally', 'PatientName=%25', () => []],
      ['PatientID exact', `PatientID=${T}-P2`, () => [a2]],
      ['AccessionNumber exact', `AccessionNumber=${T}-ACC1`, () => [a1]],
      ['AccessionNumber with wildcards, case-insensitive', `00080050=*${T.toLowerCase()}-acc?`, () => [a1, a2]],
      ['StudyDescription, accent-insensitive', 'StudyDescription=*cranio*', () => [a1]],
      ['StudyInstanceUID list with \\', 'StudyInstanceUID=UIDS_BACKSLASH', () => [a1, a3]],
      ['StudyDate exact', 'StudyDate=20240105', () => [a2]],
      ['StudyDate range', 'StudyDate=20240101-20240310', () => [a1, a2]],
      ['StudyDate open start', 'StudyDate=-20240105', () => [a2, a3]],
      ['StudyDate open end', '00080020=20240106-', () => [a1]],
      ['ModalitiesInStudy one', 'ModalitiesInStudy=MR', () => [a2]],
      ['ModalitiesInStudy any of a list', 'ModalitiesInStudy=MR,SR', () => [a1, a2]],
      ['ModalitiesInStudy lower case', '00080061=ct', () => [a1, a3]],
      ['several keys together', 'PatientName=*jo*&ModalitiesInStudy=CT&StudyDate=20240101-', () => [a1]],
      ['limit', 'limit=2', () => [a1, a2]],
      ['limit and offset', 'limit=1&offset=1', () => [a2]],
      ['offset past the end', 'offset=3', () => []],
      ['a limit above the maximum, capped', 'limit=100000', () => [a1, a2, a3]],
      [
        'includefield and fuzzymatching accepted',
        'includefield=00081030,00080060&includefield=all&fuzzymatching=true',
        () => [a1, a2, a3],
      ],
      ['an empty value matches everything', 'PatientName=&AccessionNumber=', () => [a1, a2, a3]],
      ['keys the index does not hold are ignored', 'ReferringPhysicianName=SMITH&StudyTime=1200', () => [a1, a2, a3]],
    ];
    it.each(cases)('%s', async (_name, query, expected) => {
      const resolved = query.replace(
        'UIDS_BACKSLASH',
        encodeURIComponent(`${a1.study_instance_uid}\\${a3.study_instance_uid}`),
      );
      // Each case is narrowed to this file's rows by PatientID, unless it matches on PatientID itself.
      const narrowed = resolved.startsWith('PatientID=') ? resolved : ours(resolved);
      expect(uids(await search(clinic.token1, narrowed))).toEqual(expected().map((s) => s.study_instance_uid));
    });
  });

  describe('folding as the studies search does (search_fold)', () => {
    /** Apart from `ours()`: PatientIDs starting with F. */
    const F = `F${T}`;
    let vietnamese: StudyRow;
    let polish: StudyRow;
    let decomposed: StudyRow;

    beforeAll(async () => {
      const study = (patient_id: string, patient_name: string, study_date: string, study_description: string | null = null) =>
        createStudy(t.db, {
          tenant_id: clinic.tenant.id,
          unit_id: clinic.unit1.id,
          patient_id,
          patient_name,
          study_date,
          study_description,
          modalities: ['MR'],
        });
      vietnamese = await study(`${F}-V1`, 'NGUYỄN^VĂN AN', '2024-06-03', 'Đầu gối phải');
      polish = await study(`${F}-L1`, 'ŁUKASZ^WÓJCIK', '2024-06-02');
      decomposed = await study(`${F}-V2`, 'Nguye\u0302\u0303n^Thi\u0323', '2024-06-01');
    });

    it('folds every letter of the Latin ranges as search_fold does', async () => {
      const letters: string[] = [];
      for (const [from, to] of LATIN_RANGES) {
        for (let code = from; code <= to; code++)
          if (/\p{L}/u.test(String.fromCharCode(code))) letters.push(String.fromCharCode(code));
      }
      const rows: Array<{ letter: string; folded: string }> = await t.db.query(
        'SELECT letter, search_fold(letter) AS folded FROM unnest($1::text[]) AS letter',
        [letters],
      );
      expect(rows).toHaveLength(letters.length);
      expect(rows.filter((row) => foldLatinLetter(row.letter) !== row.folded)).toEqual([]);
    });

    const cases: Array<[string, () => StudyRow[]]> = [
      ['PatientName=Nguyễn*', () => [vietnamese, decomposed]],
      ['PatientName=nguyen*', () => [vietnamese, decomposed]],
      ['PatientName=NGUYEN^VAN*', () => [vietnamese]],
      ['PatientName=nguyen^thi', () => [decomposed]],
      ['PatientName=Łukasz*', () => [polish]],
      ['PatientName=lukasz*', () => [polish]],
      ['PatientName=*wojcik', () => [polish]],
      ['PatientName=nguyan*', () => []],
      ['PatientName=lucasz*', () => []],
      ['StudyDescription=dau goi*', () => [vietnamese]],
      ['StudyDescription=*PHAI', () => [vietnamese]],
    ];
    it.each(cases)('%s', async (query, expected) => {
      const res = await search(
        clinic.token1,
        `00100020=${F}*&${query.replace(/=(.*)/, (_, value: string) => `=${encodeURIComponent(value)}`)}`,
      );
      expect(uids(res)).toEqual(expected().map((s) => s.study_instance_uid));
    });

    it('finds by the worklist the names the studies search finds by a fragment', async () => {
      for (const [fragment, expected] of [
        ['nguyen', [vietnamese, decomposed]],
        ['lukasz', [polish]],
      ] as const) {
        const list = await t.http.get('/api/studies', { token: clinic.token1, query: { search: `${fragment}` } });
        expect(list.status).toBe(200);
        const found = (list.body.data as StudyRow[]).filter((s) => s.patient_id.startsWith(F)).map((s) => s.id);
        expect(found).toEqual(expected.map((s) => s.id));
        const worklist = await search(clinic.token1, `00100020=${F}*&PatientName=*${fragment}*`);
        expect(uids(worklist)).toEqual(expected.map((s) => s.study_instance_uid));
      }
    });
  });

  describe('refusals', () => {
    it('401 without a session', async () => {
      const res = await t.http.get(URL);
      expect({ status: res.status, body: res.body }).toEqual(UNAUTHENTICATED);
    });

    it('401 with a viewer token, as a bearer or as the cookie, and with a broken token', async () => {
      const issued = await t.http.post('/api/viewer/token', { token: clinic.token1, body: { study_id: a1.id } });
      expect(issued.status).toBe(200);
      for (const res of [
        await t.http.get(URL, { token: issued.body.token }),
        await t.http.get(URL, { cookies: { pacs_access_token: issued.body.token } }),
        await t.http.get(URL, { headers: { 'x-viewer-token': issued.body.token } }),
        await t.http.get(URL, { token: 'not.a.token' }),
      ]) {
        expect({ status: res.status, body: res.body }).toEqual(UNAUTHENTICATED);
      }
    });

    it('401 after sign-out', async () => {
      const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const token = await login(t.http, user.email);
      expect((await search(token, '')).status).toBe(200);
      expect((await t.http.post('/api/logout', { token })).status).toBe(200);
      const res = await search(token, '');
      expect({ status: res.status, body: res.body }).toEqual(UNAUTHENTICATED);
    });

    it('takes the session cookie as the viewer in the browser sends it', async () => {
      const res = await t.http.get(`${URL}?${ours()}`, { cookies: { pacs_access_token: clinic.token1 } });
      expect(uids(res)).toEqual([a1, a2, a3].map((s) => s.study_instance_uid));
    });

    const DATE_MESSAGE = 'The StudyDate parameter must be YYYYMMDD or a range YYYYMMDD-YYYYMMDD (either end may be left open).';
    it.each([
      ['StudyDate=2024-01-05', DATE_MESSAGE],
      ['StudyDate=20240230', DATE_MESSAGE],
      ['StudyDate=20240101-20240102-20240103', DATE_MESSAGE],
      ['StudyDate=-', DATE_MESSAGE],
      ['PatientName=*jo*&StudyDate=2024-', DATE_MESSAGE],
      ['00080020=yesterday', DATE_MESSAGE],
      ['limit=abc', 'The limit parameter must be a whole number.'],
      ['limit=0', 'The limit parameter must be between 1 and 9007199254740991.'],
      ['limit=-1', 'The limit parameter must be a whole number.'],
      ['offset=1.5', 'The offset parameter must be a whole number.'],
      ['offset=100000001', 'The offset parameter must be between 0 and 100000000.'],
      ['StudyInstanceUID=1.2.abc', 'The StudyInstanceUID parameter must be UIDs separated by commas.'],
      ['StudyInstanceUID=1.2.3,,1.2.4', 'The StudyInstanceUID parameter must be UIDs separated by commas.'],
      ['ModalitiesInStudy=C%20T!', 'The ModalitiesInStudy parameter must be modality codes separated by commas.'],
      ['fuzzymatching=maybe', 'The fuzzymatching parameter must be true or false.'],
      ['PatientName=a&PatientName=b', 'The PatientName parameter is given more than once.'],
      ['PatientName=a&00100010=b', 'The 00100010 parameter is given more than once.'],
      [`PatientName=${'x'.repeat(256)}`, 'The PatientName parameter must not be longer than 255 characters.'],
      ['PatientName=a%00b', 'The PatientName parameter must not contain NUL characters.'],
    ])('400 for %s', async (query, message) => {
      const res = await search(clinic.token1, query);
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { message } });
      expect(res.headers['content-type']).toMatch(/^application\/json/);
    });

    it('never answers 500 to odd but well-formed input', async () => {
      for (const query of [
        'PatientName=%E2%80%AE*',
        "PatientName=O'Brien*",
        'AccessionNumber=\\',
        'limit=9999999999999999',
        'StudyDate=00010101-99991231',
      ]) {
        const res = await search(clinic.token1, query);
        expect([200, 400]).toContain(res.status);
      }
    });
  });

  it('is documented in the OpenAPI document with its parameters', async () => {
    const res = await t.http.get('/api/docs-json');
    const operation = res.body.paths['/api/dicom-web/studies'].get;
    expect(operation.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining([
        'PatientName',
        'PatientID',
        'AccessionNumber',
        'StudyDescription',
        'StudyInstanceUID',
        'StudyDate',
        'ModalitiesInStudy',
        'limit',
        'offset',
        'includefield',
        'fuzzymatching',
      ]),
    );
    expect(Object.keys(operation.responses['200'].content)).toEqual(['application/dicom+json']);
  });
});
