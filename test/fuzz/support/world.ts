import { generateKeyPairSync, randomUUID } from 'crypto';
import * as jwt from 'jsonwebtoken';
import { AccountStatusService } from '../../../src/auth/account-status.service';
import { TokenService, TokenSubject } from '../../../src/auth/token.service';
import { TestApp } from '../../support/app';
import { createImagedStudy, createThumbnail, fakeJpeg } from '../../support/clinical-factories';
import { createClinic, createSuperAdminUser, createTenant, createUnit, createUser } from '../../support/factories';

export type IdKind =
  'study' | 'series' | 'instance' | 'patient' | 'template' | 'tenant' | 'unit' | 'user' | 'modality' | 'report' | 'preset';

/** Valid callers: a token is minted per request, so logout and refresh never spend a fixture. */
export const VALID_CALLERS = ['user', 'user2', 'admin', 'root', 'userB', 'adminB'] as const;
export const HOSTILE_CALLERS = [
  'anonymous',
  'alg-none',
  'other-secret',
  'rs256',
  'hs512',
  'expired',
  'blacklisted',
  'tampered',
  'garbage',
  'inactive-tenant',
  'deleted-user',
] as const;
export type ValidCaller = (typeof VALID_CALLERS)[number];
export type HostileCaller = (typeof HOSTILE_CALLERS)[number];
export type Caller = ValidCaller | HostileCaller;

type Clinic = Awaited<ReturnType<typeof createClinic>>;

interface ClinicRecords {
  clinic: Clinic;
  /** Unit 1 and unit 2 studies, with series, instance and thumbnails. */
  study1: Awaited<ReturnType<typeof createImagedStudy>>;
  study2: Awaited<ReturnType<typeof createImagedStudy>>;
  templateId: string;
  modalityId: string;
  viewerToken: string;
  /** A draft report on each study (unit 1, unit 2). */
  reportIds: [string, string];
  presetId: string;
}

/**
 * Two clinics with every kind of record, a super admin, and the hostile tokens. The fuzz draws path
 * ids, body ids and tokens from here, so requests reach real rows of the caller's own clinic as
 * well as rows of the other one.
 */
export class FuzzWorld {
  a!: ClinicRecords;
  b!: ClinicRecords;
  root!: Awaited<ReturnType<typeof createSuperAdminUser>>;
  private subjects = new Map<ValidCaller, TokenSubject>();
  private hostile = new Map<HostileCaller, string>();
  private snapshot: {
    users: unknown[];
    tenants: string[];
    units: string[];
    templates: string[];
    presets: string[];
  } | null = null;

  constructor(
    private readonly t: TestApp,
    private readonly tokens: TokenService,
    private readonly secret: string,
  ) {}

  async build(): Promise<void> {
    const { t } = this;
    this.root = await createSuperAdminUser(t.db, t.http);
    this.a = await this.clinicRecords();
    this.b = await this.clinicRecords();
    const subject = (u: { id: string; tenant_id: string | null; unit_id: string | null }, admin = false, root = false) => ({
      id: u.id,
      tenant_id: u.tenant_id,
      unit_id: u.unit_id,
      is_tenant_admin: admin,
      is_super_admin: root,
    });
    this.subjects.set('user', subject(this.a.clinic.user1));
    this.subjects.set('user2', subject(this.a.clinic.user2));
    this.subjects.set('admin', subject(this.a.clinic.admin, true));
    this.subjects.set('root', subject(this.root.user, false, true));
    this.subjects.set('userB', subject(this.b.clinic.user1));
    this.subjects.set('adminB', subject(this.b.clinic.admin, true));
    await this.buildHostileTokens();
    await this.takeSnapshot();
  }

