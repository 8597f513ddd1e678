import Redis from 'ioredis';
import { Client } from 'pg';

/** Drops the run's database and Redis keys, unless KEEP_TEST_DB=1 (to inspect a failure). */
export default async function globalTeardown(): Promise<void> {
  if (process.env.KEEP_TEST_DB === '1') return;
  const url = new URL(process.env.DATABASE_URL as string);
  const name = url.pathname.slice(1);
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => undefined);
  await client.end();
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = process.env.QUEUE_PREFIX as string;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await redis.quit();
}
