import type { AddressInfo } from 'net';
import { AccountStatusService } from '../../src/auth/account-status.service';
import { AuditService } from '../../src/audit/audit.service';
import { MAX_CONCURRENT_LOOKUPS, StudyPlacesCache } from '../../src/viewer/study-places.cache';
import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy, createStudy, dicomUid, StudyRow } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';
import { socketRequest, TestResponse } from '../support/http';

jest.setTimeout(30_000);

type Caller = 'user1' | 'user2' | 'tenantAdmin' | 'otherAdmin' | 'superAdmin';
const CALLERS: Caller[] = ['user1', 'user2', 'tenantAdmin', 'otherAdmin', 'superAdmin'];
const VALIDATE = '/api/viewer/token/validate';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('Viewer tokens', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superAdmin: Awaited<ReturnType<typeof createSuperAdminUser>>;
  let tokens: Record<Caller, string>;
  let mine: StudyRow;
  let mineUnit2: StudyRow;
  /** Another study of user 1's unit, of another patient. */
  let mineToo: StudyRow;
  /** A study of the same patient as `mine`, in unit 2: a prior a unit 1 doctor compares with. */
  let priorUnit2: StudyRow;
  let theirs: StudyRow;

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superAdmin = await createSuperAdminUser(t.db, t.http);
    tokens = {
      user1: clinic.token1,
      user2: clinic.token2,
      tenantAdmin: clinic.adminToken,
      otherAdmin: other.adminToken,
      superAdmin: superAdmin.token,
    };
    mine = (await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id)).study;
    mineUnit2 = (await createImagedStudy(t.db, clinic.tenant.id, clinic.unit2.id)).study;
    mineToo = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
    priorUnit2 = await createStudy(t.db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit2.id,
      patient_id: mine.patient_id,
    });
    theirs = (await createImagedStudy(t.db, other.tenant.id, other.unit1.id)).study;
  });
  afterAll(() => t?.close());

  const issue = async (token: string, studyId: string): Promise<string> => {
    const res = await t.http.post('/api/viewer/token', { token, body: { study_id: studyId } });
    if (res.status !== 200) throw new Error(`issue: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.token;
  };
  // In process (inject) the Nest route answers; on a socket, the raw route (RawRoutes) answers first.
  let transport: 'in process' | 'socket' = 'in process';
  let baseUrl: string;
  const validate = (viewerToken: string | undefined, originalUri: string | undefined): Promise<TestResponse> => {
    const headers: Record<string, string> = {};
    if (viewerToken !== undefined) headers['x-viewer-token'] = viewerToken;
    if (originalUri !== undefined) headers['x-original-uri'] = originalUri;
    return validateWith(headers);
  };
  const validateWith = (headers: Record<string, string>): Promise<TestResponse> =>
    transport === 'socket' ? socketRequest(baseUrl, 'GET', VALIDATE, headers) : t.http.get(VALIDATE, { headers });

  describe('POST /api/viewer/token', () => {
    it('issues a uuid token bound to the user, clinic, unit, study and patient, signed, in Redis for 600 s', async () => {
      const res = await t.http.post('/api/viewer/token', { token: tokens.user1, body: { study_id: mine.id } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ token: expect.stringMatching(UUID), expires_in: 600 });
      const value = (await t.redis.get(`viewer:${res.body.token}`))!;
      expect(value).toMatch(/^\{.*\}\.[A-Za-z0-9_-]{43}$/);
      const stored = JSON.parse(value.slice(0, value.lastIndexOf('.')));
      expect(stored).toEqual({
        user_id: clinic.user1.id,
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        study_id: mine.id,
        patient_id: mine.patient_id,
        share_id: null,
        expires_at: expect.any(Number),
      });
      expect(stored.expires_at - Date.now()).toBeGreaterThan(595_000);
      const ttl = await t.redis.ttl(`viewer:${res.body.token}`);
      expect(ttl).toBeGreaterThan(595);
      expect(ttl).toBeLessThanOrEqual(600);
    });

    it('issues a new token on every call', async () => {
      expect(await issue(tokens.user1, mine.id)).not.toBe(await issue(tokens.user1, mine.id));
    });

    it('isolation: a study of unit 1 of the tenant', async () => {
      const seen: Record<string, string | number> = {};
      for (const caller of CALLERS) {
        const res = await t.http.post('/api/viewer/token', { token: tokens[caller], body: { study_id: mine.id } });
        seen[caller] = res.status === 200 ? 200 : `${res.status} ${JSON.stringify(res.body)}`;
      }
      const refused = '404 {"error":"Study not found"}';
      expect(seen).toEqual({ user1: 200, user2: refused, tenantAdmin: 200, otherAdmin: refused, superAdmin: 200 });
    });

    it("answers 404 {error: Study not found} to a regular user without a unit, even for a study of the user's clinic", async () => {
      const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: null });
      const session = await login(t.http, user.email);
      for (const study of [mine, mineUnit2]) {
        const res = await t.http.post('/api/viewer/token', { token: session, body: { study_id: study.id } });
        expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { error: 'Study not found' } });
      }
    });

    it('answers 404 {error: Study not found} for an unknown study', async () => {
      const res = await t.http.post('/api/viewer/token', {
        token: tokens.superAdmin,
        body: { study_id: '00000000-0000-4000-8000-000000000000' },
      });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Study not found' });
    });

    it.each([
      ['no body', undefined],
      ['an empty object', {}],
      ['a non-uuid study_id', { study_id: 'abc' }],
      ['a numeric study_id', { study_id: 42 }],
      ['a null study_id', { study_id: null }],
    ])('answers 422 for %s', async (_, body) => {
      const res = await t.http.post('/api/viewer/token', { token: tokens.user1, body });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: expect.any(String),
        errors: { study_id: expect.arrayContaining([expect.any(String)]) },
      });
    });

    it('answers 401 {message: Unauthenticated.} without a bearer token, or with a viewer token as bearer', async () => {
      const viewerToken = await issue(tokens.user1, mine.id);
      for (const token of [undefined, viewerToken]) {
        const res = await t.http.post('/api/viewer/token', { token, body: { study_id: mine.id } });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ message: 'Unauthenticated.' });
      }
    });
  });

  describe.each(['in process', 'socket'] as const)('GET /api/viewer/token/validate (%s)', (via) => {
    let token: string;
    beforeAll(async () => {
      token = await issue(tokens.user1, mine.id);
      if (via === 'socket' && !baseUrl) {
        await t.app.listen(0, '127.0.0.1');
        const address = t.app.getHttpServer().address() as AddressInfo;
        baseUrl = `http://127.0.0.1:${address.port}`;
      }
    });
    beforeEach(() => {
      transport = via;
    });
    afterAll(() => {
      transport = 'in process';
    });

    it("allows the token's study with 200 and an empty body", async () => {
      const res = await validate(token, `/dicom-web/studies/${mine.study_instance_uid}/series`);
      expect(res.status).toBe(200);
      expect(res.raw.length).toBe(0);
    });

    it('skips the browser security headers, which only cost time on a subrequest nginx consumes', async () => {
      const res = await validate(token, `/dicom-web/studies/${mine.study_instance_uid}`);
      expect(res.headers['content-security-policy']).toBeUndefined();
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('needs no bearer token (public)', async () => {
      const res = await t.http.get(VALIDATE, {
        headers: { 'x-viewer-token': token, 'x-original-uri': `/dicom-web/studies/${mine.study_instance_uid}` },
      });
      expect(res.status).toBe(200);
    });

    it.each([
      ['the path form', (uid: string) => `/dicom-web/studies/${uid}`],
      ['a deep WADO-RS path', (uid: string) => `/dicom-web/studies/${uid}/series/1.2.3/instances/4.5.6/frames/1`],
      ['0020000D=', (uid: string) => `/dicom-web/series?0020000D=${uid}`],
      ['0020,000D=', (uid: string) => `/dicom-web/instances?0020,000D=${uid}`],
      ['0020-000d=', (uid: string) => `/dicom-web/studies?0020-000d=${uid}&PatientID=X`],
      [
        'StudyInstanceUID= (OHIF)',
        (uid: string) =>
          `/dicom-web/studies?limit=101&offset=0&fuzzymatching=false&includefield=00081030%2C00080060&StudyInstanceUID=${uid}`,
      ],
      ['an encoded value', (uid: string) => `/dicom-web/studies?StudyInstanceUID=${encodeURIComponent(uid)}`],
    ])('accepts %s', async (_, uri) => {
      const res = await validate(token, uri(mine.study_instance_uid));
      expect(res.status).toBe(200);
    });

    // The image server answers nothing here: a rendering it cannot be asked about is refused. The
    // renderings it allows and refuses by their instances are in the viewer-gate system test.
    it.each([
      ['a frame', (uid: string) => `/dicom-web/studies/${uid}/series/1.2/instances/3.4/frames/1/rendered?quality=90`],
      ['an instance', (uid: string) => `/dicom-web/studies/${uid}/series/1.2/instances/3.4/rendered`],
      ['the whole study', (uid: string) => `/dicom-web/studies/${uid}/rendered`],
    ])('refuses a rendering of its own study that the image server cannot vouch for: %s', async (_, uri) => {
      const res = await validate(token, uri(mine.study_instance_uid));
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Forbidden' });
    });

    it('accepts several UIDs it reads, separated by , encoded or not', async () => {
      const a = mine.study_instance_uid;
      const b = mineToo.study_instance_uid;
      for (const list of [`${a},${b}`, `${a}%2C${b}`, `${a}%2c${b}`]) {
        const res = await validate(token, `/dicom-web/studies?StudyInstanceUID=${list}`);
        expect({ list, status: res.status }).toEqual({ list, status: 200 });
      }
    });

    it("reads its issuer's unit and the patient's priors in other units, not another unit's other patients", async () => {
      for (const [study, status] of [
        [mine, 200],
        [mineToo, 200],
        [priorUnit2, 200],
        [mineUnit2, 403],
      ] as const) {
        const res = await validate(token, `/dicom-web/studies/${study.study_instance_uid}/series`);
        expect({ study: study.id, status: res.status }).toEqual({ study: study.id, status });
      }
      const both = await validate(
        token,
        `/dicom-web/studies?StudyInstanceUID=${mine.study_instance_uid},${mineUnit2.study_instance_uid}`,
      );
      expect(both.status).toBe(403);
    });

    it("a tenant admin's token reads the clinic", async () => {
      const admin = await issue(tokens.tenantAdmin, mineUnit2.id);
      for (const study of [mine, mineUnit2, priorUnit2]) {
        expect((await validate(admin, `/dicom-web/studies/${study.study_instance_uid}`)).status).toBe(200);
      }
      expect((await validate(admin, `/dicom-web/studies/${theirs.study_instance_uid}`)).status).toBe(403);
    });

    it("answers 403 {error: Forbidden} for another tenant's study in every form", async () => {
      const uid = theirs.study_instance_uid;
      for (const uri of [
        `/dicom-web/studies/${uid}`,
        `/dicom-web/studies/${uid}/series`,
        `/dicom-web/series?0020000D=${uid}`,
        `/dicom-web/studies?StudyInstanceUIDs=${uid}`,
        `/dicom-web/studies?StudyInstanceUID=${uid}`,
        `/dicom-web/studies?STUDYINSTANCEUID=${uid}`,
        `/dicom-web/studies/${mine.study_instance_uid}/series?0020000D=${uid}`,
      ]) {
        const res = await validate(token, uri);
        expect({ uri, status: res.status, body: res.body }).toEqual({ uri, status: 403, body: { error: 'Forbidden' } });
      }
    });

    it("answers 403 when one UID among several is another tenant's", async () => {
      const a = mine.study_instance_uid;
      const x = theirs.study_instance_uid;
      for (const list of [`${a},${x}`, `${x}\\${a}`, `${a}%2C${x}`, `${a}%5C${x}`]) {
        const res = await validate(token, `/dicom-web/studies?StudyInstanceUID=${list}`);
        expect({ list, status: res.status, body: res.body }).toEqual({ list, status: 403, body: { error: 'Forbidden' } });
      }
    });

    it.each([
      ['no UID (a search of every study)', '/dicom-web/studies?limit=10'],
      ['no X-Original-URI', undefined],
      ['an unknown UID', `/dicom-web/studies/${dicomUid()}`],
      ['a * wildcard', '/dicom-web/studies?StudyInstanceUID=*'],
      ['a ? wildcard', '/dicom-web/studies?0020000D=1.2.?'],
      ['a wildcard with a known UID', `/dicom-web/studies?StudyInstanceUID=KNOWN,*`],
      ['an empty value', '/dicom-web/studies?StudyInstanceUID='],
      ['garbage', '%%%'],
      // Spellings the image server does not apply: its search would list every clinic's studies.
      ['the plural StudyInstanceUIDs', '/dicom-web/studies?StudyInstanceUIDs=KNOWN'],
      ['a lower-case key', '/dicom-web/studies?studyinstanceuid=KNOWN'],
      ['a percent-encoded key', '/dicom-web/studies?%53tudyInstanceUID=KNOWN'],
      ['the tag in parentheses', '/dicom-web/studies?(0020,000D)=KNOWN'],
      // Spellings it applies but the validator does not list, and tricks on the last-one-wins rule.
      ['a second filter as 20,d', '/dicom-web/studies?StudyInstanceUID=KNOWN&20,d=KNOWN'],
      ['the filter twice', '/dicom-web/studies?StudyInstanceUID=KNOWN&0020000D=KNOWN'],
      ['a raw # before a second filter', '/dicom-web/studies?StudyInstanceUID=KNOWN#&StudyInstanceUID=KNOWN'],
      ['a raw \\ in a value', '/dicom-web/studies?StudyInstanceUID=KNOWN\\KNOWN'],
      ['an unknown key', '/dicom-web/studies?StudyInstanceUID=KNOWN&foo=1'],
      ['a search without the filter', '/dicom-web/series?PatientID=KNOWN'],
      [
        'more than 50 UIDs',
        `/dicom-web/studies?StudyInstanceUID=KNOWN${Array.from({ length: 50 }, (_, i) => `,1.2.${i}`).join('')}`,
      ],
    ])('answers 403 {error: Forbidden} for %s', async (_, uri) => {
      const res = await validate(token, uri?.replace(/KNOWN/g, mine.study_instance_uid));
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Forbidden' });
    });

    it('answers 401 {error: Missing token} without the header, or with an empty one', async () => {
      for (const value of [undefined, '']) {
        const res = await validate(value, `/dicom-web/studies/${mine.study_instance_uid}`);
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: 'Missing token' });
      }
    });

    it.each([
      ['an unknown uuid', '00000000-0000-4000-8000-000000000000'],
      ['not a uuid', 'good'],
      ['an access token', 'ACCESS'],
      ['a uuid with trailing text', '00000000-0000-4000-8000-000000000000 x'],
    ])('answers 401 {error: Invalid or expired token} for %s', async (_, value) => {
      const res = await validate(value === 'ACCESS' ? tokens.user1 : value, `/dicom-web/studies/${mine.study_instance_uid}`);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Invalid or expired token' });
    });

    it('checks the token before the study: an invalid token with no UID is 401', async () => {
      const res = await validate('00000000-0000-4000-8000-000000000000', '/dicom-web/studies');
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'Invalid or expired token' } });
    });

    it('answers only 200, 401 or 403, whatever it is sent', async () => {
      const weird = [
        '/dicom-web/studies/' + '9'.repeat(5000),
        '/dicom-web/studies?' + 'StudyInstanceUID=1&'.repeat(500),
        '/dicom-web/studies/%FF%FE',
        '/dicom-web/studies/\u00e9\u4e2d',
        '?',
        '/',
        '#/studies/1.2',
      ];
      for (const uri of weird) {
        const res = await validate(token, uri);
        expect([200, 401, 403]).toContain(res.status);
      }
    });

    it('reads neither PostgreSQL nor Redis for repeated validations (caches)', async () => {
      const fresh = await issue(tokens.user1, mine.id);
      const uri = `/dicom-web/studies/${mine.study_instance_uid}/series`;
      expect((await validate(fresh, uri)).status).toBe(200);
      // Issuing is audited; write that entry now so that the audit's timed flush stays out of the count.
      await t.app.get(AuditService).flush();
      const pg = jest.spyOn(t.db, 'query');
      const redis = jest.spyOn(t.redis, 'get');
      try {
        for (let i = 0; i < 50; i++) expect((await validate(fresh, uri)).status).toBe(200);
        expect(pg).not.toHaveBeenCalled();
        expect(redis).not.toHaveBeenCalled();
      } finally {
        pg.mockRestore();
        redis.mockRestore();
      }
    });

    it('does not hit PostgreSQL for the first validation either: issuing warms the study cache', async () => {
      const { study } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
      const fresh = await issue(tokens.user1, study.id);
      const pg = jest.spyOn(t.db, 'query');
      try {
        expect((await validate(fresh, `/dicom-web/studies/${study.study_instance_uid}`)).status).toBe(200);
        expect(pg.mock.calls.map(([sql]) => String(sql)).filter((sql) => /FROM studies/.test(sql))).toEqual([]);
      } finally {
        pg.mockRestore();
      }
    });

    describe('with a user session instead of a viewer token', () => {
      const bearer = (accessToken: string, uri: string) => ({ authorization: `Bearer ${accessToken}`, 'x-original-uri': uri });
      const cookie = (accessToken: string, uri: string) => ({
        cookie: `pacs_access_token=${accessToken}`,
        'x-original-uri': uri,
      });
      const path = (study: StudyRow) => `/dicom-web/studies/${study.study_instance_uid}/series`;
      const outcome = (res: TestResponse) =>
        res.status === 200 ? `200 ${res.raw.length}` : `${res.status} ${JSON.stringify(res.body)}`;
      const FORBIDDEN = '403 {"error":"Forbidden"}';
      const INVALID = '401 {"error":"Invalid or expired token"}';

      it("opens the user's own scope: a regular user's unit, a tenant admin's clinic, everything for a super admin", async () => {
        const seen: Record<string, string[]> = {};
        for (const caller of CALLERS) {
          seen[caller] = [];
          for (const study of [mine, mineUnit2, theirs])
            seen[caller].push(outcome(await validateWith(bearer(tokens[caller], path(study)))));
        }
        expect(seen).toEqual({
          user1: ['200 0', FORBIDDEN, FORBIDDEN],
          user2: [FORBIDDEN, '200 0', FORBIDDEN],
          tenantAdmin: ['200 0', '200 0', FORBIDDEN],
          otherAdmin: [FORBIDDEN, FORBIDDEN, '200 0'],
          superAdmin: ['200 0', '200 0', '200 0'],
        });
      });

      it('reads the session cookie as the bearer', async () => {
        expect(outcome(await validateWith(cookie(tokens.user1, path(mine))))).toBe('200 0');
        expect(outcome(await validateWith(cookie(tokens.user1, path(mineUnit2))))).toBe(FORBIDDEN);
        expect(outcome(await validateWith(cookie(tokens.user1, '/dicom-web/studies?PatientID=X')))).toBe(FORBIDDEN);
      });

      it('refuses every UID outside the scope, and what the image server would not filter', async () => {
        const a = mine.study_instance_uid;
        for (const uri of [
          `/dicom-web/studies?StudyInstanceUID=${a},${mineUnit2.study_instance_uid}`,
          `/dicom-web/studies/${a}/series?0020000D=${theirs.study_instance_uid}`,
          `/dicom-web/studies?StudyInstanceUIDs=${a}`,
          `/dicom-web/studies/${dicomUid()}`,
        ]) {
          expect({ uri, outcome: outcome(await validateWith(bearer(tokens.user1, uri))) }).toEqual({ uri, outcome: FORBIDDEN });
        }
      });

      it("keeps the viewer token's rule for a uuid bearer (OHIF's token parameter): the token's reach", async () => {
        expect(outcome(await validateWith(bearer(token, path(priorUnit2))))).toBe('200 0');
        expect(outcome(await validateWith(bearer(token, path(theirs))))).toBe(FORBIDDEN);
        // X-Viewer-Token wins over a session.
        expect(outcome(await validateWith({ ...bearer(tokens.user1, path(priorUnit2)), 'x-viewer-token': token }))).toBe(
          '200 0',
        );
      });

      it.each([
        ['a token that is not a JWT', 'not-a-jwt'],
        ['a JWT with a wrong signature', 'SIGNED'],
        ['a viewer token that does not exist', '00000000-0000-4000-8000-000000000000'],
      ])('answers 401 {error: Invalid or expired token} for %s', async (_, value) => {
        const forged = value === 'SIGNED' ? `${tokens.user1.slice(0, tokens.user1.lastIndexOf('.'))}.AAAA` : value;
        expect(outcome(await validateWith(bearer(forged, path(mine))))).toBe(INVALID);
        expect(outcome(await validateWith(cookie(forged, path(mine))))).toBe(INVALID);
      });

      it('answers 401 for a logged-out session, at once', async () => {
        const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
        const session = await login(t.http, user.email);
        expect(outcome(await validateWith(bearer(session, path(mine))))).toBe('200 0');
        expect((await t.http.post('/api/logout', { token: session })).status).toBeLessThan(300);
        expect(outcome(await validateWith(bearer(session, path(mine))))).toBe(INVALID);
        expect(outcome(await validateWith(cookie(session, path(mine))))).toBe(INVALID);
      });

      it('answers 401 for a deactivated user and for a user of a deactivated clinic', async () => {
        const fresh = await createClinic(t.db, t.http);
        const { study } = await createImagedStudy(t.db, fresh.tenant.id, fresh.unit1.id);
        expect(outcome(await validateWith(bearer(fresh.token1, path(study))))).toBe('200 0');
        await t.db.query(`UPDATE users SET is_active = false WHERE id = $1`, [fresh.user1.id]);
        t.app.get(AccountStatusService).forgetAll();
        expect(outcome(await validateWith(bearer(fresh.token1, path(study))))).toBe(INVALID);
        expect(outcome(await validateWith(bearer(fresh.adminToken, path(study))))).toBe('200 0');
        await t.db.query(`UPDATE tenants SET is_active = false WHERE id = $1`, [fresh.tenant.id]);
        t.app.get(AccountStatusService).forgetAll();
        expect(outcome(await validateWith(bearer(fresh.adminToken, path(study))))).toBe(INVALID);
      });

      it('answers 403 for a regular user without a unit', async () => {
        const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: null });
        const session = await login(t.http, user.email);
        expect(outcome(await validateWith(bearer(session, path(mine))))).toBe(FORBIDDEN);
      });

      it('reads no PostgreSQL for repeated validations (the account and the study places are cached)', async () => {
        const uri = path(mine);
        // Filled now, not by an earlier test: an entry near the end of its lifetime would expire mid-loop on a slow run.
        t.app.get(StudyPlacesCache).clear();
        t.app.get(AccountStatusService).forgetAll();
        expect(outcome(await validateWith(bearer(tokens.user1, uri)))).toBe('200 0');
        await t.app.get(AuditService).flush();
        const pg = jest.spyOn(t.db, 'query');
        try {
          for (let i = 0; i < 20; i++) expect((await validateWith(bearer(tokens.user1, uri))).status).toBe(200);
          expect(pg).not.toHaveBeenCalled();
        } finally {
          pg.mockRestore();
        }
      });
    });

    it('bounds PostgreSQL under a flood of unknown UIDs: few lookups at a time, then remembered', async () => {
      // Its own token: past the flood the token is refused outright (the refused-UID limit).
      const token = await issue(tokens.user1, mine.id);
      await t.app.get(AuditService).flush();
      const unknown = Array.from({ length: 300 }, () => dicomUid());
      const uris = unknown.map((uid, i) =>
        i % 2 ? `/dicom-web/studies/${uid}` : `/dicom-web/studies?StudyInstanceUID=${uid},${dicomUid()}`,
      );
      const query = t.db.query.bind(t.db);
      let running = 0;
      let mostAtOnce = 0;
      let lookups = 0;
      const pg = jest.spyOn(t.db, 'query').mockImplementation(async (sql: string, ...rest: unknown[]) => {
        if (!/FROM studies/.test(sql)) return query(sql, ...(rest as []));
        lookups++;
        mostAtOnce = Math.max(mostAtOnce, ++running);
        try {
          return await query(sql, ...(rest as []));
        } finally {
          running--;
        }
      });
      try {
        const first = await Promise.all(uris.map((uri) => validate(token, uri)));
        expect(first.map((res) => `${res.status} ${JSON.stringify(res.body)}`)).toEqual(
          uris.map(() => '403 {"error":"Forbidden"}'),
        );
        expect(mostAtOnce).toBeGreaterThan(0);
        expect(mostAtOnce).toBeLessThanOrEqual(MAX_CONCURRENT_LOOKUPS);
        // In process, the 300 requests arrive at once: 450 UIDs in a handful of lookups.
        if (via === 'in process') expect(lookups).toBeLessThanOrEqual(10);
        lookups = 0;
        for (const uri of uris.filter((_, i) => i % 2)) expect((await validate(token, uri)).status).toBe(403);
        expect(lookups).toBe(0);
      } finally {
        pg.mockRestore();
      }
    });
  });

  describe('the raw route on a socket, next to the Nest route', () => {
    let token: string;
    beforeAll(async () => {
      token = await issue(tokens.user1, mine.id);
      if (!baseUrl) {
        await t.app.listen(0, '127.0.0.1');
        baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
      }
    });
    const headersOf = (viewerToken: string | undefined, uri: string) => ({
      ...(viewerToken === undefined ? {} : { 'x-viewer-token': viewerToken }),
      'x-original-uri': uri,
    });
    const comparable = (res: TestResponse) => ({
      status: res.status,
      body: res.raw.toString('utf8'),
      contentType: res.headers['content-type'],
      contentLength: res.headers['content-length'],
      cacheControl: res.headers['cache-control'],
      requestId: typeof res.headers['x-request-id'],
    });

    it('answers each verdict with the same status, body and headers as the Nest route', async () => {
      const cases: Array<[string | undefined, string]> = [
        [token, `/dicom-web/studies/${mine.study_instance_uid}/series`],
        [token, `/dicom-web/studies/${theirs.study_instance_uid}`],
        [token, '/dicom-web/studies'],
        [undefined, `/dicom-web/studies/${mine.study_instance_uid}`],
        ['00000000-0000-4000-8000-000000000000', `/dicom-web/studies/${mine.study_instance_uid}`],
      ];
      const statuses: number[] = [];
      for (const [viewerToken, uri] of cases) {
        const socket = await socketRequest(baseUrl, 'GET', VALIDATE, headersOf(viewerToken, uri));
        const inProcess = await t.http.get(VALIDATE, { headers: headersOf(viewerToken, uri) });
        expect({ uri, ...comparable(socket) }).toEqual({ uri, ...comparable(inProcess) });
        statuses.push(socket.status);
      }
      expect(statuses).toEqual([200, 403, 403, 401, 401]);
    });

    it('answers HEAD like GET, without a body', async () => {
      const allowed = await socketRequest(
        baseUrl,
        'HEAD',
        VALIDATE,
        headersOf(token, `/dicom-web/studies/${mine.study_instance_uid}`),
      );
      expect(allowed.status).toBe(200);
      const refused = await socketRequest(baseUrl, 'HEAD', VALIDATE, headersOf(undefined, '/dicom-web/studies/1.2'));
      expect(refused.status).toBe(401);
      expect(refused.raw.length).toBe(0);
      expect(refused.headers['content-length']).toBe(String(Buffer.byteLength('{"error":"Missing token"}')));
    });

    it('echoes a sane X-Request-Id and makes one up otherwise', async () => {
      const uri = `/dicom-web/studies/${mine.study_instance_uid}`;
      const given = await socketRequest(baseUrl, 'GET', VALIDATE, { ...headersOf(token, uri), 'x-request-id': 'nginx-7f3a.1' });
      expect(given.headers['x-request-id']).toBe('nginx-7f3a.1');
      const unsafe = await socketRequest(baseUrl, 'GET', VALIDATE, { ...headersOf(token, uri), 'x-request-id': 'a b<c>' });
      expect(unsafe.headers['x-request-id']).toMatch(UUID);
      expect((await socketRequest(baseUrl, 'GET', `${VALIDATE}?x=1`, headersOf(token, uri))).status).toBe(200);
    });

    it('leaves every other method and path to the application', async () => {
      const post = await socketRequest(baseUrl, 'POST', VALIDATE, headersOf(token, '/dicom-web/studies/1.2'));
      const postInProcess = await t.http.post(VALIDATE, { headers: headersOf(token, '/dicom-web/studies/1.2') });
      expect(post.status).toBe(404);
      expect(post.body).toEqual(postInProcess.body);
      expect((await socketRequest(baseUrl, 'GET', `${VALIDATE}/`, headersOf(token, '/dicom-web/studies/1.2'))).status).toBe(
        404,
      );
      const health = await socketRequest(baseUrl, 'GET', '/api/health');
      expect(health.status).toBe(200);
      expect(health.headers['x-request-id']).toMatch(UUID);
    });
  });

  describe('super admin and special tenants', () => {
    it("a super admin's token reads the super admin's scope: every clinic", async () => {
      const token = await issue(tokens.superAdmin, theirs.id);
      expect((await validate(token, `/dicom-web/studies/${theirs.study_instance_uid}`)).status).toBe(200);
      expect((await validate(token, `/dicom-web/studies/${mine.study_instance_uid}`)).status).toBe(200);
    });

    it('a super admin can view a quarantined study (the quarantine tenant is inactive by design)', async () => {
      const [quarantine] = await t.db.query(
        `SELECT t.id AS tenant_id, u.id AS unit_id FROM tenants t JOIN units u ON u.tenant_id = t.id
          WHERE t.slug = 'quarantine' AND u.slug = 'quarantine'`,
      );
      const study = await createStudy(t.db, { tenant_id: quarantine.tenant_id, unit_id: quarantine.unit_id });
      const token = await issue(tokens.superAdmin, study.id);
      expect((await validate(token, `/dicom-web/studies/${study.study_instance_uid}`)).status).toBe(200);
    });

    it('refuses a UID that two tenants hold (the image server would serve both as one study)', async () => {
      const shared = dicomUid();
      const ours = await createStudy(t.db, {
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        study_instance_uid: shared,
      });
      await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id, study_instance_uid: shared });
      const token = await issue(tokens.user1, ours.id);
      const res = await validate(token, `/dicom-web/studies/${shared}`);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Forbidden' });
    });
  });

  describe('the refused-UID limit and signed records', () => {
    it('refuses a token outright once it named 30 UIDs it cannot read in a minute; other tokens go on', async () => {
      const probing = await issue(tokens.user1, mine.id);
      const bystander = await issue(tokens.user1, mine.id);
      const own = `/dicom-web/studies/${mine.study_instance_uid}`;
      expect((await validate(probing, own)).status).toBe(200);
      for (let i = 0; i < 10; i++) {
        const uids = [dicomUid(), dicomUid(), theirs.study_instance_uid].join(',');
        expect((await validate(probing, `/dicom-web/studies?StudyInstanceUID=${uids}`)).status).toBe(403);
      }
      // 30 refused so far: the limit is reached, not passed.
      expect((await validate(probing, own)).status).toBe(200);
      expect((await validate(probing, `/dicom-web/studies/${mineUnit2.study_instance_uid}`)).status).toBe(403);
      // A refusal is counted after its answer has gone (off the request's path): wait for the count.
      const counted = async () => Number(await t.redis.get(`viewer:refused:token:${probing}`));
      for (let i = 0; i < 100 && (await counted()) < 31; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(await counted()).toBe(31);
      const res = await validate(probing, own);
      expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { error: 'Forbidden' } });
      const ttl = await t.redis.ttl(`viewer:refused:token:${probing}`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60);
      expect((await validate(bystander, own)).status).toBe(200);
    });

    it('refuses (401) a record at a token key that the API did not write, even one shaped like its own', async () => {
      const real = await issue(tokens.user1, mine.id);
      const sealed = (await t.redis.get(`viewer:${real}`))!;
      const json = sealed.slice(0, sealed.lastIndexOf('.'));
      const planted = [
        '5eed0000-0000-4000-8000-000000000001',
        '5eed0000-0000-4000-8000-000000000002',
        '5eed0000-0000-4000-8000-000000000003',
      ];
      const forgedScope = JSON.stringify({ ...JSON.parse(json), study_id: theirs.id, tenant_id: other.tenant.id });
      await t.redis.set(`viewer:${planted[0]}`, json, 'EX', 60);
      await t.redis.set(`viewer:${planted[1]}`, sealed, 'EX', 60);
      await t.redis.set(`viewer:${planted[2]}`, `${forgedScope}.${sealed.slice(sealed.lastIndexOf('.') + 1)}`, 'EX', 60);
      for (const token of planted) {
        const res = await validate(token, `/dicom-web/studies/${mine.study_instance_uid}`);
        expect({ token, status: res.status, body: res.body }).toEqual({
          token,
          status: 401,
          body: { error: 'Invalid or expired token' },
        });
      }
      expect((await validate(real, `/dicom-web/studies/${mine.study_instance_uid}`)).status).toBe(200);
    });
  });

  describe('deactivation', () => {
    it('refuses with 401 the tokens of a tenant deactivated by an admin write (at once on that process)', async () => {
      const fresh = await createClinic(t.db, t.http);
      const { study } = await createImagedStudy(t.db, fresh.tenant.id, fresh.unit1.id);
      const token = await issue(fresh.token1, study.id);
      const uri = `/dicom-web/studies/${study.study_instance_uid}`;
      expect((await validate(token, uri)).status).toBe(200);
      await t.db.query(`UPDATE tenants SET is_active = false WHERE id = $1`, [fresh.tenant.id]);
      // What the tenant-status write does after committing.
      t.app.get(AccountStatusService).forgetAll();
      const res = await validate(token, uri);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Invalid or expired token' });
      await t.db.query(`UPDATE tenants SET is_active = true WHERE id = $1`, [fresh.tenant.id]);
      t.app.get(AccountStatusService).forgetAll();
      expect((await validate(token, uri)).status).toBe(200);
    });

    it('refuses them within seconds on a process that was not told (cache expiry)', async () => {
      const fresh = await createClinic(t.db, t.http);
      const { study } = await createImagedStudy(t.db, fresh.tenant.id, fresh.unit1.id);
      const token = await issue(fresh.token1, study.id);
      const uri = `/dicom-web/studies/${study.study_instance_uid}`;
      expect((await validate(token, uri)).status).toBe(200);
      await t.db.query(`UPDATE tenants SET is_active = false WHERE id = $1`, [fresh.tenant.id]);
      const started = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - started < 5_000) {
        status = (await validate(token, uri)).status;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(status).toBe(401);
      expect(Date.now() - started).toBeLessThan(4_000);
    });

    it('refuses the token of a user moved to another unit (it is bound to the unit), at once, until moved back', async () => {
      const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const token = await issue(await login(t.http, user.email), mine.id);
      const uri = `/dicom-web/studies/${mine.study_instance_uid}`;
      const move = async (unitId: string) => {
        const res = await t.http.patch(`/api/admin/users/${user.id}`, { token: superAdmin.token, body: { unit_id: unitId } });
        expect(res.status).toBe(200);
      };
      expect((await validate(token, uri)).status).toBe(200);
      await move(clinic.unit2.id);
      for (const study of [mine, mineUnit2]) {
        const res = await validate(token, `/dicom-web/studies/${study.study_instance_uid}`);
        expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'Invalid or expired token' } });
      }
      await move(clinic.unit1.id);
      expect((await validate(token, uri)).status).toBe(200);
    });

    it('refuses the token of a deactivated user, and of a user moved to another tenant', async () => {
      const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const bearer = await login(t.http, user.email);
      const token = await issue(bearer, mine.id);
      const uri = `/dicom-web/studies/${mine.study_instance_uid}`;
      expect((await validate(token, uri)).status).toBe(200);
      await t.db.query(`UPDATE users SET tenant_id = $2, unit_id = $3 WHERE id = $1`, [
        user.id,
        other.tenant.id,
        other.unit1.id,
      ]);
      const invalid = { status: 401, body: { error: 'Invalid or expired token' } };
      t.app.get(AccountStatusService).forgetAll();
      const moved = await validate(token, uri);
      expect({ status: moved.status, body: moved.body }).toEqual(invalid);
      await t.db.query(`UPDATE users SET tenant_id = $2, unit_id = $3, is_active = false WHERE id = $1`, [
        user.id,
        clinic.tenant.id,
        clinic.unit1.id,
      ]);
      t.app.get(AccountStatusService).forgetAll();
      const deactivated = await validate(token, uri);
      expect({ status: deactivated.status, body: deactivated.body }).toEqual(invalid);
    });
  });
});
