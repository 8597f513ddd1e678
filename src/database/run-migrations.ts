import { loadConfig } from '../config/environment';
import { openDataSource, runMigrations } from './data-source-options';

/** `npm run migration:run` (built) or `migration:run:dev`: creates the database if needed and applies pending migrations. */
async function main(): Promise<void> {
  const config = loadConfig();
  const dataSource = await openDataSource(config.DATABASE_URL, { migrate: false });
  try {
    const applied = await runMigrations(dataSource);
    console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'No pending migrations.');
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
