import { readdirSync, readFileSync, statSync } from 'fs';
import { join, relative } from 'path';

const ROOT = join(__dirname, '..', '..');
const SKIP = new Set(['node_modules', 'dist', 'results', 'test-artifacts']);

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/**
 * CI, tests, benchmarks and scripts stop only what they started, by its pid: killing by name
 * (`pkill -x Orthanc`) also ends an operator's Orthanc or another run's.
 */
describe('processes are stopped by their pid, never by name', () => {
  const KILL_BY_NAME = /\b(pkill|killall)\b|\bkill\s+(-\w+\s+)*\$\(\s*pgrep\b/;

  it.each(['.ci', 'test', 'bench', 'scripts', 'docker'])('in %s/', (folder) => {
    const offenders = filesUnder(join(ROOT, folder))
      .filter((file) => KILL_BY_NAME.test(readFileSync(file, 'utf8')))
      .map((file) => relative(ROOT, file));
    expect(offenders).toEqual([]);
  });
});
