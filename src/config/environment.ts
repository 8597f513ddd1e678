import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
  ValidateBy,
} from 'class-validator';
import { isIP } from 'net';
import { loadOrCreateLocalSecrets, LocalSecrets, localSecretsFile } from './local-secrets';

const toBoolean = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(v)) return false;
  return value;
};

/** A whole number in decimal digits; anything else stays text and fails @IsInt (Number() read " " as 0). */
const toInteger = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^\s*-?\d+\s*$/.test(value) ? Number(value) : value;

/** One address or CIDR range of TRUST_PROXY (a zone index such as `%eth0` is not an address to trust). */
function isAddressOrRange(entry: string): boolean {
  const [address, bits, ...rest] = entry.split('/');
  const family = address.includes('%') ? 0 : isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
}

/**
 * TRUST_PROXY as Fastify takes it: off, a hop count, or addresses and CIDR ranges; null when it is
 * none of these, so that validation refuses it here rather than Fastify stopping the API at start
 * with its own message (the worker running on), or reading "1,2" as 0.0.0.1 and 0.0.0.2.
 */
function parseTrustProxy(value: string): false | number | string[] | null {
  const v = value.trim();
  if (v === 'off' || v === 'false') return false;
  if (/^\d+$/.test(v)) return Number(v);
  const entries = v
    .toLowerCase()
    .split(',')
    .map((entry) => entry.trim());
  return entries.every(isAddressOrRange) ? entries : null;
}

const ORIGIN = String.raw`\s*https?:\/\/(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?\/?\s*`;
const CORS_ORIGINS_PATTERN = new RegExp(`^(?:${ORIGIN}(?:,${ORIGIN})*)?$`);

/** Every environment variable the service reads, with its default and its rule. */
export class EnvironmentVariables {
  @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(65535)
  PORT = 3000;

  /**
   * Address the API listens on: every interface by default (production processes, behind a
   * firewall or nginx); `npm start` (a first try) sets 127.0.0.1 unless HOST is given.
   */
  @Matches(/^(?:[A-Za-z0-9.-]+|[0-9A-Fa-f:.]+)$/, { message: 'HOST must be an IP address or a host name' })
  HOST = '0.0.0.0';

  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/pacs';

  @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must be a redis:// URL' })
  REDIS_URL = 'redis://127.0.0.1:6379';

  @IsUrl({ require_tld: false, protocols: ['http', 'https'], require_protocol: true })
  IMGSRV_URL = 'http://127.0.0.1:8042';

  @IsString()
  IMGSRV_USERNAME = '';

  @IsString()
  IMGSRV_PASSWORD = '';

  @IsOptional()
  @IsString()
  @MinLength(16, { message: 'WEBHOOK_SECRET must be at least 16 characters' })
  WEBHOOK_SECRET?: string;

  @IsOptional()
  @IsString()
  @MinLength(32, { message: 'JWT_SECRET must be at least 32 characters' })
  JWT_SECRET?: string;

  @Matches(/^[A-Za-z0-9:_-]{1,64}$/, { message: 'QUEUE_PREFIX must be 1-64 characters of A-Z a-z 0-9 : _ -' })
  QUEUE_PREFIX = 'pacs';

  @Transform(toInteger)
  @IsInt()
  @Min(1)
  JWT_TTL = 3600;

  @Transform(toInteger)
  @IsInt()
  @Min(1)
  JWT_REFRESH_TTL = 20160;

  @Transform(toInteger)
  @IsInt()
  @Min(1)
  VIEWER_TOKEN_TTL = 600;

  /**
   * Study UIDs a viewer token (or session) may name in a minute that it cannot read (unknown, or
   * another unit's or clinic's); past it, every request of that credential is refused until the
   * minute is over. A viewer names only what it was given, so refusals are rare in real use.
   */
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  VIEWER_REFUSED_UIDS_PER_MINUTE = 30;

