import * as bcrypt from 'bcryptjs';
import { randomUUID } from 'crypto';
import { DataSource } from 'typeorm';
import { HttpClient } from './http';

// A low cost keeps test logins fast; the service itself hashes with cost 12.
export const TEST_PASSWORD = 'correct-horse-battery';
const TEST_HASH = bcrypt.hashSync(TEST_PASSWORD, 4);

const unique = () => randomUUID().slice(0, 8);

export interface TenantRow {
  id: string;
  name: string;
  slug: string;
  is_active: boolean;
}
export interface UnitRow {
  id: string;
  tenant_id: string;
  name: string;
  slug: string | null;
}
export interface UserRow {
  id: string;
  email: string;
  name: string;
  tenant_id: string | null;
  unit_id: string | null;
  is_super_admin: boolean;
  is_tenant_admin: boolean;
  is_active: boolean;
}

export async function createTenant(db: DataSource, values: Partial<TenantRow> = {}): Promise<TenantRow> {
  const u = unique();
  const [row] = await db.query(
    `INSERT INTO tenants (name, slug, is_active) VALUES ($1, $2, $3) RETURNING id, name, slug, is_active`,
    [values.name ?? `Clinic ${u}`, values.slug ?? `clinic-${u}`, values.is_active ?? true],
  );
  return row;
}

export async function createUnit(db: DataSource, tenantId: string, values: Partial<UnitRow> = {}): Promise<UnitRow> {
  const u = unique();
  const [row] = await db.query(
    `INSERT INTO units (tenant_id, name, slug) VALUES ($1, $2, $3) RETURNING id, tenant_id, name, slug`,
    [tenantId, values.name ?? `Unit ${u}`, values.slug === undefined ? `unit-${u}` : values.slug],
  );
  return row;
}

/** A registered DICOM device (modalities.aet is stored trimmed and uppercased, as the admin API does). */
export async function createModality(
  db: DataSource,
  values: { tenant_id: string; unit_id: string; aet: string; ip_address: string; name?: string },
): Promise<void> {
  await db.query(`INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, $5)`, [
    values.tenant_id,
    values.unit_id,
    values.name ?? values.aet,
    values.aet.trim().toUpperCase(),
    values.ip_address,
  ]);
}

export async function createUser(db: DataSource, values: Partial<UserRow> & { signature?: string } = {}): Promise<UserRow> {
  const u = unique();
  const [row] = await db.query(
    `INSERT INTO users (tenant_id, unit_id, name, email, password, is_super_admin, is_tenant_admin, is_active, signature)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     RETURNING id, email, name, tenant_id, unit_id, is_super_admin, is_tenant_admin, is_active`,
    [
      values.tenant_id ?? null,
      values.unit_id ?? null,
      values.name ?? `User ${u}`,
      values.email ?? `user-${u}@example.test`,
      TEST_HASH,
      values.is_super_admin ?? false,
      values.is_tenant_admin ?? false,
      values.is_active ?? true,
      values.signature ?? null,
    ],
  );
  return row;
}

export async function login(http: HttpClient, email: string, password = TEST_PASSWORD): Promise<string> {
  const response = await http.post('/api/login', { body: { email, password } });
  if (response.status !== 200) throw new Error(`login ${email}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body.access_token;
}

/**
 * A tenant with two units and the four kinds of caller the isolation rules distinguish,
 * each already signed in.
 */
export async function createClinic(db: DataSource, http: HttpClient) {
  const tenant = await createTenant(db);
  const unit1 = await createUnit(db, tenant.id);
  const unit2 = await createUnit(db, tenant.id);
  const user1 = await createUser(db, { tenant_id: tenant.id, unit_id: unit1.id });
  const user2 = await createUser(db, { tenant_id: tenant.id, unit_id: unit2.id });
  const admin = await createUser(db, { tenant_id: tenant.id, unit_id: unit1.id, is_tenant_admin: true });
  const [token1, token2, adminToken] = await Promise.all([
    login(http, user1.email),
    login(http, user2.email),
    login(http, admin.email),
  ]);
  return { tenant, unit1, unit2, user1, user2, admin, token1, token2, adminToken };
}

export async function createSuperAdminUser(db: DataSource, http: HttpClient) {
  const user = await createUser(db, { is_super_admin: true });
  return { user, token: await login(http, user.email) };
}
