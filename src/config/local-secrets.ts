import { randomBytes } from 'crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'fs';
import { dirname, join, resolve } from 'path';

/** The secrets a development installation generates for itself (never in git: `.local/` is ignored). */
export interface LocalSecrets {
  JWT_SECRET: string;
  WEBHOOK_SECRET: string;
}

export class LocalSecretsError extends Error {}

/** The installation's root: the nearest folder above this file (src/ or dist/src/) with a package.json. */
function installationRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) return process.cwd();
    dir = parent;
  }
  return dir;
}

/**
 * Where this installation keeps its generated secrets: `LOCAL_SECRETS_FILE` when set, else
 * `.local/secrets.json` in the project, so the API, the worker and the CLI of one checkout find the
 * same file whatever their working directory.
 */
export function localSecretsFile(env: NodeJS.ProcessEnv): string {
  return env.LOCAL_SECRETS_FILE ? resolve(env.LOCAL_SECRETS_FILE) : join(installationRoot(), '.local', 'secrets.json');
}

function readSecrets(file: string): LocalSecrets | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  let parsed: Partial<LocalSecrets>;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = {};
  }
  const { JWT_SECRET, WEBHOOK_SECRET } = parsed ?? {};
  if (
    typeof JWT_SECRET !== 'string' ||
    JWT_SECRET.length < 32 ||
    typeof WEBHOOK_SECRET !== 'string' ||
    WEBHOOK_SECRET.length < 16
  ) {
    throw new LocalSecretsError(
      `${file} does not hold a JWT_SECRET (32+ characters) and a WEBHOOK_SECRET (16+): fix or delete it.`,
    );
  }
  return { JWT_SECRET, WEBHOOK_SECRET };
}

/**
 * The secrets kept in `file`, generated on the first call of the installation. The file is written
 * whole under a temporary name (mode 0600) and then hard-linked to its name, which fails when
 * another process (the worker started beside the API) got there first: both then use the one that
 * won, never a half-written file. `log` is told once, when the secrets are generated.
 */
export function loadOrCreateLocalSecrets(file: string, log: (line: string) => void): LocalSecrets {
  const existing = readSecrets(file);
  if (existing) return existing;
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const secrets: LocalSecrets = {
    JWT_SECRET: randomBytes(32).toString('base64url'),
    WEBHOOK_SECRET: randomBytes(24).toString('base64url'),
  };
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temporary, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return readSecrets(file)!;
  } finally {
    unlinkSync(temporary);
  }
  log(
    `JWT_SECRET and WEBHOOK_SECRET were not set: generated random ones for this installation in ${file} ` +
      '(mode 0600; give Orthanc its WEBHOOK_SECRET; set both in the environment for production).',
  );
  return secrets;
}
