import { AccountStatusService } from '../../src/auth/account-status.service';
import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy, createStudy, dicomUid, StudyRow } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';

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
    theirs = (await createImagedStudy(t.db, other.tenant.id, other.unit1.id)).study;
  });
  afterAll(() => t?.close());

  const issue = async (token: string, studyId: string): Promise<string> => {
    const res = await t.http.post('/api/viewer/token', { token, body: { study_id: studyId } });
    if (res.status !== 200) throw new Error(`issue: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.token;
  };
  const validate = (viewerToken: string | undefined, originalUri: string | undefined) => {
    const headers: Record<string, string> = {};
    if (viewerToken !== undefined) headers['x-viewer-token'] = viewerToken;
    if (originalUri !== undefined) headers['x-original-uri'] = originalUri;
    return t.http.get(VALIDATE, { headers });
  };

  describe('POST /api/viewer/token', () => {
    it('issues a uuid token bound to the user, tenant and unit, in Redis for 600 s', async () => {
      const res = await t.http.post('/api/viewer/token', { token: tokens.user1, body: { study_id: mine.id } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ token: expect.stringMatching(UUID), expires_in: 600 });
      const stored = JSON.parse((await t.redis.get(`viewer:${res.body.token}`))!);
      expect(stored).toEqual({
        user_id: clinic.user1.id,
        tenant_id: clinic.tenant.id,
        unit_id: clinic.unit1.id,
        study_id: mine.id,
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
      expect(res.body).toEqual({ message: expect.any(String), errors: { study_id: expect.arrayContaining([expect.any(String)]) } });
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

  describe('GET /api/viewer/token/validate', () => {
    let token: string;
    beforeAll(async () => {
      token = await issue(tokens.user1, mine.id);
    });

    it('allows the token\'s study with 200 and an empty body', async () => {
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
      ['StudyInstanceUIDs=', (uid: string) => `/dicom-web/studies?StudyInstanceUIDs=${uid}`],
      ['StudyInstanceUID= (OHIF)', (uid: string) => `/dicom-web/studies?limit=101&offset=0&fuzzymatching=false&includefield=00081030%2C00080060&StudyInstanceUID=${uid}`],
      ['a lower-case key', (uid: string) => `/dicom-web/studies?studyinstanceuid=${uid}`],
      ['an encoded value', (uid: string) => `/dicom-web/studies?StudyInstanceUID=${encodeURIComponent(uid)}`],
    ])('accepts %s', async (_, uri) => {
      const res = await validate(token, uri(mine.study_instance_uid));
      expect(res.status).toBe(200);
    });

    it('accepts several UIDs of the tenant, separated by , or \\, encoded or not', async () => {
      const a = mine.study_instance_uid;
      const b = mineUnit2.study_instance_uid;
      for (const list of [`${a},${b}`, `${a}\\${b}`, `${a}%2C${b}`, `${a}%5C${b}`, `${a}%5c${b}`]) {
        const res = await validate(token, `/dicom-web/studies?StudyInstanceUID=${list}`);
        expect({ list, status: res.status }).toEqual({ list, status: 200 });
      }
    });

    it('checks only the tenant: a study of another unit of the same tenant is allowed', async () => {
      const res = await validate(token, `/dicom-web/studies/${mineUnit2.study_instance_uid}`);
      expect(res.status).toBe(200);
    });

    it('answers 403 {error: Forbidden} for another tenant\'s study in every form', async () => {
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

    it('answers 403 when one UID among several is another tenant\'s', async () => {
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
    ])('answers 403 {error: Forbidden} for %s', async (_, uri) => {
      const res = await validate(token, uri?.replace('KNOWN', mine.study_instance_uid));
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
      expect(res.status).toBe(401);
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
  });

  describe('super admin and special tenants', () => {
    it('a super admin\'s token opens the studies of that study\'s tenant only', async () => {
      const token = await issue(tokens.superAdmin, theirs.id);
      expect((await validate(token, `/dicom-web/studies/${theirs.study_instance_uid}`)).status).toBe(200);
      const mineRes = await validate(token, `/dicom-web/studies/${mine.study_instance_uid}`);
      expect(mineRes.status).toBe(403);
      expect(mineRes.body).toEqual({ error: 'Forbidden' });
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
      const ours = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, study_instance_uid: shared });
      await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id, study_instance_uid: shared });
      const token = await issue(tokens.user1, ours.id);
      const res = await validate(token, `/dicom-web/studies/${shared}`);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Forbidden' });
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

    it('refuses the token of a deactivated user, and of a user moved to another tenant', async () => {
      const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const bearer = await login(t.http, user.email);
      const token = await issue(bearer, mine.id);
      const uri = `/dicom-web/studies/${mine.study_instance_uid}`;
      expect((await validate(token, uri)).status).toBe(200);
      await t.db.query(`UPDATE users SET tenant_id = $2, unit_id = $3 WHERE id = $1`, [user.id, other.tenant.id, other.unit1.id]);
      t.app.get(AccountStatusService).forgetAll();
      expect((await validate(token, uri)).status).toBe(401);
      await t.db.query(`UPDATE users SET tenant_id = $2, unit_id = $3, is_active = false WHERE id = $1`, [
        user.id,
        clinic.tenant.id,
        clinic.unit1.id,
      ]);
      t.app.get(AccountStatusService).forgetAll();
      expect((await validate(token, uri)).status).toBe(401);
    });
  });
});
