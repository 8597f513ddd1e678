import { AccountsRepository } from '../auth/accounts.repository';
import { checkSuperAdmin, createSuperAdmin, NewSuperAdmin } from '../auth/super-admin';
import { AppConfig } from '../config/environment';
import { openDataSource } from '../database/data-source-options';

/**
 * `npm run cli -- create-super-admin --email E --password P --name N`: checks the input, opens the
 * database (applying pending migrations), creates the account and returns its id. No Nest
 * application: one statement needs none.
 */
export async function createSuperAdminCommand(config: AppConfig, input: NewSuperAdmin): Promise<string> {
  const admin = checkSuperAdmin(input);
  const dataSource = await openDataSource(config.DATABASE_URL, { migrate: true });
  try {
    return await createSuperAdmin(new AccountsRepository(dataSource), admin);
  } finally {
    await dataSource.destroy();
  }
}
