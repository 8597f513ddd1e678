import { Pool } from 'pg';

export const DEFAULT_BENCH_DATABASE = 'pacs_bench';
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/pacs';

/** DATABASE_URL (or the service's default) with its database name replaced. */
export function databaseUrl(database: string, base = process.env.DATABASE_URL || DEFAULT_DATABASE_URL): string {
  const url = new URL(base);
  url.pathname = `/${encodeURIComponent(database)}`;
  return url.toString();
}

export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
}

export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/** A pool whose every connection starts with the same session settings (libpq `options`). */
export function poolWithSettings(url: string, max: number, settings: Record<string, string>): Pool {
  const options = Object.entries(settings)
    .map(([key, value]) => `-c ${key}=${value}`)
    .join(' ');
  return new Pool({ connectionString: url, max, options });
}

export function seconds(fromMs: number): string {
  return `${((Date.now() - fromMs) / 1000).toFixed(1)} s`;
}
