import { readdirSync, readFileSync, statSync } from 'fs';
import { join, relative } from 'path';
import { DICOM_NETWORK_ENV } from '../../scripts/dicom-network-env';

const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Every .ts/.js file under `dir` (relative to the repository), without node_modules and builds. */
function sources(dir: string): string[] {
  const found: string[] = [];
  const walk = (path: string): void => {
    for (const name of readdirSync(path)) {
      if (['node_modules', 'dist', 'results'].includes(name)) continue;
      const full = join(path, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (/\.(ts|js)$/.test(name) && !name.endsWith('.d.ts')) found.push(relative(ROOT, full));
    }
  };
  walk(join(ROOT, dir));
  return found;
}

describe('every DCMTK process we start (Orthanc, storescu) runs with TCP_NODELAY=1', () => {
  it('the shared environment sets it', () => {
    expect(DICOM_NETWORK_ENV).toEqual({ TCP_NODELAY: '1' });
  });

  it('the Orthanc image', () => {
    expect(read('docker/orthanc/Dockerfile')).toMatch(/^ENV TCP_NODELAY=1$/m);
  });

  it("the compose file's Orthanc", () => {
    // Each service is the block from `  <name>:` to the next line indented by two spaces or less.
    const services = read('docker/docker-compose.yml').split(/^(?=  [a-z][\w-]*:\s*$)/m);
    const orthancs = services.filter(
      (block) => /^  orthanc[\w-]*:/.test(block) && /image: .*orthanc|build: \.\/orthanc/.test(block),
    );
    expect(orthancs.length).toBeGreaterThan(0);
    for (const block of orthancs) expect(block).toMatch(/^ {6}TCP_NODELAY: "1"$/m);
  });

  it("the tests' and benchmarks' Orthanc and storescu take it from the shared module", () => {
    expect(read('scripts/stack/orthanc.ts')).toMatch(/env: \{\s*\.\.\.process\.env,\s*\.\.\.DICOM_NETWORK_ENV,/);
    expect(read('scripts/stack/dicom.ts')).toMatch(/const env = \{ \.\.\.process\.env, \.\.\.DICOM_NETWORK_ENV,/);
    expect(read('scripts/stack/dicom.ts')).toMatch(/execFile\(STORESCU, args, \{ env,/);
  });

  it('no other file starts Orthanc or storescu without it', () => {
    const starts =
      /\b(spawn|spawnSync|execFile|execFileSync|exec|execSync)\(\s*(['"`][^'"`]*(storescu|Orthanc)\b|ORTHANC_BIN|STORESCU)/;
    const offenders = ['src', 'test', 'bench', 'scripts']
      .flatMap(sources)
      .filter((file) => starts.test(read(file)) && !read(file).includes('DICOM_NETWORK_ENV'));
    expect(offenders).toEqual([]);
  });
});