  /**
   * off (default), a hop count, or a comma-separated list of proxy addresses/CIDRs. Not "trust
   * every hop": a client's own X-Forwarded-For would then set its address, past the login limit.
   */
  @ValidateBy({
    name: 'isTrustProxy',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && parseTrustProxy(value) !== null,
      defaultMessage: () => 'TRUST_PROXY must be off, a hop count or a list of proxy addresses',
    },
  })
  TRUST_PROXY = 'off';

  /**
   * Browser origins allowed to call the API with credentials, comma-separated
   * (`https://app.clinic.example,https://admin.clinic.example`). Empty: same-origin only.
   */
  @Matches(CORS_ORIGINS_PATTERN, {
    message: 'CORS_ORIGINS must be a comma-separated list of origins like https://app.example.com (no path, no *)',
  })
  CORS_ORIGINS = '';

  @Transform(toBoolean)
  @IsBoolean()
  MIGRATIONS_RUN = true;

  /**
   * Milliseconds a statement of the service may run before PostgreSQL cancels it (0: no limit); a
   * request whose statement is cancelled answers 503. Without it, a count whose client had given up
   * kept a connection busy for minutes. Migrations run without it.
   */
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  DATABASE_STATEMENT_TIMEOUT = 30_000;

  /**
   * PostgreSQL's work_mem on every connection of the service, in MB (0: the server's own, 4 MB by
   * default). A search's candidates are collected in a bitmap of that size: past it the bitmap
   * keeps whole pages, and every row on them is tested again, the search terms recomputed for
   * each. Counting "a san" in a 600,000-study clinic took 3,986 ms with 4 MB, 206-216 ms with 32 MB
   * (at 1,000,000 studies). It bounds each sort or bitmap of a statement, not the connection.
   */
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  @Max(2048)
  DATABASE_WORK_MEM_MB = 32;

  @Transform(toBoolean)
  @IsBoolean()
  COOKIE_SECURE = false;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL = 'info';

  /**
   * Bearer token for GET /metrics (Prometheus). Empty (default): /metrics is not served (404).
   */
  @Matches(/^([A-Za-z0-9._~+/=-]{16,})?$/, {
    message: 'METRICS_TOKEN must be empty or at least 16 characters of A-Z a-z 0-9 . _ ~ + / = -',
  })
  METRICS_TOKEN = '';

  /** How often the worker reconciles Orthanc's change feed, in seconds (0 disables it). */
  @Transform(toInteger)
  @IsInt()
  @Min(0)
  RECONCILE_INTERVAL = 60;

  /** Jobs a worker process runs at once, per queue (study, index, report-filing). */
  @Transform(toInteger)
  @IsInt()
  @Min(1)
  @Max(64)
  WORKER_CONCURRENCY = 2;
}

export type AppConfig = Readonly<
  Omit<EnvironmentVariables, 'WEBHOOK_SECRET' | 'JWT_SECRET'> & {
    WEBHOOK_SECRET: string;
    JWT_SECRET: string;
    trustProxy: false | number | string[];
  }
>;

export class ConfigError extends Error {}

/**
 * The secrets from the environment; outside production, those missing come from the installation's
 * own generated file (never from the source: a secret anyone can read in the repository would let
 * anyone sign a super admin's token).
 */
function secretsOf(
  parsed: EnvironmentVariables,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): { JWT_SECRET: string; WEBHOOK_SECRET: string } {
  if (parsed.JWT_SECRET && parsed.WEBHOOK_SECRET) {
    return { JWT_SECRET: parsed.JWT_SECRET, WEBHOOK_SECRET: parsed.WEBHOOK_SECRET };
  }
  let local: LocalSecrets;
  try {
    local = loadOrCreateLocalSecrets(localSecretsFile(env), log);
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  ${(error as Error).message}`);
  }
  return {
    JWT_SECRET: parsed.JWT_SECRET ?? local.JWT_SECRET,
    WEBHOOK_SECRET: parsed.WEBHOOK_SECRET ?? local.WEBHOOK_SECRET,
  };
}

/** Never printed, even when refused: a secret too short may still be a real one. */
const SECRET_VARIABLES = new Set(['JWT_SECRET', 'WEBHOOK_SECRET', 'METRICS_TOKEN', 'IMGSRV_PASSWORD']);

/** A refused value as the error shows it (stderr, a container's log): a secret by its length, a URL without its password. */
function shown(name: string, value: string): string {
  if (SECRET_VARIABLES.has(name)) return `(${value.length} characters, not shown)`;
  // Up to the last '@': a password written unencoded may hold '/' or '@' itself.
  return JSON.stringify(value.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:).*@/i, '$1(not shown)@'));
}

/**
 * Reads and validates the environment once. Throws a ConfigError whose message names every bad
 * variable, one per line, so the process can stop with a clear message.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  log: (line: string) => void = (line) => console.warn(line),
): AppConfig {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(new EnvironmentVariables())) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  for (const key of ['WEBHOOK_SECRET', 'JWT_SECRET']) {
    if (env[key]) raw[key] = env[key] as string;
  }
  const parsed = plainToInstance(EnvironmentVariables, raw, { exposeDefaultValues: true });
  const problems = validateSync(parsed, { skipMissingProperties: false }).flatMap((error) =>
    // Text where a number belongs fails the range checks too: that it is no number is the one thing to say.
    (error.constraints?.isInt ? [error.constraints.isInt] : Object.values(error.constraints ?? {})).map(
      (message) => `${error.property}=${shown(error.property, raw[error.property] ?? '')}: ${message}`,
    ),
  );
  if (parsed.NODE_ENV === 'production') {
    if (!parsed.JWT_SECRET) problems.push('JWT_SECRET is required when NODE_ENV=production');
    if (!parsed.WEBHOOK_SECRET) problems.push('WEBHOOK_SECRET is required when NODE_ENV=production');
  }
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  return Object.freeze({
    ...parsed,
    ...secretsOf(parsed, env, log),
    trustProxy: parseTrustProxy(parsed.TRUST_PROXY) ?? false,
  });
}