  private async clinicRecords(): Promise<ClinicRecords> {
    const { t } = this;
    const clinic = await createClinic(t.db, t.http);
    const study1 = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
    const study2 = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit2.id);
    await createThumbnail(t.db, study1.study.id, null, fakeJpeg('study1'));
    await createThumbnail(t.db, study1.study.id, study1.series.id, fakeJpeg('series1'));
    const [template] = await t.db.query(
      `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, $2, $3, true) RETURNING id`,
      [clinic.tenant.id, clinic.unit1.id, `Fuzz template ${randomUUID().slice(0, 8)}`],
    );
    const aet = `FZ${randomUUID().replace(/-/g, '').slice(0, 10)}`.toUpperCase();
    const [modality] = await t.db.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '10.9.8.7') RETURNING id`,
      [clinic.tenant.id, clinic.unit1.id, `Fuzz CT ${aet}`, aet],
    );
    const issued = await t.http.post('/api/viewer/token', { token: clinic.token1, body: { study_id: study1.study.id } });
    if (issued.status !== 200) throw new Error(`viewer token: ${issued.status} ${JSON.stringify(issued.body)}`);
    const reportIds: string[] = [];
    for (const { study } of [study1, study2]) {
      const [report] = await t.db.query(
        `INSERT INTO reports (study_id, tenant_id, unit_id, kind, findings, author_id)
         VALUES ($1, $2, $3, 'report', 'Fuzz findings', $4) RETURNING id`,
        [study.id, clinic.tenant.id, study.unit_id, clinic.admin.id],
      );
      reportIds.push(report.id);
    }
    const [preset] = await t.db.query(
      `INSERT INTO report_presets (tenant_id, unit_id, name, modality, findings) VALUES ($1, $2, 'Fuzz preset', 'CT', 'x') RETURNING id`,
      [clinic.tenant.id, clinic.unit1.id],
    );
    return {
      clinic,
      study1,
      study2,
      templateId: template.id,
      modalityId: modality.id,
      viewerToken: issued.body.token,
      reportIds: reportIds as [string, string],
      presetId: preset.id,
    };
  }

  private async buildHostileTokens(): Promise<void> {
    const { t } = this;
    const real = this.tokens.issue(this.subjects.get('user')!).access_token;
    const claims = JSON.parse(Buffer.from(real.split('.')[1], 'base64url').toString());
    const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    this.hostile.set('alg-none', `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, is_super_admin: true })}.`);
    this.hostile.set(
      'other-secret',
      jwt.sign({ ...claims, is_super_admin: true }, `${this.secret}-not`, { algorithm: 'HS256' }),
    );
    this.hostile.set('rs256', jwt.sign(claims, privateKey.export({ type: 'pkcs1', format: 'pem' }), { algorithm: 'RS256' }));
    this.hostile.set('hs512', jwt.sign(claims, this.secret, { algorithm: 'HS512' }));
    this.hostile.set(
      'expired',
      jwt.sign({ ...claims, jti: randomUUID(), iat: now - 7200, exp: now - 3600 }, this.secret, { algorithm: 'HS256' }),
    );
    const [header, , signature] = real.split('.');
    this.hostile.set('tampered', `${header}.${b64({ ...claims, is_super_admin: true, tenant_id: null })}.${signature}`);
    this.hostile.set('garbage', 'definitely.not.a-jwt');
    const blacklisted = this.tokens.issue(this.subjects.get('user')!).access_token;
    const logout = await t.http.post('/api/logout', { token: blacklisted });
    if (logout.status !== 200) throw new Error(`logout: ${logout.status}`);
    this.hostile.set('blacklisted', blacklisted);

    const inactive = await createTenant(t.db, { is_active: false });
    const inactiveUnit = await createUnit(t.db, inactive.id);
    const inactiveUser = await createUser(t.db, { tenant_id: inactive.id, unit_id: inactiveUnit.id, is_tenant_admin: true });
    this.hostile.set(
      'inactive-tenant',
      this.tokens.issue({ ...inactiveUser, is_tenant_admin: true, is_super_admin: false }).access_token,
    );
    this.hostile.set(
      'deleted-user',
      this.tokens.issue({
        id: randomUUID(),
        tenant_id: this.a.clinic.tenant.id,
        unit_id: null,
        is_super_admin: true,
        is_tenant_admin: true,
      }).access_token,
    );
  }

  tokenFor(caller: Caller): string | null {
    if (caller === 'anonymous') return null;
    const subject = this.subjects.get(caller as ValidCaller);
    if (subject) return this.tokens.issue(subject).access_token;
    return this.hostile.get(caller as HostileCaller) ?? null;
  }

  /** The clinic a valid caller belongs to (root: none). */
  clinicOf(caller: Caller): 'a' | 'b' | null {
    if (caller === 'user' || caller === 'user2' || caller === 'admin') return 'a';
    if (caller === 'userB' || caller === 'adminB') return 'b';
    return null;
  }

  /** Ids of records by kind, tagged with the clinic they belong to. */
  ids(kind: IdKind): Array<{ id: string; clinic: 'a' | 'b' | null; unit2?: boolean }> {
    const of = (c: ClinicRecords, tag: 'a' | 'b') => {
      switch (kind) {
        case 'study':
          return [
            { id: c.study1.study.id, clinic: tag },
            { id: c.study2.study.id, clinic: tag, unit2: true },
          ];
        case 'series':
          return [
            { id: c.study1.series.id, clinic: tag },
            { id: c.study2.series.id, clinic: tag, unit2: true },
          ];
        case 'instance':
          return [
            { id: c.study1.instance.id, clinic: tag },
            { id: c.study2.instance.id, clinic: tag, unit2: true },
          ];
        case 'patient':
          return [
            { id: c.study1.patient.id, clinic: tag },
            { id: c.study2.patient.id, clinic: tag, unit2: true },
          ];
        case 'template':
          return [{ id: c.templateId, clinic: tag }];
        case 'tenant':
          return [{ id: c.clinic.tenant.id, clinic: tag }];
        case 'unit':
          return [
            { id: c.clinic.unit1.id, clinic: tag },
            { id: c.clinic.unit2.id, clinic: tag, unit2: true },
          ];
        case 'user':
          return [
            { id: c.clinic.user1.id, clinic: tag },
            { id: c.clinic.admin.id, clinic: tag },
          ];
        case 'modality':
          return [{ id: c.modalityId, clinic: tag }];
        case 'report':
          return [
            { id: c.reportIds[0], clinic: tag },
            { id: c.reportIds[1], clinic: tag, unit2: true },
          ];
        case 'preset':
          return [{ id: c.presetId, clinic: tag }];
      }
    };
    return [...of(this.a, 'a'), ...of(this.b, 'b')];
  }

  viewerToken(clinic: 'a' | 'b'): string {
    return clinic === 'a' ? this.a.viewerToken : this.b.viewerToken;
  }

  studyUid(clinic: 'a' | 'b'): string {
    return (clinic === 'a' ? this.a : this.b).study1.study.study_instance_uid;
  }

  fixtureEmails(): string[] {
    return [this.a.clinic.user1.email, this.a.clinic.admin.email, this.b.clinic.user1.email, this.root.user.email];
  }

  private async takeSnapshot(): Promise<void> {
    const users = [this.a, this.b].flatMap((c) => [c.clinic.user1.id, c.clinic.user2.id, c.clinic.admin.id]);
    this.snapshot = {
      users: await this.t.db.query(
        `SELECT id, tenant_id, unit_id, email, password, is_active, is_tenant_admin, crm, signature FROM users WHERE id = ANY($1)`,
        [users],
      ),
      tenants: [this.a.clinic.tenant.id, this.b.clinic.tenant.id],
      units: [this.a, this.b].flatMap((c) => [c.clinic.unit1.id, c.clinic.unit2.id]),
      templates: [this.a.templateId, this.b.templateId],
      presets: [this.a.presetId, this.b.presetId],
    };
  }

  /**
   * Undoes what the fuzz's own successful writes did to the fixtures (a deactivated clinic, a user
   * moved to another unit or given another email or password, a deleted template), so later
   * requests still reach real rows and the fixtures' users can still sign in.
   */
  async restore(accounts: AccountStatusService): Promise<void> {
    const s = this.snapshot!;
    await this.t.db.query(`UPDATE tenants SET is_active = true WHERE id = ANY($1)`, [s.tenants]);
    await this.t.db.query(`UPDATE units SET is_active = true WHERE id = ANY($1)`, [s.units]);
    await this.t.db.query(
      `UPDATE users u SET tenant_id = o.tenant_id, unit_id = o.unit_id, is_active = o.is_active,
              is_tenant_admin = o.is_tenant_admin, email = o.email, password = o.password
         FROM jsonb_to_recordset($1::jsonb)
              AS o(id uuid, tenant_id uuid, unit_id uuid, is_active boolean, is_tenant_admin boolean, email text, password text)
        WHERE u.id = o.id`,
      [JSON.stringify(s.users)],
    );
    await this.t.db.query(
      `UPDATE report_templates SET deleted_at = NULL, is_active = false WHERE id = ANY($1) AND deleted_at IS NOT NULL`,
      [s.templates],
    );
    await this.t.db.query(`UPDATE report_presets SET deleted_at = NULL WHERE id = ANY($1) AND deleted_at IS NOT NULL`, [
      s.presets,
    ]);
    accounts.forgetAll();
  }
}
