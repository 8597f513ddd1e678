#!/usr/bin/env node
/**
 * Installs the OHIF viewer's prebuilt static site (the `dist/` folder that the npm package
 * @ohif/app ships) into viewer/dist, for nginx to serve, with this project's app-config.js.
 *
 * The package is fetched with `npm pack` (the registry tarball alone: none of its ~2,000 build
 * dependencies are needed to serve a built site) and checked against the pinned integrity.
 * Idempotent: a matching viewer/dist is kept and only this project's files are refreshed:
 * app-config.js and this project's own pages: the sign-in page (viewer/login, served at /login), the
 * report page (viewer/reports, at /reports) and the share links' page (viewer/share, at /s/<token>).
 *
 *   node viewer/install.js            install or refresh
 *   node viewer/install.js --check    exit 1 unless the pinned version is installed
 */
'use strict';
const { execFileSync } = require('child_process');
const { createHash } = require('crypto');
const fs = require('fs');
const path = require('path');

const PACKAGE = '@ohif/app';
const VERSION = '3.13.2';
const INTEGRITY =
  'sha512-WZdxmpmG7rqFgW9ZJLcbgr3XCtLi1KDNPoMaeY5PPe6j4G4fjEjjkycZM6C6Zk2F87BKxFfpq+jd5xXZB9E8EA==';

const here = __dirname;
const target = path.join(here, 'dist');
const stamp = path.join(target, '.ohif-package');
const wanted = `${PACKAGE}@${VERSION} ${INTEGRITY}`;

function installed() {
  try {
    return fs.readFileSync(stamp, 'utf8').trim() === wanted && fs.existsSync(path.join(target, 'index.html'));
  } catch {
    return false;
  }
}

function copyConfig() {
  // A new file, never a write into the old one: a viewer/dist copied with hard links (one per
  // worktree) shares that file with the others.
  fs.rmSync(path.join(target, 'app-config.js'), { force: true });
  fs.copyFileSync(path.join(here, 'app-config.js'), path.join(target, 'app-config.js'));
  for (const page of ['login', 'reports', 'share']) {
    fs.rmSync(path.join(target, page), { recursive: true, force: true });
    fs.cpSync(path.join(here, page), path.join(target, page), { recursive: true });
  }
}

function install() {
  // Beside the target, so that the final rename never crosses file systems.
  const work = fs.mkdtempSync(path.join(here, '.install-'));
  try {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const out = execFileSync(npm, ['pack', `${PACKAGE}@${VERSION}`, '--pack-destination', work, '--json', '--silent'], {
      cwd: work,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [packed] = JSON.parse(out);
    const tarball = path.join(work, packed.filename);
    const actual = `sha512-${createHash('sha512').update(fs.readFileSync(tarball)).digest('base64')}`;
    if (actual !== INTEGRITY) {
      throw new Error(`${PACKAGE}@${VERSION}: integrity mismatch\n  expected ${INTEGRITY}\n  got      ${actual}`);
    }
    execFileSync('tar', ['-xzf', tarball, '-C', work, 'package/dist'], { stdio: 'inherit' });
    fs.rmSync(target, { recursive: true, force: true });
    fs.renameSync(path.join(work, 'package', 'dist'), target);
    fs.writeFileSync(stamp, `${wanted}\n`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv.includes('--check')) {
  if (!installed()) {
    console.error(`${PACKAGE}@${VERSION} is not installed in ${target}: run \`node viewer/install.js\``);
    process.exit(1);
  }
  process.exit(0);
}

const started = Date.now();
if (!installed()) install();
copyConfig();
console.log(`${PACKAGE}@${VERSION} ready in ${path.relative(process.cwd(), target) || target} (${Date.now() - started} ms)`);
