/**
 * The index a PostgreSQL unique violation (23505) names, or null for any other error. TypeORM's
 * QueryFailedError copies the driver's `code` and `constraint`; for a unique index the
 * constraint is the index name, so callers map it to the contract's 422 message.
 */
export function uniqueViolationOf(error: unknown): string | null {
  const candidate = error as { code?: unknown; constraint?: unknown; driverError?: { code?: unknown; constraint?: unknown } };
  const code = candidate?.code ?? candidate?.driverError?.code;
  if (code !== '23505') return null;
  const constraint = candidate?.constraint ?? candidate?.driverError?.constraint;
  return typeof constraint === 'string' ? constraint : '';
}
