#!/usr/bin/env node
// `npm start`: the whole service (API and one worker) in one terminal, for a first try.
// In production run `npm run start:prod` and `npm run start:worker:prod` as separate processes.
const { spawn, spawnSync } = require('child_process');
const { existsSync } = require('fs');
const { join } = require('path');

const root = join(__dirname, '..');
if (!existsSync(join(root, 'dist/src/main.js'))) {
  const build = spawnSync('npx', ['nest', 'build'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const { API_NODE_FLAGS } = require('./api-node-flags');
// A first try listens on this machine only; HOST=0.0.0.0 (or an address) opens it to the network.
const env = { ...process.env, HOST: process.env.HOST || '127.0.0.1' };

const children = [[...API_NODE_FLAGS, join(root, 'dist/src/main.js')], [join(root, 'dist/src/worker.js')]].map((args) =>
  spawn(process.execPath, args, { cwd: root, stdio: 'inherit', env }),
);
let stopping = false;
const stop = (signal) => {
  if (stopping) return;
  stopping = true;
  for (const child of children) if (child.exitCode === null) child.kill(signal);
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
for (const child of children) {
  child.on('exit', (code) => {
    stop('SIGTERM');
    process.exitCode = code ?? 1;
  });
}
