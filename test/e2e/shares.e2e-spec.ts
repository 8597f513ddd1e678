import { createHash } from 'crypto';
import Redis from 'ioredis';
import { AuditService } from '../../src/audit/audit.service';
import { REDIS } from '../../src/common/redis/redis.module';
import { ViewerService } from '../../src/viewer';
import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy, StudyRow } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';
import { ISO } from '../support/expectations';

jest.setTimeout(60_000);

const VALIDATE = '/api/viewer/token/validate';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('Share links', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superAdmin: Awaited<ReturnType<typeof createSuperAdminUser>>;
  let study: StudyRow;
  let sibling: StudyRow;
  let unit2Study: StudyRow;

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superAdmin = await createSuperAdminUser(t.db, t.http);
    study = (await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id)).study;
    sibling = (await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id)).study;
    unit2Study = (await createImagedStudy(t.db, clinic.tenant.id, clinic.unit2.id)).study;
    await t.db.query(`UPDATE studies SET modalities = '{CT}', study_description = 'CHEST' WHERE id = $1`, [study.id]);
  });
  afterAll(() => t?.close());

  const create = (body: Record<string, unknown> = {}, token = clinic.token1, studyId = study.id) =>
    t.http.post(`/api/studies/${studyId}/shares`, { token, body });
  const created = async (body: Record<string, unknown> = {}) => {
    const res = await create(body);
    if (res.status !== 201) throw new Error(`create: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const open = (token: unknown, passcode?: unknown, ip?: string) =>
    t.http.post('/api/shares/open', { body: passcode === undefined ? { token } : { token, passcode }, ip });
  const validate = (viewerToken: string, uid: string) =>
    t.http.get(VALIDATE, { headers: { 'x-viewer-token': viewerToken, 'x-original-uri': `/dicom-web/studies/${uid}/series` } });
  const auditRows = async (action: string, shareId: string) => {
    await t.app.get(AuditService).flush();
    return t.db.query(
      `SELECT user_id, study_id, tenant_id, share_id, ip FROM access_logs WHERE action = $1 AND share_id = $2`,
      [action, shareId],
    );
  };

  describe('POST /api/studies/{id}/shares', () => {
    it('answers 201 with the token once, its /s/ url and the defaults (a week, 20 uses); keeps only its SHA-256', async () => {
      const before = Date.now();
      const res = await create({ note: 'Dr. Souza, second opinion' });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        id: expect.stringMatching(UUID),
        token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        url: `/s/${res.body.token}`,
        expires_at: expect.stringMatching(ISO),
        max_uses: 20,
        uses: 0,
        has_passcode: false,
        note: 'Dr. Souza, second opinion',
        last_used_at: null,
        revoked_at: null,
        created_by: { id: clinic.user1.id, name: clinic.user1.name },
        created_at: expect.stringMatching(ISO),
      });
      const expires = Date.parse(res.body.expires_at) - before;
      expect(expires).toBeGreaterThan(168 * 3600_000 - 60_000);
      expect(expires).toBeLessThan(168 * 3600_000 + 60_000);
      const [row] = await t.db.query(`SELECT token_hash, passcode_hash FROM shares WHERE id = $1`, [res.body.id]);
      expect(row.token_hash).toBe(createHash('sha256').update(res.body.token).digest('hex'));
      expect(row.passcode_hash).toBeNull();
      const [{ found }] = await t.db.query(
        `SELECT count(*)::int AS found FROM shares WHERE row_to_json(shares)::text LIKE '%' || $1 || '%'`,
        [res.body.token],
      );
      expect(found).toBe(0);
      expect(await auditRows('share.create', res.body.id)).toEqual([
        expect.objectContaining({ user_id: clinic.user1.id, study_id: study.id, tenant_id: clinic.tenant.id }),
      ]);
    });

    it('takes expiry, uses and a passcode (kept as a scrypt hash, never as given)', async () => {
      const res = await create({ expires_in_hours: 1, max_uses: 1, passcode: 'abc123' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ max_uses: 1, has_passcode: true });
      const [row] = await t.db.query(`SELECT passcode_hash FROM shares WHERE id = $1`, [res.body.id]);
      expect(row.passcode_hash).toMatch(/^scrypt\$/);
      expect(row.passcode_hash).not.toContain('abc123');
    });

    it.each([
      [{ expires_in_hours: 0 }, 'expires_in_hours', 'The expires in hours field must be between 1 and 720.'],
      [{ expires_in_hours: 721 }, 'expires_in_hours', 'The expires in hours field must be between 1 and 720.'],
      [{ expires_in_hours: 1.5 }, 'expires_in_hours', 'The expires in hours field must be an integer.'],
      [{ expires_in_hours: '24' }, 'expires_in_hours', 'The expires in hours field must be a number.'],
      [{ max_uses: 0 }, 'max_uses', 'The max uses field must be between 1 and 1000.'],
      [{ max_uses: 1001 }, 'max_uses', 'The max uses field must be between 1 and 1000.'],
      [{ passcode: '12345' }, 'passcode', 'The passcode field must be at least 6 characters.'],
      [{ passcode: 'x'.repeat(65) }, 'passcode', 'The passcode field must not be greater than 64 characters.'],
      [{ passcode: 123456 }, 'passcode', 'The passcode field must be a string.'],
      [{ note: 'n'.repeat(256) }, 'note', 'The note field must not be greater than 255 characters.'],
    ])('answers 422 for %j', async (body, field, message) => {
      const res = await create(body);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ message, errors: { [field]: [message] } });
    });

    it.each([
      ['a user of another unit', () => clinic.token2],
      ['another clinic', () => other.adminToken],
    ])('answers 404 {message: "Study not found."} to %s', async (_, token) => {
      const res = await create({}, token());
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Study not found.' });
    });

    it('answers 404 for an unknown or malformed study id and 401 without a session', async () => {
      for (const id of ['00000000-0000-4000-8000-000000000000', 'nope']) {
        const res = await create({}, clinic.token1, id);
        expect([res.status, res.body]).toEqual([404, { message: 'Study not found.' }]);
      }
      const res = await t.http.post(`/api/studies/${study.id}/shares`, { body: {} });
      expect([res.status, res.body]).toEqual([401, { message: 'Unauthenticated.' }]);
    });

    it('answers 409 to the super admin for a study in quarantine or of a deactivated clinic (the link would never open); nothing kept', async () => {
      const [quarantine] = await t.db.query(
        `SELECT t.id AS tenant_id, u.id AS unit_id FROM tenants t JOIN units u ON u.tenant_id = t.id WHERE t.slug = 'quarantine'`,
      );
      const quarantined = (await createImagedStudy(t.db, quarantine.tenant_id, quarantine.unit_id)).study;
      const closing = await createClinic(t.db, t.http);
      const theirStudy = (await createImagedStudy(t.db, closing.tenant.id, closing.unit1.id)).study;
      await t.db.query(`UPDATE tenants SET is_active = false WHERE id = $1`, [closing.tenant.id]);
      for (const studyId of [quarantined.id, theirStudy.id]) {
        const res = await create({}, superAdmin.token, studyId);
        expect([res.status, res.body]).toEqual([
          409,
          { message: 'A study of an inactive clinic (quarantine included) cannot be shared.' },
        ]);
        expect(await t.db.query(`SELECT id FROM shares WHERE study_id = $1`, [studyId])).toEqual([]);
      }
      await t.app.get(AuditService).flush();
      expect(
        await t.db.query(`SELECT id FROM access_logs WHERE action = 'share.create' AND study_id = ANY($1)`, [
          [quarantined.id, theirStudy.id],
        ]),
      ).toEqual([]);
    });

    it('lets the tenant admin and the super admin share a study of the clinic', async () => {
      expect((await create({}, clinic.adminToken, unit2Study.id)).status).toBe(201);
      expect((await create({}, superAdmin.token, unit2Study.id)).status).toBe(201);
    });
  });

  describe('GET /api/studies/{id}/shares', () => {
    it("lists the study's shares without tokens, with uses and last use", async () => {
      const share = await created({ max_uses: 3 });
      expect((await open(share.token)).status).toBe(200);
      const res = await t.http.get(`/api/studies/${study.id}/shares`, { token: clinic.adminToken });
      expect(res.status).toBe(200);
      const listed = res.body.find((s: { id: string }) => s.id === share.id);
      expect(listed).toEqual({ ...share, token: undefined, url: undefined, uses: 1, last_used_at: expect.stringMatching(ISO) });
      expect(Object.keys(listed)).not.toContain('token');
      expect(JSON.stringify(res.body)).not.toContain(share.token);
    });

    it('answers 404 outside the scope, 401 without a session', async () => {
      for (const token of [clinic.token2, other.adminToken]) {
        const res = await t.http.get(`/api/studies/${study.id}/shares`, { token });
        expect([res.status, res.body]).toEqual([404, { message: 'Study not found.' }]);
      }
      const anonymous = await t.http.get(`/api/studies/${study.id}/shares`);
      expect([anonymous.status, anonymous.body]).toEqual([401, { message: 'Unauthenticated.' }]);
    });
  });

  describe('POST /api/shares/open', () => {
    it('answers 200 with a viewer token, the study and has_report; counts the use and logs the open with the address', async () => {
      const share = await created();
      const res = await open(share.token, undefined, '203.0.113.9');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        viewer_token: expect.stringMatching(UUID),
        expires_in: 600,
        study: {
          study_instance_uid: study.study_instance_uid,
          patient_name: study.patient_name,
          study_date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
          study_description: 'CHEST',
          modalities: ['CT'],
        },
        has_report: false,
      });
      const [row] = await t.db.query(`SELECT uses, last_used_at FROM shares WHERE id = $1`, [share.id]);
      expect(row.uses).toBe(1);
      expect(row.last_used_at).not.toBeNull();
      expect(await auditRows('share.open', share.id)).toEqual([
        { user_id: null, study_id: study.id, tenant_id: clinic.tenant.id, share_id: share.id, ip: '203.0.113.9' },
      ]);
    });

    it('says has_report when the study has a final report', async () => {
      await t.db.query(`UPDATE studies SET report_status = 'final' WHERE id = $1`, [sibling.id]);
      const share = (await create({}, clinic.token1, sibling.id)).body;
      expect((await open(share.token)).body.has_report).toBe(true);
    });

    it('answers 404 {message: "Share not found."} to an unknown or malformed token, 422 without one', async () => {
      for (const token of [
        'A'.repeat(43),
        'short',
        'x'.repeat(128),
        'x'.repeat(129),
        'A'.repeat(4096),
        "'; DROP TABLE shares; --",
      ]) {
        const res = await open(token);
        expect([res.status, res.body]).toEqual([404, { message: 'Share not found.' }]);
      }
      const missing = await t.http.post('/api/shares/open', { body: {} });
      expect(missing.status).toBe(422);
      expect(missing.body).toEqual({
        message: 'The token field is required.',
        errors: { token: ['The token field is required.'] },
      });
      const notString = await open(42);
      expect(notString.status).toBe(422);
      expect(notString.body.errors).toEqual({ token: ['The token field must be a string.'] });
    });

    it('answers 410 once used up, counting each 200 once even when opened concurrently', async () => {
      const share = await created({ max_uses: 3 });
      const results = await Promise.all(Array.from({ length: 10 }, () => open(share.token)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(3);
      for (const r of results.filter((r) => r.status !== 200)) {
        expect([r.status, r.body]).toEqual([410, { message: 'This link has been used as many times as it allows.' }]);
      }
      const [row] = await t.db.query(`SELECT uses FROM shares WHERE id = $1`, [share.id]);
      expect(row.uses).toBe(3);
    });

    it('answers 410 once expired', async () => {
      const share = await created();
      await t.db.query(`UPDATE shares SET expires_at = now() - interval '1 second' WHERE id = $1`, [share.id]);
      const res = await open(share.token);
      expect([res.status, res.body]).toEqual([410, { message: 'This link has expired.' }]);
    });

    it("answers 410 once the study's clinic is deactivated", async () => {
      const closing = await createClinic(t.db, t.http);
      const theirStudy = (await createImagedStudy(t.db, closing.tenant.id, closing.unit1.id)).study;
      const share = (await create({}, closing.token1, theirStudy.id)).body;
      await t.db.query(`UPDATE tenants SET is_active = false WHERE id = $1`, [closing.tenant.id]);
      const res = await open(share.token);
      expect([res.status, res.body]).toEqual([410, { message: 'This link has been revoked.' }]);
    });

    it("answers 410 without counting a use once its creator's account no longer reads the study (deactivated, moved to another clinic)", async () => {
      const creator = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const token = await login(t.http, creator.email);
      const plain = (await create({}, token)).body;
      const guarded = (await create({ passcode: 'right-passcode' }, token)).body;
      const gone = [410, { message: 'This link is no longer available.' }];
      const uses = async () =>
        (await t.db.query(`SELECT uses FROM shares WHERE id = ANY($1) ORDER BY id`, [[plain.id, guarded.id]])).map(
          (row: { uses: number }) => row.uses,
        );
      for (const change of [
        `UPDATE users SET is_active = false WHERE id = $1`,
        `UPDATE users SET is_active = true, tenant_id = '${other.tenant.id}', unit_id = '${other.unit1.id}' WHERE id = $1`,
      ]) {
        await t.db.query(change, [creator.id]);
        const res = await open(plain.token);
        expect([res.status, res.body]).toEqual(gone);
        const withPasscode = await open(guarded.token, 'right-passcode');
        expect([withPasscode.status, withPasscode.body]).toEqual(gone);
        expect(await uses()).toEqual([0, 0]);
      }
      await t.db.query(`UPDATE users SET tenant_id = $2, unit_id = $3 WHERE id = $1`, [
        creator.id,
        clinic.tenant.id,
        clinic.unit1.id,
      ]);
      expect((await open(plain.token)).status).toBe(200);
      expect((await open(guarded.token, 'right-passcode')).status).toBe(200);
    });

    it('asks for the passcode (401, not counted), refuses a wrong one (401) and opens with the right one', async () => {
      const share = await created({ passcode: 'sésamo-42' });
      for (const passcode of [undefined, null, '']) {
        const res = await open(share.token, passcode);
        expect([res.status, res.body]).toEqual([401, { message: 'This link needs its passcode.' }]);
      }
      const wrong = await open(share.token, 'sesamo-42');
      expect([wrong.status, wrong.body]).toEqual([401, { message: 'Wrong passcode.' }]);
      expect((await open(share.token, 'sésamo-42')).status).toBe(200);
      const [row] = await t.db.query(`SELECT uses FROM shares WHERE id = $1`, [share.id]);
      expect(row.uses).toBe(1);
    });

    it('answers 401 "Wrong passcode." to a wrong passcode of any length (counted), and opens with the right one in either normal form', async () => {
      const passcode = 'é'.repeat(64);
      const share = await created({ passcode });
      for (const wrong of ['x'.repeat(65), 'x'.repeat(10_000)]) {
        const res = await open(share.token, wrong);
        expect([res.status, res.body]).toEqual([401, { message: 'Wrong passcode.' }]);
      }
      expect(await t.redis.zcard(`share-tries:${share.id}`)).toBe(2);
      // 64 characters as created; 128 code points as a keyboard may send them (decomposed).
      const decomposed = await open(share.token, passcode.normalize('NFD'));
      expect(decomposed.status).toBe(200);
    });

    const tooMany = { message: 'Too Many Attempts.' };
    /** Status, body and Retry-After (as a number) of an answer. */
    const answer = (res: Awaited<ReturnType<typeof open>>) => ({
      status: res.status,
      body: res.body,
      retryAfter: res.headers['retry-after'] === undefined ? undefined : Number(res.headers['retry-after']),
    });
    const locked = (retryAfter: unknown = expect.any(Number)) => ({ status: 429, body: tooMany, retryAfter });
    const wrongPasscode = { status: 401, body: { message: 'Wrong passcode.' }, retryAfter: undefined };
    /** Lets `ms` pass for a share's lock: its tries' times move back and its lock's TTL shrinks (Redis expires it at 0). */
    const travel = async (shareId: string, ms: number) => {
      const tries = `share-tries:${shareId}`;
      const scored = await t.redis.zrange(tries, 0, -1, 'WITHSCORES');
      for (let i = 0; i < scored.length; i += 2) await t.redis.zadd(tries, Number(scored[i + 1]) - ms, scored[i]);
      const lockMs = await t.redis.pttl(`share-lock:${shareId}`);
      if (lockMs > 0) await t.redis.pexpire(`share-lock:${shareId}`, lockMs - ms);
    };
    const FIFTEEN_MINUTES = 15 * 60_000;

    it('locks the share after 5 wrong passcodes from any addresses: 429 with Retry-After to every open (right, wrong or no passcode) for 15 minutes; other shares still open', async () => {
      const share = await created({ passcode: 'right-passcode' });
      const neighbour = await created({ passcode: 'right-passcode' });
      for (let n = 0; n < 5; n++) {
        expect(answer(await open(share.token, `wrong-${n}`, `198.51.100.${n + 1}`))).toEqual(wrongPasscode);
      }
      const right = answer(await open(share.token, 'right-passcode', '192.0.2.77'));
      expect(right).toEqual(locked());
      expect(right.retryAfter).toBeGreaterThan(15 * 60 - 10);
      expect(right.retryAfter).toBeLessThanOrEqual(15 * 60);
      for (const passcode of ['wrong-5', undefined, null, '']) {
        const res = answer(await open(share.token, passcode));
        expect(res).toEqual(locked());
        expect(res.retryAfter).toBeGreaterThan(15 * 60 - 10);
      }
      expect((await open(neighbour.token, 'right-passcode')).status).toBe(200);
      await travel(share.id, FIFTEEN_MINUTES - 30_000);
      const late = answer(await open(share.token, 'right-passcode'));
      expect(late).toEqual(locked());
      expect(late.retryAfter).toBeGreaterThanOrEqual(1);
      expect(late.retryAfter).toBeLessThanOrEqual(30);
      expect(answer(await open(share.token))).toEqual(locked());
      // The 15 minutes are over: the right passcode opens it, and wrong ones count afresh.
      await travel(share.id, 30_000);
      expect((await open(share.token, 'right-passcode')).status).toBe(200);
      expect(answer(await open(share.token, 'wrong-6'))).toEqual(wrongPasscode);
      expect((await open(share.token, 'right-passcode')).status).toBe(200);
    });

    it('counts wrong passcodes in a sliding 15 minutes, not a window that starts at the first try', async () => {
      const share = await created({ passcode: 'right-passcode' });
      expect((await open(share.token, 'right-passcode')).status).toBe(200);
      for (let n = 0; n < 2; n++) expect(answer(await open(share.token, `wrong-${n}`))).toEqual(wrongPasscode);
      await travel(share.id, 10 * 60_000);
      for (let n = 2; n < 4; n++) expect(answer(await open(share.token, `wrong-${n}`))).toEqual(wrongPasscode);
      // 16 minutes after the first tries: they have left the window, the two of minute 10 have not.
      await travel(share.id, 6 * 60_000);
      expect(answer(await open(share.token, 'wrong-4'))).toEqual(wrongPasscode);
      expect((await open(share.token, 'right-passcode')).status).toBe(200);
      for (let n = 5; n < 7; n++) expect(answer(await open(share.token, `wrong-${n}`))).toEqual(wrongPasscode);
      const res = answer(await open(share.token, 'right-passcode'));
      expect(res).toEqual(locked());
      expect(res.retryAfter).toBeGreaterThan(15 * 60 - 10);
    });

    it('forgets wrong passcodes older than 15 minutes: 4 old ones and 1 new one do not lock', async () => {
      const share = await created({ passcode: 'right-passcode' });
      for (let n = 0; n < 4; n++) expect(answer(await open(share.token, `wrong-${n}`))).toEqual(wrongPasscode);
      await travel(share.id, FIFTEEN_MINUTES + 1_000);
      expect(answer(await open(share.token, 'wrong-4'))).toEqual(wrongPasscode);
      expect((await open(share.token, 'right-passcode')).status).toBe(200);
      for (let n = 5; n < 8; n++) expect(answer(await open(share.token, `wrong-${n}`))).toEqual(wrongPasscode);
      expect(answer(await open(share.token, 'wrong-8'))).toEqual(wrongPasscode);
      expect(answer(await open(share.token, 'right-passcode'))).toEqual(locked());
    });

    it('does not count right passcodes, nor let them erase wrong ones: 4 wrong, the right one twice, 1 wrong locks', async () => {
      const share = await created({ passcode: 'right-passcode' });
      for (let n = 0; n < 4; n++) expect(answer(await open(share.token, `wrong-${n}`))).toEqual(wrongPasscode);
      expect((await open(share.token, 'right-passcode')).status).toBe(200);
      expect((await open(share.token, 'right-passcode')).status).toBe(200);
      expect(answer(await open(share.token, 'wrong-4'))).toEqual(wrongPasscode);
      expect(answer(await open(share.token, 'right-passcode'))).toEqual(locked());
      expect(await t.redis.zcard(`share-tries:${share.id}`)).toBe(5);
    });

    it('checks at most 5 of a burst of 20 concurrent wrong passcodes (the others 429), and the right one then 429', async () => {
      const share = await created({ passcode: 'right-passcode' });
      const burst = await Promise.all(
        Array.from({ length: 20 }, (_, n) => open(share.token, `wrong-${n}`, `198.51.100.${n + 1}`)),
      );
      const answers = burst.map(answer);
      expect(answers.filter((res) => res.status === 401)).toEqual(Array(5).fill(wrongPasscode));
      const refused = answers.filter((res) => res.status === 429);
      expect(refused).toEqual(Array(15).fill(locked()));
      for (const res of refused) expect(res.retryAfter).toBeGreaterThanOrEqual(1);
      const right = answer(await open(share.token, 'right-passcode'));
      expect(right).toEqual(locked());
      expect(right.retryAfter).toBeGreaterThan(15 * 60 - 10);
      expect(await t.redis.zcard(`share-tries:${share.id}`)).toBe(5);
    });

    it('keeps its Redis keys no longer than the 15 minutes', async () => {
      const share = await created({ passcode: 'right-passcode' });
      for (let n = 0; n < 5; n++) await open(share.token, `wrong-${n}`);
      for (const key of [`share-tries:${share.id}`, `share-lock:${share.id}`]) {
        const ttl = await t.redis.pttl(key);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(FIFTEEN_MINUTES);
      }
    });
  });

  describe('the viewer token a share gives', () => {
    it('reads its study only: another study of the same unit, a list of UIDs with another, a search: 403', async () => {
      const share = await created();
      const { viewer_token } = (await open(share.token)).body;
      expect((await validate(viewer_token, study.study_instance_uid)).status).toBe(200);
      for (const uid of [sibling.study_instance_uid, unit2Study.study_instance_uid]) {
        const res = await validate(viewer_token, uid);
        expect([res.status, res.body]).toEqual([403, { error: 'Forbidden' }]);
      }
      const both = await t.http.get(VALIDATE, {
        headers: {
          'x-viewer-token': viewer_token,
          'x-original-uri': `/dicom-web/studies?StudyInstanceUID=${study.study_instance_uid},${sibling.study_instance_uid}`,
        },
      });
      expect(both.status).toBe(403);
      const search = await t.http.get(VALIDATE, {
        headers: { 'x-viewer-token': viewer_token, 'x-original-uri': '/dicom-web/studies?PatientName=*' },
      });
      expect(search.status).toBe(403);
      const own = await t.http.get(VALIDATE, {
        headers: {
          'x-viewer-token': viewer_token,
          'x-original-uri': `/dicom-web/studies?0020000D=${study.study_instance_uid}`,
        },
      });
      expect(own.status).toBe(200);
    });

    it('cannot get a token for other studies (it is no session)', async () => {
      const share = await created();
      const { viewer_token } = (await open(share.token)).body;
      const res = await t.http.post('/api/viewer/token', { token: viewer_token, body: { study_id: sibling.id } });
      expect([res.status, res.body]).toEqual([401, { message: 'Unauthenticated.' }]);
    });
  });

  describe('DELETE /api/studies/{id}/shares/{shareId}', () => {
    it('answers 204; the link answers 410 and every viewer token it gave stops at once', async () => {
      const share = await created();
      const first = (await open(share.token)).body.viewer_token;
      const second = (await open(share.token)).body.viewer_token;
      for (const token of [first, second]) expect((await validate(token, study.study_instance_uid)).status).toBe(200);
      const res = await t.http.delete(`/api/studies/${study.id}/shares/${share.id}`, { token: clinic.adminToken });
      expect(res.status).toBe(204);
      for (const token of [first, second]) {
        const after = await validate(token, study.study_instance_uid);
        expect([after.status, after.body]).toEqual([401, { error: 'Invalid or expired token' }]);
      }
      const again = await open(share.token);
      expect([again.status, again.body]).toEqual([410, { message: 'This link has been revoked.' }]);
      const listed = (await t.http.get(`/api/studies/${study.id}/shares`, { token: clinic.token1 })).body;
      expect(listed.find((s: { id: string }) => s.id === share.id).revoked_at).toMatch(ISO);
      expect(await auditRows('share.revoke', share.id)).toEqual([
        expect.objectContaining({ user_id: clinic.admin.id, study_id: study.id, share_id: share.id }),
      ]);
      // Revoking again changes nothing.
      expect((await t.http.delete(`/api/studies/${study.id}/shares/${share.id}`, { token: clinic.token1 })).status).toBe(204);
    });

    it("stops the viewer tokens of a super admin's share while the study's clinic is deactivated, and not after", async () => {
      const closing = await createClinic(t.db, t.http);
      const theirStudy = (await createImagedStudy(t.db, closing.tenant.id, closing.unit1.id)).study;
      const share = (await create({}, superAdmin.token, theirStudy.id)).body;
      const viewerToken = (await open(share.token)).body.viewer_token;
      const status = (is_active: boolean) =>
        t.http.patch(`/api/admin/tenants/${closing.tenant.id}/status`, { token: superAdmin.token, body: { is_active } });
      expect((await validate(viewerToken, theirStudy.study_instance_uid)).status).toBe(200);
      expect((await status(false)).status).toBe(200);
      const refused = await validate(viewerToken, theirStudy.study_instance_uid);
      expect([refused.status, refused.body]).toEqual([401, { error: 'Invalid or expired token' }]);
      const report = await t.http.get('/api/shares/report', { headers: { 'x-viewer-token': viewerToken } });
      expect([report.status, report.body]).toEqual([401, { message: 'Unauthenticated.' }]);
      expect((await status(true)).status).toBe(200);
      expect((await validate(viewerToken, theirStudy.study_instance_uid)).status).toBe(200);
    });

    it('takes back a token issued while the share was being revoked (the open answers 410)', async () => {
      // An open that passed the share's row before the revocation, and writes its token after the
      // revocation deleted the others: the token's own transaction sees the revocation.
      const share = await created();
      const viewer = t.app.get(ViewerService);
      const redis = t.app.get<Redis>(REDIS);
      await viewer.revokeShareTokens(share.id);
      const tokensBefore = (await redis.keys(`${redis.options.keyPrefix}viewer:*`)).length;
      expect(tokensBefore).toBeGreaterThan(0);
      const issued = await viewer.issueForShare(
        {
          share_id: share.id,
          created_by: clinic.user1.id,
          tenant_id: clinic.tenant.id,
          unit_id: clinic.unit1.id,
          study_id: study.id,
          study_instance_uid: study.study_instance_uid,
        },
        600,
      );
      expect(issued).toBeNull();
      expect(await redis.smembers(`viewer-share:${share.id}`)).toEqual([]);
      expect((await redis.keys(`${redis.options.keyPrefix}viewer:*`)).length).toBe(tokensBefore);
    });

    it('answers 404 outside the scope, for a share of another study and for an unknown share', async () => {
      const share = await created();
      for (const token of [clinic.token2, other.adminToken]) {
        const res = await t.http.delete(`/api/studies/${study.id}/shares/${share.id}`, { token });
        expect([res.status, res.body]).toEqual([404, { message: 'Study not found.' }]);
      }
      for (const [studyId, shareId] of [
        [sibling.id, share.id],
        [study.id, '00000000-0000-4000-8000-000000000000'],
        [study.id, 'nope'],
      ]) {
        const res = await t.http.delete(`/api/studies/${studyId}/shares/${shareId}`, { token: clinic.token1 });
        expect([res.status, res.body]).toEqual([404, { message: 'Share not found.' }]);
      }
      const anonymous = await t.http.delete(`/api/studies/${study.id}/shares/${share.id}`);
      expect([anonymous.status, anonymous.body]).toEqual([401, { message: 'Unauthenticated.' }]);
      expect((await open(share.token)).status).toBe(200);
    });
  });

  describe('GET /api/shares/report', () => {
    const report = (viewerToken?: string) =>
      t.http.get('/api/shares/report', { headers: viewerToken === undefined ? {} : { 'x-viewer-token': viewerToken } });
    const openedToken = async (studyId: string) => {
      const share = await create({}, clinic.token1, studyId);
      const opened = await open(share.body.token);
      expect(opened.status).toBe(200);
      return { share: share.body, viewerToken: opened.body.viewer_token as string, hasReport: opened.body.has_report };
    };

    it("serves the study's signed report PDF to its share's viewer token, and logs the read with the share", async () => {
      const reported = (await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id)).study;
      await t.db.query(`UPDATE users SET crm = '654321/SP' WHERE id = $1`, [clinic.user1.id]);
      const base = `/api/studies/${reported.id}/reports`;
      const draft = await t.http.post(base, { token: clinic.token1, body: { findings: 'No acute findings.' } });
      expect(draft.status).toBe(201);
      // Before signing, the share has no report to give.
      const early = await openedToken(reported.id);
      expect(early.hasReport).toBe(false);
      const none = await report(early.viewerToken);
      expect([none.status, none.body]).toEqual([404, { message: 'Report not found.' }]);
      const signed = await t.http.post(`${base}/${draft.body.id}/sign`, { token: clinic.token1, body: { version: 1 } });
      expect(signed.status).toBe(200);
      const { share, viewerToken, hasReport } = await openedToken(reported.id);
      expect(hasReport).toBe(true);
      const res = await report(viewerToken);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/pdf');
      const kept = await t.http.get(`${base}/${draft.body.id}/pdf`, { token: clinic.token1 });
      expect(res.raw.subarray(0, 5).toString()).toBe('%PDF-');
      expect(res.raw.equals(kept.raw)).toBe(true);
      expect(await auditRows('report.read', share.id)).toEqual([
        expect.objectContaining({ user_id: null, study_id: reported.id, share_id: share.id }),
      ]);
      // Revoking the share ends its token's access to the report at once.
      expect((await t.http.delete(`/api/studies/${reported.id}/shares/${share.id}`, { token: clinic.token1 })).status).toBe(
        204,
      );
      const revoked = await report(viewerToken);
      expect([revoked.status, revoked.body]).toEqual([401, { message: 'Unauthenticated.' }]);
    });

    it("answers 401 without a token, with an unknown one and with a user's viewer token", async () => {
      const issued = await t.http.post('/api/viewer/token', { token: clinic.token1, body: { study_id: study.id } });
      expect(issued.status).toBe(200);
      for (const token of [undefined, '', 'nope', '00000000-0000-4000-8000-000000000000', issued.body.token]) {
        const res = await report(token);
        expect([res.status, res.body]).toEqual([401, { message: 'Unauthenticated.' }]);
      }
    });
  });
});
