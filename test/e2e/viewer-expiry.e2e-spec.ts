import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy } from '../support/clinical-factories';
import { createClinic } from '../support/factories';

jest.setTimeout(20_000);

describe('Viewer token expiry (VIEWER_TOKEN_TTL=1)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ VIEWER_TOKEN_TTL: '1' });
  });
  afterAll(() => t?.close());

  it('stops validating when the TTL is over, even though the process cached the token', async () => {
    const clinic = await createClinic(t.db, t.http);
    const { study } = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
    const issued = await t.http.post('/api/viewer/token', { token: clinic.token1, body: { study_id: study.id } });
    expect(issued.status).toBe(200);
    expect(issued.body.expires_in).toBe(1);
    const headers = {
      'x-viewer-token': issued.body.token,
      'x-original-uri': `/dicom-web/studies/${study.study_instance_uid}`,
    };
    expect((await t.http.get('/api/viewer/token/validate', { headers })).status).toBe(200);

    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const expired = await t.http.get('/api/viewer/token/validate', { headers });
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual({ error: 'Invalid or expired token' });
    expect(await t.redis.exists(`viewer:${issued.body.token}`)).toBe(0);
  });
});
