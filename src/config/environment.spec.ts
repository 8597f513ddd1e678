import { spawn } from 'child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { ConfigError, loadConfig } from './environment';

const LOCAL_SECRETS_MODULE = join(__dirname, 'local-secrets.ts');

describe('loadConfig', () => {
  let dir: string;
  let file: string;
  let lines: string[];
  // Every call names its own secrets file: a test never writes the project's .local/.
  const load = (env: NodeJS.ProcessEnv = {}) => loadConfig({ LOCAL_SECRETS_FILE: file, ...env }, (line) => lines.push(line));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'pacs-secrets-'));
    file = join(dir, 'state', 'secrets.json');
    lines = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('has defaults that work on a machine with local PostgreSQL and Redis', () => {
    const config = load();
    expect(config).toMatchObject({
      PORT: 3000,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/pacs',
      REDIS_URL: 'redis://127.0.0.1:6379',
      IMGSRV_URL: 'http://127.0.0.1:8042',
      JWT_TTL: 3600,
      JWT_REFRESH_TTL: 20160,
      VIEWER_TOKEN_TTL: 600,
      MIGRATIONS_RUN: true,
      DATABASE_STATEMENT_TIMEOUT: 30_000,
      DATABASE_WORK_MEM_MB: 32,
      trustProxy: false,
      HOST: '0.0.0.0',
    });
  });

  it('outside production, generates random secrets once, keeps them in a 0600 file and says so in one line', () => {
    const first = load();
    expect(first.JWT_SECRET).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(first.WEBHOOK_SECRET).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(lines).toEqual([expect.stringContaining(`generated random ones for this installation in ${file}`)]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      JWT_SECRET: first.JWT_SECRET,
      WEBHOOK_SECRET: first.WEBHOOK_SECRET,
    });
    const second = load();
    expect([second.JWT_SECRET, second.WEBHOOK_SECRET]).toEqual([first.JWT_SECRET, first.WEBHOOK_SECRET]);
    expect(lines).toHaveLength(1);
    expect(readdirSync(join(dir, 'state'))).toEqual(['secrets.json']);
  });

  it('never uses a secret written in the source: two installations get different secrets', () => {
    const one = load();
    file = join(dir, 'other.json');
    const other = load();
    expect(other.JWT_SECRET).not.toBe(one.JWT_SECRET);
    expect(other.WEBHOOK_SECRET).not.toBe(one.WEBHOOK_SECRET);
  });

  it('takes secrets set in the environment over the file, and writes no file when both are set', () => {
    const config = load({ JWT_SECRET: 'j'.repeat(32), WEBHOOK_SECRET: 'w'.repeat(16) });
    expect([config.JWT_SECRET, config.WEBHOOK_SECRET]).toEqual(['j'.repeat(32), 'w'.repeat(16)]);
    expect(() => statSync(file)).toThrow(/ENOENT/);
    expect(lines).toEqual([]);
  });

  it('refuses a secrets file that holds no usable secrets, naming it', () => {
    load();
    writeFileSync(file, '{"JWT_SECRET":"short"}');
    expect(() => load()).toThrow(ConfigError);
    expect(() => load()).toThrow(`${file} does not hold a JWT_SECRET (32+ characters) and a WEBHOOK_SECRET (16+)`);
  });

  it('gives processes started together one set of secrets (written under a temporary name, then linked)', async () => {
    const script = `require('ts-node').register({ transpileOnly: true });
      const { loadOrCreateLocalSecrets } = require(${JSON.stringify(LOCAL_SECRETS_MODULE)});
      const config = loadOrCreateLocalSecrets(${JSON.stringify(file)}, () => {});
      process.stdout.write(config.JWT_SECRET + ' ' + config.WEBHOOK_SECRET);`;
    const run = () =>
      new Promise<string>((resolve, reject) => {
        const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (chunk) => (out += chunk));
        child.on('error', reject);
        child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`exit ${code}`))));
      });
    const answers = await Promise.all(Array.from({ length: 6 }, run));
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).toBe(
      `${JSON.parse(readFileSync(file, 'utf8')).JWT_SECRET} ${JSON.parse(readFileSync(file, 'utf8')).WEBHOOK_SECRET}`,
    );
    expect(readdirSync(join(dir, 'state'))).toEqual(['secrets.json']);
  }, 60_000);

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      load({ PORT: 'eighty', REDIS_URL: 'localhost', JWT_TTL: '-1' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/PORT="eighty"/);
    expect(message).toMatch(/REDIS_URL="localhost"/);
    expect(message).toMatch(/JWT_TTL="-1"/);
  });

  // Number() read a blank PORT as 0 (a random port), "0x50" as 80 and "1e3" as 1000.
  it.each([
    ['PORT', ' '],
    ['PORT', '0x50'],
    ['JWT_TTL', '1e3'],
    ['VIEWER_TOKEN_TTL', '600.0'],
    ['WORKER_CONCURRENCY', '+2'],
  ])('refuses %s=%j: a number is written in decimal digits', (name, value) => {
    expect(() => load({ [name]: value })).toThrow(`${name}=${JSON.stringify(value)}: ${name} must be an integer number`);
  });

  it('reads a number written with spaces around it', () => {
    expect(load({ PORT: ' 8080 ', JWT_TTL: '60' })).toMatchObject({ PORT: 8080, JWT_TTL: 60 });
  });

  it('never prints a secret in its message: a secret by its length, a URL without its password', () => {
    const env = {
      JWT_SECRET: 'short-but-real-secret',
      WEBHOOK_SECRET: 'tiny-secret',
      METRICS_TOKEN: 'a token',
      DATABASE_URL: 'mysql://pacs:db/p@ss-123@db/pacs',
      REDIS_URL: 'http://:redis-pass-456@redis:6379',
    };
    const message = (() => {
      try {
        load(env);
      } catch (error) {
        return (error as Error).message;
      }
      return '';
    })();
    expect(message).toContain('\n  JWT_SECRET=(21 characters, not shown): JWT_SECRET must be at least 32 characters');
    expect(message).toContain('\n  WEBHOOK_SECRET=(11 characters, not shown): WEBHOOK_SECRET must be at least 16 characters');
    expect(message).toContain('\n  METRICS_TOKEN=(7 characters, not shown): METRICS_TOKEN must be empty or at least 16');
    expect(message).toContain('\n  DATABASE_URL="mysql://pacs:(not shown)@db/pacs": DATABASE_URL must be a postgres:// URL');
    expect(message).toContain('\n  REDIS_URL="http://:(not shown)@redis:6379": REDIS_URL must be a redis:// URL');
    for (const secret of Object.values(env).slice(0, 3).concat('db/p@ss-123', 'p@ss', 'redis-pass-456')) {
      expect(message).not.toContain(secret);
    }
  });

  it('says of a value that is not a number only that, not that it is out of range', () => {
    expect(() => load({ PORT: 'eighty', JWT_TTL: '-1' })).toThrow(
      new ConfigError(
        'Invalid configuration:\n  PORT="eighty": PORT must be an integer number\n  JWT_TTL="-1": JWT_TTL must not be less than 1',
      ),
    );
  });

  it('requires JWT_SECRET and WEBHOOK_SECRET in production', () => {
    expect(() => load({ NODE_ENV: 'production' })).toThrow(/JWT_SECRET is required[\s\S]*WEBHOOK_SECRET is required/);
    expect(() => statSync(file)).toThrow(/ENOENT/);
    expect(() => load({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32), WEBHOOK_SECRET: 'y'.repeat(16) })).not.toThrow();
  });

  it('reads HOST, and refuses one that is not an address or a host name', () => {
    expect(load({ HOST: '127.0.0.1' }).HOST).toBe('127.0.0.1');
    expect(load({ HOST: '::' }).HOST).toBe('::');
    expect(() => load({ HOST: 'http://x/' })).toThrow(/HOST="http:\/\/x\/": HOST must be an IP address or a host name/);
  });

  it.each([
    ['off', false],
    ['1', 1],
    ['10.0.0.1, 10.0.0.2', ['10.0.0.1', '10.0.0.2']],
  ])('reads TRUST_PROXY=%s', (value, expected) => {
    expect(load({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it('reads TRUST_PROXY as addresses and CIDR ranges of both families', () => {
    expect(load({ TRUST_PROXY: '10.0.0.0/8,::1, fd00::/64' }).trustProxy).toEqual(['10.0.0.0/8', '::1', 'fd00::/64']);
  });

  // Before: accepted here, then the API died at start on Fastify's "invalid IP address: abc" (the
  // worker ran on), or read "1,2" as the addresses 0.0.0.1 and 0.0.0.2.
  it.each(['abc', '1,2', '10.0.0.1 10.0.0.2', '10.0.0.0/33', '::1/129', '10.0.0.1,', 'fe80::1%eth0'])(
    'refuses TRUST_PROXY=%s, naming it, at configuration time',
    (value) => {
      expect(() => load({ TRUST_PROXY: value })).toThrow(
        `TRUST_PROXY=${JSON.stringify(value)}: TRUST_PROXY must be off, a hop count or a list of proxy addresses`,
      );
    },
  );

  it('refuses TRUST_PROXY=true: a client would set its own address with X-Forwarded-For', () => {
    expect(() => load({ TRUST_PROXY: 'true' })).toThrow(
      /TRUST_PROXY="true": TRUST_PROXY must be off, a hop count or a list of proxy addresses/,
    );
  });

  it("reads DATABASE_WORK_MEM_MB in MB, 0 for the server's own, and refuses anything else", () => {
    expect(load({}).DATABASE_WORK_MEM_MB).toBe(32);
    expect(load({ DATABASE_WORK_MEM_MB: '0' }).DATABASE_WORK_MEM_MB).toBe(0);
    expect(load({ DATABASE_WORK_MEM_MB: '64' }).DATABASE_WORK_MEM_MB).toBe(64);
    expect(() => load({ DATABASE_WORK_MEM_MB: '32MB' })).toThrow(/DATABASE_WORK_MEM_MB="32MB"/);
    expect(() => load({ DATABASE_WORK_MEM_MB: '4096' })).toThrow(/DATABASE_WORK_MEM_MB="4096"/);
  });

  it('reads DATABASE_STATEMENT_TIMEOUT in milliseconds, 0 for none, and refuses anything else', () => {
    expect(load({ DATABASE_STATEMENT_TIMEOUT: '5000' }).DATABASE_STATEMENT_TIMEOUT).toBe(5000);
    expect(load({ DATABASE_STATEMENT_TIMEOUT: '0' }).DATABASE_STATEMENT_TIMEOUT).toBe(0);
    expect(() => load({ DATABASE_STATEMENT_TIMEOUT: '-1' })).toThrow(/DATABASE_STATEMENT_TIMEOUT="-1"/);
    expect(() => load({ DATABASE_STATEMENT_TIMEOUT: '30s' })).toThrow(/DATABASE_STATEMENT_TIMEOUT="30s"/);
  });

  it('reads MIGRATIONS_RUN=false as false', () => {
    expect(load({ MIGRATIONS_RUN: 'false' }).MIGRATIONS_RUN).toBe(false);
  });
});
