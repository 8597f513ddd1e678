import { readFileSync } from 'fs';
import { join } from 'path';

const compose = readFileSync(join(__dirname, '..', '..', 'docker', 'docker-compose.yml'), 'utf8');
const envExample = readFileSync(join(__dirname, '..', '..', 'docker', '.env.example'), 'utf8');

describe("the compose stack's Redis", () => {
  const redis = compose.split(/^(?=  [a-z][\w-]*:\s*$)/m).find((block) => /^  redis:/.test(block)) ?? '';

  it('requires the password from the secrets (no default: compose stops without it)', () => {
    expect(redis).toMatch(/"--requirepass", "\$\{REDIS_PASSWORD:\?set REDIS_PASSWORD\}"/);
    expect(redis).toMatch(/REDISCLI_AUTH: \$\{REDIS_PASSWORD:\?set REDIS_PASSWORD\}/);
    expect(envExample).toMatch(/^REDIS_PASSWORD=$/m);
  });

  it('is reached by the API and the worker with that password', () => {
    expect(compose).toMatch(/^ {2}REDIS_URL: redis:\/\/:\$\{REDIS_PASSWORD:\?set REDIS_PASSWORD\}@redis:6379$/m);
    expect(compose).not.toMatch(/REDIS_URL: redis:\/\/redis:/);
  });
});
