import { PasswordHasher } from '../common/auth/password-hasher';
import { AppConfig } from '../config/environment';
import { openDataSource } from '../database/data-source-options';

class UserFacingError extends Error {
  readonly userFacing = true;
}

export async function createSuperAdmin(
  config: AppConfig,
  input: { email: string; password: string; name: string },
): Promise<string> {
  const email = input.email.trim().toLowerCase();
  const name = input.name.trim();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new UserFacingError(`Invalid email: ${input.email}`);
  if (input.password.length < 8) throw new UserFacingError('The password must be at least 8 characters.');
  if (!name || name.length > 255) throw new UserFacingError('The name must be 1 to 255 characters.');
  const dataSource = await openDataSource(config.DATABASE_URL, { migrate: true });
  try {
    const hash = await new PasswordHasher().hash(input.password);
    const rows: Array<{ id: string }> = await dataSource.query(
      `INSERT INTO users (name, email, password, is_super_admin, is_tenant_admin, is_active)
       VALUES ($1, $2, $3, true, false, true)
       ON CONFLICT ((lower(email))) DO NOTHING
       RETURNING id`,
      [name, email, hash],
    );
    if (rows.length === 0) throw new UserFacingError(`A user with email ${email} already exists.`);
    return rows[0].id;
  } finally {
    await dataSource.destroy();
  }
}
