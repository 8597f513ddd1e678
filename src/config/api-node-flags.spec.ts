import { readFileSync } from 'fs';
import { join } from 'path';
import { API_NODE_FLAGS } from '../../scripts/api-node-flags';

const ROOT = join(__dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

describe('the API process is started with the same node flags everywhere', () => {
  it('has flags to apply', () => {
    expect(API_NODE_FLAGS).toEqual(expect.arrayContaining([expect.stringMatching(/^--max-old-space-size=\d+$/)]));
  });

  it('npm run start:prod', () => {
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;
    expect(scripts['start:prod']).toBe(`node ${API_NODE_FLAGS.join(' ')} dist/src/main.js`);
  });

  it('the Docker image and the compose file', () => {
    const argv = JSON.stringify(['node', ...API_NODE_FLAGS, 'dist/src/main.js']).replace(/,/g, ', ');
    expect(read('docker/Dockerfile')).toContain(`CMD ${argv}`);
    expect(read('docker/docker-compose.yml')).toContain(`command: ${argv}`);
  });

  it('npm start (scripts/start-all.js) reads them from the same module', () => {
    expect(read('scripts/start-all.js')).toMatch(/\[\.\.\.API_NODE_FLAGS, join\(root, 'dist\/src\/main\.js'\)\]/);
  });
});
