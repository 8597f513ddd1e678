import type { Pool } from 'pg';

const LOADED_TABLES = ['patients', 'studies', 'series'];

/**
 * Row triggers would fire once per generated row; the seed turns the tables' own triggers off
 * during the load and rebuilds whatever they maintain afterwards.
 */
export async function beforeLoad(db: Pool): Promise<void> {
  for (const table of LOADED_TABLES) await db.query(`ALTER TABLE ${table} DISABLE TRIGGER USER`);
}

export async function afterLoad(db: Pool): Promise<void> {
  for (const table of LOADED_TABLES) await db.query(`ALTER TABLE ${table} ENABLE TRIGGER USER`);
  // The list counters kept by triggers (the ListsAndSearch migration) are recounted in one pass.
  const { rows } = await db.query<{ fn: string | null }>(`SELECT to_regprocedure('rebuild_list_counts()')::text AS fn`);
  if (rows[0]?.fn) await db.query('SELECT rebuild_list_counts()');
}
